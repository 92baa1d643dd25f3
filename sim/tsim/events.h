// tsim's trace manager: turns the design's trace ports (hw/core/trace_port.py) and the
// AXI write beats the harness accepts into the JSON-lines events of sim/trace/schema.py.
// Included by harness.cpp only when the design was generated with trace ports (TSIM_EVENTS).
//
// Scratchpad rows: a write port may write a row in pieces (one enable per piece); the row is one
// event when every piece has landed. A port of an interleaved scratchpad writes several
// consecutive whole rows (one enable each), each an event. DRAM elements: bytes written by W beats are counted per
// element of the OUT type; an element is one event when all its bytes have arrived. Both carry
// the index of the instruction the owning stage is executing at that cycle (its head, which
// completes only after its last write, docs/isa.md §3), except the rows of the compute stage's
// detached ALU instruction, which carry its own index (alu_insn; hw/core/compute.py).
//
// Modes, stages, states, memories and event kinds, and their names, come from the generated
// avta_harness.h (sim/tsim/harness_header.py).
#pragma once

#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "avta_harness.h"

#define TRACE(member) trace___05F##member

namespace tsim_events {

using namespace avta_harness;

// Verilator represents a port as an unsigned integer of 8..64 bits or as VlWide<N> words.
template <typename T> inline uint64_t value(const T& v) { return uint64_t(v); }
template <std::size_t N> inline uint64_t value(const VlWide<N>& v) {
    return uint64_t(v[0]) | (N > 1 ? uint64_t(v[1]) << 32 : 0);
}
template <typename T> inline void bytes(const T& v, uint8_t* out, std::size_t n) {
    uint64_t x = uint64_t(v);
    for (std::size_t i = 0; i < n; ++i) out[i] = uint8_t(x >> (8 * i));
}
template <std::size_t N> inline void bytes(const VlWide<N>& v, uint8_t* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = uint8_t(v[i / 4] >> (8 * (i % 4)));
}

struct Geometry {
    uint32_t row_bytes;   // bytes of one row
    uint32_t pieces;      // write enables of the port (1: whole rows only)
    uint32_t rows;        // rows one write writes (> 1: enable k writes row addr + k whole)
    uint32_t depth;       // rows of the scratchpad (a power of two: indices wrap)
};

struct Partial {
    std::vector<uint8_t> data;
    uint64_t landed = 0;  // enables seen so far
};

class Tracer {
  public:
    Tracer(FILE* out, int mode, const Geometry* geo, uint64_t out_origin, uint32_t out_elem)
        : out_(out), mode_(mode), out_origin_(out_origin), out_elem_(out_elem) {
        for (int m = 0; m < kMemoryCount; ++m) geo_[m] = geo[m];
        // No state seen yet: the first sample of each stage is a change.
        for (int s = 0; s < kStageCount; ++s) state_[s] = state_insn_[s] = ~0u;
    }
    ~Tracer() { std::fclose(out_); }

    // Called every cycle with the design's outputs settled, just before the rising edge.
    // The trace ports are named by stage and memory, so the X-macros of avta_harness.h spell
    // one statement per stage or memory.
    template <typename Top> void sample(Top* top, uint64_t cycle) {
#define SAMPLE_INSN(stage, name) insn_[stage] = uint32_t(top->TRACE(name##_insn));
        AVTA_TRACE_STAGES(SAMPLE_INSN)
#undef SAMPLE_INSN
        if (mode_ >= kModeArch) {
#define SAMPLE_ROW(mem, name) \
    row(mem, top->TRACE(name##_en), top->TRACE(name##_addr), top->TRACE(name##_data), cycle);
            AVTA_TRACED_MEMORIES(SAMPLE_ROW)
#undef SAMPLE_ROW
            // The detached ALU instruction's ACC rows carry its own index (trace_port.py).
            row(kMemoryAcc, top->TRACE(alu_acc_en), top->TRACE(alu_acc_addr),
                top->TRACE(alu_acc_data), cycle, uint32_t(top->TRACE(alu_insn)));
        }
        if (mode_ >= kModeFull) {
#define SAMPLE_STATE(stage, name) activity(stage, top->TRACE(name##_state), cycle);
            AVTA_TRACE_STAGES(SAMPLE_STATE)
#undef SAMPLE_STATE
        }
        // Retire last: a stage's final row write and its retire can share a cycle.
#define SAMPLE_RETIRE(stage, name) \
    if (top->TRACE(name##_retire)) retire(stage, uint32_t(top->TRACE(name##_retire_insn)), cycle);
        AVTA_TRACE_STAGES(SAMPLE_RETIRE)
#undef SAMPLE_RETIRE
    }

    // One DRAM byte written by a W beat sampled at ``cycle`` (the store stage's instruction
    // then is the one sampled in the same cycle).
    void dram_byte(const uint8_t* dram, uint64_t addr, uint64_t cycle) {
        if (mode_ < kModeArch || addr < out_origin_) return;
        uint64_t element = (addr - out_origin_) / out_elem_;
        uint32_t& count = dram_count_[element];
        if (++count < out_elem_) return;
        dram_count_.erase(element);
        uint64_t start = out_origin_ + element * out_elem_;
        std::fprintf(out_, "{\"kind\": \"%s\", \"stage\": \"%s\", \"insn\": %u, "
                           "\"address\": %llu, \"data\": \"", kKindName[kKindDram],
                     kStageName[kDramStage], insn_[kDramStage],
                     static_cast<unsigned long long>(start));
        hex(dram + start, out_elem_);
        std::fprintf(out_, "\", \"cycle\": %llu}\n", static_cast<unsigned long long>(cycle));
    }

  private:
    template <typename En, typename Addr, typename Data>
    void row(int mem, const En& en_sig, const Addr& addr_sig, const Data& data_sig,
             uint64_t cycle) {
        row(mem, en_sig, addr_sig, data_sig, cycle, insn_[kMemoryStage[mem]]);
    }

    // A row written for instruction ``insn``.
    template <typename En, typename Addr, typename Data>
    void row(int mem, const En& en_sig, const Addr& addr_sig, const Data& data_sig,
             uint64_t cycle, uint32_t insn) {
        uint64_t en = value(en_sig);
        if (!en) return;
        const Geometry& g = geo_[mem];
        uint32_t index = uint32_t(value(addr_sig));
        if (g.rows > 1) {
            // Consecutive whole rows (an interleaved scratchpad, hw/core/banks.py).
            buffer_.resize(std::size_t(g.row_bytes) * g.rows);
            bytes(data_sig, buffer_.data(), buffer_.size());
            for (uint32_t k = 0; k < g.rows; ++k)
                if ((en >> k) & 1)
                    emit_row(mem, (index + k) & (g.depth - 1), &buffer_[k * g.row_bytes], cycle,
                             insn);
            return;
        }
        buffer_.resize(g.row_bytes);
        bytes(data_sig, buffer_.data(), g.row_bytes);
        uint64_t all = g.pieces >= 64 ? ~uint64_t(0) : (uint64_t(1) << g.pieces) - 1;
        auto found = partial_[mem].find(index);
        if (en == all && found == partial_[mem].end()) {
            emit_row(mem, index, buffer_.data(), cycle, insn);
            return;
        }
        Partial& p = partial_[mem][index];
        if (p.data.empty()) p.data.assign(g.row_bytes, 0);
        uint32_t piece_bytes = g.row_bytes / g.pieces;
        for (uint32_t k = 0; k < g.pieces; ++k) {
            if (!((en >> k) & 1)) continue;
            std::memcpy(&p.data[k * piece_bytes], &buffer_[k * piece_bytes], piece_bytes);
        }
        p.landed |= en;
        if (p.landed == all) {
            emit_row(mem, index, p.data.data(), cycle, insn);
            partial_[mem].erase(index);
        }
    }

    void emit_row(int mem, uint32_t index, const uint8_t* data, uint64_t cycle, uint32_t insn) {
        int stage = kMemoryStage[mem];
        std::fprintf(out_, "{\"kind\": \"%s\", \"stage\": \"%s\", \"insn\": %u, "
                           "\"memory\": \"%s\", \"index\": %u, \"data\": \"",
                     kKindName[kKindSram], kStageName[stage], insn, kMemoryName[mem],
                     index);
        hex(data, geo_[mem].row_bytes);
        std::fprintf(out_, "\", \"cycle\": %llu}\n", static_cast<unsigned long long>(cycle));
    }

    void retire(int stage, uint32_t insn, uint64_t cycle) {
        std::fprintf(out_, "{\"kind\": \"%s\", \"stage\": \"%s\", \"insn\": %u, "
                           "\"cycle\": %llu}\n",
                     kKindName[kKindRetire], kStageName[stage], insn,
                     static_cast<unsigned long long>(cycle));
    }

    void activity(int stage, uint32_t state, uint64_t cycle) {
        if (state == state_[stage] && insn_[stage] == state_insn_[stage]) return;
        state_[stage] = state;
        state_insn_[stage] = insn_[stage];
        std::fprintf(out_, "{\"kind\": \"%s\", \"stage\": \"%s\", \"insn\": %u, "
                           "\"state\": \"%s\", \"cycle\": %llu}\n",
                     kKindName[kKindActivity], kStageName[stage], insn_[stage],
                     kStateName[state % kStateCount], static_cast<unsigned long long>(cycle));
    }

    void hex(const uint8_t* data, std::size_t n) {
        static const char digits[] = "0123456789abcdef";
        std::string text(2 * n, '0');
        for (std::size_t i = 0; i < n; ++i) {
            text[2 * i] = digits[data[i] >> 4];
            text[2 * i + 1] = digits[data[i] & 15];
        }
        std::fwrite(text.data(), 1, text.size(), out_);
    }

    FILE* out_;
    int mode_;
    Geometry geo_[kMemoryCount];
    uint64_t out_origin_;
    uint32_t out_elem_;
    uint32_t insn_[kStageCount] = {};
    uint32_t state_[kStageCount];
    uint32_t state_insn_[kStageCount];
    std::vector<uint8_t> buffer_;
    std::unordered_map<uint32_t, Partial> partial_[kMemoryCount];
    std::unordered_map<uint64_t, uint32_t> dram_count_;
};

}  // namespace tsim_events
