// tsim's activity recorder: per stage, how many cycles of each bin of the run it was busy,
// waiting on a token or idle (the compute stage's busy cycles split by what it executes), binned
// as the cycles are sampled, for sim/activity.py. Included by harness.cpp only when the
// design has activity ports (hw/core/activity_port.py, TSIM_ACTIVITY).
//
// Every cycle with the design's outputs settled, just before the rising edge, a cycle in which
// activity__running is high (one the CYCLES register counts) adds 1 to one column per lane of the
// current bin: IDLE and WAIT states to the lane's idle and wait columns (so those add up to the
// IDLE_x and STALL_x counters exactly), BUSY and HALT (the cycle an instruction starts) to busy,
// and for the compute lane to gemm, alu or other by activity__compute_kind.
//
// Bins are ``width`` cycles wide (a power of two); when the run reaches ``max_bins`` bins, pairs
// of bins are merged and the width doubles, so any run fits in max_bins bins and costs an add per
// lane per cycle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#define ACTIVITY(member) activity___05F##member

namespace tsim_activity {

// The columns of a bin, in the order of avta.sim.activity.COLUMNS.
enum Column {
    kLoadBusy, kLoadWait, kLoadIdle,
    kComputeGemm, kComputeAlu, kComputeOther, kComputeWait, kComputeIdle,
    kStoreBusy, kStoreWait, kStoreIdle,
    kColumns
};

// avta.hw.core.trace_port.StageState and avta.hw.core.activity_port.ComputeKind encodings.
constexpr uint32_t kStateIdle = 0, kStateWait = 1;
constexpr uint32_t kKindGemm = 1, kKindAlu = 2;

class Recorder {
  public:
    // ``width``: the first bins' cycles, a power of two; ``max_bins``: a power of two >= 2.
    Recorder(uint64_t width, uint32_t max_bins)
        : max_bins_(max_bins), counts_(uint64_t(max_bins) * kColumns, 0) {
        while ((uint64_t(1) << shift_) < width) ++shift_;
    }

    template <typename Top> void sample(Top* top) {
        if (!top->ACTIVITY(running)) return;
        uint64_t bin = cycles_ >> shift_;
        if (bin >= max_bins_) {
            merge();
            bin = cycles_ >> shift_;
        }
        uint64_t* row = &counts_[bin * kColumns];
        ++row[memory_column(kLoadBusy, top->ACTIVITY(load_state))];
        ++row[memory_column(kStoreBusy, top->ACTIVITY(store_state))];
        uint32_t state = top->ACTIVITY(compute_state);
        uint32_t kind = top->ACTIVITY(compute_kind);
        ++row[state == kStateIdle   ? kComputeIdle
              : state == kStateWait ? kComputeWait
              : kind == kKindGemm   ? kComputeGemm
              : kind == kKindAlu    ? kComputeAlu
                                    : kComputeOther];
        ++cycles_;
    }

    uint64_t cycles() const { return cycles_; }
    uint64_t width() const { return uint64_t(1) << shift_; }
    uint32_t bins() const { return uint32_t(cycles_ ? ((cycles_ - 1) >> shift_) + 1 : 0); }
    // The counts of the first bins(), bin after bin, kColumns per bin.
    const uint64_t* counts() const { return counts_.data(); }

  private:
    static int memory_column(int busy, uint32_t state) {
        return busy + (state == kStateIdle ? 2 : state == kStateWait ? 1 : 0);
    }

    void merge() {
        for (uint32_t b = 0; b < max_bins_ / 2; ++b)
            for (int c = 0; c < kColumns; ++c)
                counts_[b * kColumns + c] =
                    counts_[2 * b * kColumns + c] + counts_[(2 * b + 1) * kColumns + c];
        std::fill(counts_.begin() + uint64_t(max_bins_ / 2) * kColumns, counts_.end(), 0);
        ++shift_;
    }

    uint32_t max_bins_;
    int shift_ = 0;
    uint64_t cycles_ = 0;
    std::vector<uint64_t> counts_;
};

}  // namespace tsim_activity
