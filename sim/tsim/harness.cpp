// tsim harness: the Verilated accelerator top with an AXI4 subordinate memory over a DRAM image
// owned by Python, and an AXI4-Lite host. Loaded by sim/tsim/driver.py through ctypes.
//
// The top must have the ports of avta.hw.top: clk, rst, s_axil__* (AXI4-Lite subordinate,
// 32-bit) and m_axi__* (AXI4 manager, TSIM_DATA_BITS wide). Everything per cycle happens here; Python
// calls in only to set registers, run until finish/error/limit, and read registers back.
//
// Memory model knobs (all seeded, so a run is reproducible):
//   read latency   cycles from AR to the first R beat, uniform in [min, max]
//   outstanding    read bursts accepted at once (ARREADY low beyond that)
//   reorder        serve any ready burst, not only the oldest (bursts of one ID stay in order,
//                  as AXI requires)
//   backpressure   per-cycle probability (percent) of holding each READY/VALID low
// An access outside the DRAM image is answered SLVERR (docs/isa.md §3.5 error 9) and changes nothing.
//
// Register offsets, CTRL bits, response codes and the codes returned to Python come from the
// generated avta_harness.h (sim/tsim/harness_header.py).

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "avta_harness.h"
#include "verilated.h"
#include "Vvta_top.h"
#if defined(TSIM_TRACE_FST)
#include "verilated_fst_c.h"
#define TSIM_TRACE 1
using TraceFile = VerilatedFstC;
#elif defined(TSIM_TRACE_VCD)
#include "verilated_vcd_c.h"
#define TSIM_TRACE 1
using TraceFile = VerilatedVcdC;
#endif

#ifdef TSIM_EVENTS
#include "events.h"
#endif
#ifdef TSIM_ACTIVITY
#include "activity.h"
#endif  // TSIM_ACTIVITY

#ifndef TSIM_DATA_BITS
#error "TSIM_DATA_BITS must be defined (the AXI data width)"
#endif

// Verilator escapes the "__" of Amaranth's flattened port names as "___05F".
#define AXI(member) m_axi___05F##member
#define LITE(member) s_axil___05F##member

namespace {

using namespace avta_harness;

constexpr int kBeatBytes = TSIM_DATA_BITS / 8;
// An AXI4-Lite access that takes longer than this is a hang in the register file.
constexpr int kLiteTimeout = 1000;
// How often the host polls CTRL while a run is going.
constexpr int kPollInterval = 16;

// -- moving bus-width data between byte arrays and Verilator signals ---------------------------
inline void put(uint64_t& sig, const uint8_t* b) { std::memcpy(&sig, b, 8); }
inline void put(uint32_t& sig, const uint8_t* b) { std::memcpy(&sig, b, 4); }
template <std::size_t N> inline void put(VlWide<N>& sig, const uint8_t* b) {
    for (std::size_t i = 0; i < N; ++i) std::memcpy(&sig[i], b + 4 * i, 4);
}
inline void get(const uint64_t& sig, uint8_t* b) { std::memcpy(b, &sig, 8); }
inline void get(const uint32_t& sig, uint8_t* b) { std::memcpy(b, &sig, 4); }
template <std::size_t N> inline void get(const VlWide<N>& sig, uint8_t* b) {
    for (std::size_t i = 0; i < N; ++i) std::memcpy(b + 4 * i, &sig[i], 4);
}
inline uint64_t strobes(uint64_t s) { return s; }
template <std::size_t N> inline uint64_t strobes(const VlWide<N>& s) {
    uint64_t v = s[0];
    if (N > 1) v |= uint64_t(s[1]) << 32;
    return v;
}

struct Knobs {
    uint64_t seed;
    uint32_t read_latency_min, read_latency_max;
    uint32_t max_outstanding;
    uint32_t reorder;
    uint32_t backpressure_pct;
    uint32_t write_latency;
};

struct ReadBurst {
    uint32_t id, addr, len, beat;
    uint64_t ready_at;
};

struct WriteBurst {
    uint32_t id, addr, len, beat;
    bool error;
};

struct PendingB {
    uint32_t id, resp;
    uint64_t ready_at;
};

struct Tsim {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vvta_top> top;
#ifdef TSIM_TRACE
    std::unique_ptr<TraceFile> fst;
#endif
#ifdef TSIM_EVENTS
    std::unique_ptr<tsim_events::Tracer> events;   // while a trace is being written
#endif
#ifdef TSIM_ACTIVITY
    std::unique_ptr<tsim_activity::Recorder> activity;   // while a run's activity is recorded
#endif  // TSIM_ACTIVITY
    uint8_t* dram = nullptr;
    uint64_t dram_size = 0;
    Knobs knobs{1, 1, 1, 8, 0, 0, 1};
    std::mt19937_64 rng{1};
    uint64_t cycle = 0;
    std::deque<ReadBurst> reads;       // accepted, not yet fully answered
    int r_current = -1;                 // index in reads of the burst on R, or -1
    std::deque<WriteBurst> writes;     // accepted AW, waiting for W beats
    std::deque<PendingB> responses;    // write responses, in order
    bool b_presented = false;
    uint64_t bursts = 0;                // AR and AW handshakes since creation
    uint32_t waiting_stages = 0;        // after a deadlock: bit s set = stage s waits on a token

    bool chance(uint32_t pct) { return pct && (rng() % 100) < pct; }

    // Hold rst for a few cycles with the memory model empty, so nothing from before survives.
    void reset() {
        forget_transactions();
        top->rst = 1;
        for (int i = 0; i < 4; ++i) tick();
        top->rst = 0;
        forget_transactions();
        tick();
    }

    void forget_transactions() {
        reads.clear();
        writes.clear();
        responses.clear();
        r_current = -1;
        b_presented = false;
    }

    bool in_dram(uint64_t addr, uint64_t bytes) const {
        return addr + bytes <= dram_size;
    }

    // One clock cycle: drive the subordinate's outputs from the model, let the design react,
    // take the rising edge, then account the handshakes that happened at that edge.
    void tick() {
        drive_read_channels();
        drive_write_channels();
        top->clk = 0;
        top->eval();
#ifdef TSIM_TRACE
        if (fst) fst->dump(ctx->time());
#endif
        ctx->timeInc(1);
        // Handshakes are sampled just before the edge (the design's outputs are settled now).
        bool ar_fire = top->AXI(arvalid) && top->AXI(arready);
        bool r_fire = top->AXI(rvalid) && top->AXI(rready);
        bool aw_fire = top->AXI(awvalid) && top->AXI(awready);
        bool w_fire = top->AXI(wvalid) && top->AXI(wready);
        bool b_fire = top->AXI(bvalid) && top->AXI(bready);
        ReadBurst new_read{top->AXI(arid), top->AXI(araddr),
                           uint32_t(top->AXI(arlen)) + 1, 0, 0};
        WriteBurst new_write{top->AXI(awid), top->AXI(awaddr),
                             uint32_t(top->AXI(awlen)) + 1, 0, false};
        uint8_t wdata[kBeatBytes];
        get(top->AXI(wdata), wdata);
        uint64_t wstrb = strobes(top->AXI(wstrb));
#ifdef TSIM_EVENTS
        if (events) events->sample(top.get(), cycle);
#endif
#ifdef TSIM_ACTIVITY
        if (activity) activity->sample(top.get());
#endif  // TSIM_ACTIVITY

        top->clk = 1;
        top->eval();
#ifdef TSIM_TRACE
        if (fst) fst->dump(ctx->time());
#endif
        ctx->timeInc(1);
        ++cycle;

        if (ar_fire) {
            uint32_t span = knobs.read_latency_max - knobs.read_latency_min + 1;
            new_read.ready_at = cycle + knobs.read_latency_min + (span ? rng() % span : 0);
            reads.push_back(new_read);
        }
        if (r_fire) {
            ReadBurst& burst = reads[r_current];
            if (++burst.beat == burst.len) {
                reads.erase(reads.begin() + r_current);
                r_current = -1;
            }
        }
        if (aw_fire) writes.push_back(new_write);
        bursts += uint64_t(ar_fire) + uint64_t(aw_fire);
        if (w_fire) accept_write_beat(wdata, wstrb);
        if (b_fire) {
            responses.pop_front();
            b_presented = false;
        }
    }

    void drive_read_channels() {
        top->AXI(arready) = reads.size() < knobs.max_outstanding &&
                              !chance(knobs.backpressure_pct);
        if (r_current < 0) {
            // Choose a burst whose data is due: the oldest, or with reordering any burst that
            // is the oldest of its ID (AXI keeps beats of one ID in order).
            std::vector<int> candidates;
            for (int i = 0; i < int(reads.size()); ++i) {
                if (reads[i].ready_at > cycle) continue;
                bool oldest_of_id = true;
                for (int j = 0; j < i; ++j) oldest_of_id &= reads[j].id != reads[i].id;
                if (!oldest_of_id) continue;
                candidates.push_back(i);
                if (!knobs.reorder) break;
            }
            if (!candidates.empty() && !chance(knobs.backpressure_pct))
                r_current = candidates[knobs.reorder ? rng() % candidates.size() : 0];
        }
        top->AXI(rvalid) = r_current >= 0;
        if (r_current < 0) return;
        const ReadBurst& burst = reads[r_current];
        uint64_t addr = uint64_t(burst.addr) + uint64_t(burst.beat) * kBeatBytes;
        uint8_t beat[kBeatBytes] = {0};
        bool ok = in_dram(addr, kBeatBytes);
        if (ok) std::memcpy(beat, dram + addr, kBeatBytes);
        put(top->AXI(rdata), beat);
        top->AXI(rid) = burst.id;
        top->AXI(rresp) = ok ? kRespOkay : kRespSlverr;
        top->AXI(rlast) = burst.beat + 1 == burst.len;
    }

    void drive_write_channels() {
        top->AXI(awready) = !chance(knobs.backpressure_pct);
        // W is taken only for a burst whose address has arrived (a subordinate may wait).
        top->AXI(wready) = !writes.empty() && !chance(knobs.backpressure_pct);
        if (!b_presented && !responses.empty() && responses.front().ready_at <= cycle &&
            !chance(knobs.backpressure_pct))
            b_presented = true;
        top->AXI(bvalid) = b_presented;
        if (b_presented) {
            top->AXI(bid) = responses.front().id;
            top->AXI(bresp) = responses.front().resp;
        }
    }

    void accept_write_beat(const uint8_t* data, uint64_t strb) {
        WriteBurst& burst = writes.front();
        uint64_t addr = uint64_t(burst.addr) + uint64_t(burst.beat) * kBeatBytes;
        if (in_dram(addr, kBeatBytes)) {
            for (int i = 0; i < kBeatBytes; ++i)
                if ((strb >> i) & 1) dram[addr + i] = data[i];
#ifdef TSIM_EVENTS
            // The beat was sampled before the edge that ended cycle - 1.
            if (events)
                for (int i = 0; i < kBeatBytes; ++i)
                    if ((strb >> i) & 1) events->dram_byte(dram, addr + i, cycle - 1);
#endif
        } else if (strb) {
            burst.error = true;
        }
        if (++burst.beat == burst.len) {
            responses.push_back({burst.id, burst.error ? kRespSlverr : kRespOkay,
                                 cycle + knobs.write_latency});
            writes.pop_front();
        }
    }

    // -- AXI4-Lite host ---------------------------------------------------------------------------
    int lite_write(uint32_t addr, uint32_t value) {
        top->LITE(awaddr) = addr;
        top->LITE(awvalid) = 1;
        top->LITE(wdata) = value;
        top->LITE(wstrb) = 0xF;
        top->LITE(wvalid) = 1;
        top->LITE(bready) = 1;
        for (int i = 0; i < kLiteTimeout; ++i) {
            top->eval();
            bool aw = top->LITE(awvalid) && top->LITE(awready);
            bool w = top->LITE(wvalid) && top->LITE(wready);
            bool b = top->LITE(bvalid) && top->LITE(bready);
            uint32_t resp = top->LITE(bresp);
            tick();
            if (aw) top->LITE(awvalid) = 0;
            if (w) top->LITE(wvalid) = 0;
            if (b) {
                top->LITE(bready) = 0;
                return int(resp);
            }
        }
        return -1;
    }

    int lite_read(uint32_t addr, uint32_t* value) {
        top->LITE(araddr) = addr;
        top->LITE(arvalid) = 1;
        top->LITE(rready) = 1;
        for (int i = 0; i < kLiteTimeout; ++i) {
            top->eval();
            bool ar = top->LITE(arvalid) && top->LITE(arready);
            bool r = top->LITE(rvalid) && top->LITE(rready);
            uint32_t data = top->LITE(rdata), resp = top->LITE(rresp);
            tick();
            if (ar) top->LITE(arvalid) = 0;
            if (r) {
                top->LITE(rready) = 0;
                *value = data;
                return int(resp);
            }
        }
        return -1;
    }
};

}  // namespace

extern "C" {

void* tsim_create(const char* wave_path) {
    auto* sim = new Tsim;
    sim->ctx = std::make_unique<VerilatedContext>();
    sim->top = std::make_unique<Vvta_top>(sim->ctx.get());
#ifdef TSIM_TRACE
    if (wave_path && *wave_path) {
        sim->ctx->traceEverOn(true);
        sim->fst = std::make_unique<TraceFile>();
        sim->top->trace(sim->fst.get(), 99);
        sim->fst->open(wave_path);
    }
#else
    (void)wave_path;
#endif
    sim->reset();
    return sim;
}

// Reset the design and forget every transaction the memory model holds: after a run that hit the
// cycle limit the core may still be working, and a new launch would be ignored while it is busy.
// The model is made anew, so the scratchpads are zero as docs/isa.md §3 says they are after reset
// (a reset signal clears registers, not memories); with a waveform open it keeps the model and
// only pulses reset, so the waveform goes on.
void tsim_reset(void* handle) {
    auto* sim = static_cast<Tsim*>(handle);
#ifdef TSIM_TRACE
    const bool fresh = !sim->fst;
#else
    const bool fresh = true;
#endif
    if (fresh) {
        sim->top->final();
        sim->top.reset();
        sim->ctx = std::make_unique<VerilatedContext>();
        sim->top = std::make_unique<Vvta_top>(sim->ctx.get());
    }
    sim->reset();
}

void tsim_destroy(void* handle) {
    auto* sim = static_cast<Tsim*>(handle);
#ifdef TSIM_TRACE
    if (sim->fst) sim->fst->close();
#endif
    sim->top->final();
    delete sim;
}

int tsim_data_bits() { return TSIM_DATA_BITS; }

void tsim_set_knobs(void* handle, uint64_t seed, uint32_t latency_min, uint32_t latency_max,
                    uint32_t max_outstanding, uint32_t reorder, uint32_t backpressure_pct,
                    uint32_t write_latency) {
    auto* sim = static_cast<Tsim*>(handle);
    if (latency_max < latency_min) latency_max = latency_min;
    if (max_outstanding == 0) max_outstanding = 1;
    sim->knobs = {seed, latency_min, latency_max, max_outstanding, reorder,
                  backpressure_pct > 90 ? 90 : backpressure_pct, write_latency};
    sim->rng.seed(seed);
}

void tsim_attach_dram(void* handle, uint8_t* dram, uint64_t size) {
    auto* sim = static_cast<Tsim*>(handle);
    sim->dram = dram;
    sim->dram_size = size;
}

int tsim_reg_write(void* handle, uint32_t addr, uint32_t value) {
    return static_cast<Tsim*>(handle)->lite_write(addr, value);
}

int tsim_reg_read(void* handle, uint32_t addr, uint32_t* value) {
    return static_cast<Tsim*>(handle)->lite_read(addr, value);
}

// Start appending trace events to ``path`` in ``mode`` (kModeRetire, ...). ``row_bytes``,
// ``pieces``, ``rows`` and ``depths`` give each traced scratchpad's row size, write enables,
// rows a write writes (its enables then each a whole row) and depth (kMemoryName order);
// OUT elements of ``out_elem`` bytes start at ``out_origin``. Returns kTraceStarted, or
// kTraceNoFile when the file cannot be opened, kTraceNoPorts when the design has no trace ports.
int tsim_trace_begin(void* handle, const char* path, int mode, const uint32_t* row_bytes,
                     const uint32_t* pieces, const uint32_t* rows, const uint32_t* depths,
                     uint64_t out_origin, uint32_t out_elem) {
#ifdef TSIM_EVENTS
    auto* sim = static_cast<Tsim*>(handle);
    FILE* out = std::fopen(path, "a");
    if (!out) return kTraceNoFile;
    tsim_events::Geometry geo[kMemoryCount];
    for (int m = 0; m < kMemoryCount; ++m) geo[m] = {row_bytes[m], pieces[m], rows[m], depths[m]};
    sim->events = std::make_unique<tsim_events::Tracer>(out, mode, geo, out_origin, out_elem);
    return kTraceStarted;
#else
    (void)handle; (void)path; (void)mode; (void)row_bytes; (void)pieces; (void)rows;
    (void)depths; (void)out_origin; (void)out_elem;
    return kTraceNoPorts;
#endif
}

// Stop tracing and close the file.
void tsim_trace_end(void* handle) {
#ifdef TSIM_EVENTS
    static_cast<Tsim*>(handle)->events.reset();
#else
    (void)handle;
#endif
}

uint64_t tsim_cycle(void* handle) { return static_cast<Tsim*>(handle)->cycle; }

// What the memory model still holds: read bursts not fully answered, write bursts waiting for
// data, write responses not yet taken. All three are 0 between clean runs.
void tsim_pending(void* handle, uint32_t* reads, uint32_t* writes, uint32_t* responses) {
    auto* sim = static_cast<Tsim*>(handle);
    *reads = uint32_t(sim->reads.size());
    *writes = uint32_t(sim->writes.size());
    *responses = uint32_t(sim->responses.size());
}

// After tsim_run returned kRunDeadlock: bit s is set when stage s waits on a token (clear: it has
// no instruction).
uint32_t tsim_waiting_stages(void* handle) { return static_cast<Tsim*>(handle)->waiting_stages; }
#ifdef TSIM_ACTIVITY

// Start recording activity (activity.h): the first bins are ``width`` cycles (a power of two),
// at most ``max_bins`` bins (a power of two >= 2). Present only in libraries of designs with
// activity ports.
void tsim_activity_begin(void* handle, uint64_t width, uint32_t max_bins) {
    static_cast<Tsim*>(handle)->activity =
        std::make_unique<tsim_activity::Recorder>(width, max_bins);
}

// Stop recording: copy the bins (kColumns counts per bin, at most the max_bins given to
// tsim_activity_begin) to ``counts``, the final bin width and the cycles recorded; returns
// the number of bins.
uint32_t tsim_activity_end(void* handle, uint64_t* counts, uint64_t* width, uint64_t* cycles) {
    auto* sim = static_cast<Tsim*>(handle);
    if (!sim->activity) return 0;
    const tsim_activity::Recorder& rec = *sim->activity;
    uint32_t bins = rec.bins();
    std::memcpy(counts, rec.counts(), sizeof(uint64_t) * bins * tsim_activity::kColumns);
    *width = rec.width();
    *cycles = rec.cycles();
    sim->activity.reset();
    return bins;
}
#endif  // TSIM_ACTIVITY

}  // extern "C"

namespace {

// What a deadlock check compares between two moments of a run: the cycle counter, each stage's
// idle and waiting counters, the bus transactions started, and whether the memory model is empty.
struct Progress {
    uint32_t cycles = 0;
    uint32_t idle[kStageCount] = {};
    uint32_t stall[kStageCount] = {};
    uint64_t bursts = 0;
    bool memory_empty = false;

    bool read(Tsim* sim) {
        bursts = sim->bursts;
        memory_empty = sim->reads.empty() && sim->writes.empty() && sim->responses.empty();
        if (sim->lite_read(kRegCycles, &cycles) < 0) return false;
        for (int s = 0; s < kStageCount; ++s) {
            if (sim->lite_read(kIdleCounter[s], &idle[s]) < 0) return false;
            if (sim->lite_read(kStallCounter[s], &stall[s]) < 0) return false;
        }
        return true;
    }
};

// A window without progress (docs/isa.md §3.5, deadlock): in every cycle every stage was idle or
// waiting on a token, no bus transaction started and the memory model held none at either end.
// The core has no timers, a stage leaves that state only when another completes an instruction,
// and fetch would have read if it could: nothing can change afterwards. The registers are read
// one after another, so a stage's count may trail the cycle count by the reads in between.
bool no_progress(const Progress& before, const Progress& after, uint32_t* waiting) {
    constexpr uint32_t kReadSlack = 64;
    if (after.bursts != before.bursts || !before.memory_empty || !after.memory_empty)
        return false;
    uint32_t elapsed = after.cycles - before.cycles;
    *waiting = 0;
    for (int s = 0; s < kStageCount; ++s) {
        uint32_t quiet = (after.idle[s] - before.idle[s]) + (after.stall[s] - before.stall[s]);
        if (quiet + kReadSlack < elapsed) return false;
        if (after.stall[s] != before.stall[s]) *waiting |= 1u << s;
    }
    return true;
}

}  // namespace

extern "C" {

// Launch, then poll CTRL until finish or error. Returns kRunFinish, kRunError, kRunDeadlock after
// two windows of kDeadlockWindow cycles without progress, kRunTimeout at the cycle limit, or
// kRunNoAnswer when the register file does not answer.
int tsim_run(void* handle, uint64_t max_cycles) {
    auto* sim = static_cast<Tsim*>(handle);
    uint64_t start = sim->cycle;
    if (sim->lite_write(kRegCtrl, kCtrlLaunch) != int(kRespOkay)) return kRunNoAnswer;
    Progress checked;
    uint64_t checked_at = sim->cycle;
    int quiet_windows = 0;
    if (!checked.read(sim)) return kRunNoAnswer;
    while (sim->cycle - start < max_cycles) {
        for (int i = 0; i < kPollInterval; ++i) sim->tick();
        uint32_t ctrl = 0;
        if (sim->lite_read(kRegCtrl, &ctrl) < 0) return kRunNoAnswer;
        if (ctrl & kCtrlError) return kRunError;
        if (ctrl & kCtrlFinish) return kRunFinish;
        if (sim->cycle - checked_at < kDeadlockWindow) continue;
        Progress now;
        if (!now.read(sim)) return kRunNoAnswer;
        quiet_windows = no_progress(checked, now, &sim->waiting_stages) ? quiet_windows + 1 : 0;
        if (quiet_windows == 2) return kRunDeadlock;
        checked = now;
        checked_at = sim->cycle;
    }
    return kRunTimeout;
}

}  // extern "C"
