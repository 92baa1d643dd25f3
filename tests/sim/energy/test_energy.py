"""Energy of a run: one layer's events and energy against a calculation by hand from its counts
and the shipped table, and fsim's counts against tsim's."""

import math

import pytest

from avta.sim.energy import CATEGORIES, energy_pj, event_counts, load_table


def _events(cfg, layer):
    return event_counts(cfg, counters=layer.counters, mix=layer.mix, cycles=layer.cycles,
                        insns=layer.insns)


def test_one_layer_by_hand(run_layer):
    """tiny (1x4x4, 64-bit AXI), the 3x3 convolution of the conftest, at 46.4 MHz."""
    cfg, layer = run_layer("tiny", "fsim")
    events = _events(cfg, layer)
    # The counts: 8x8 channels are 2x2 blocks of 4, 36 pixels, 9 taps: 1,296 GEMM steps of
    # 16 MACs; the requantization's 292 ALU steps take immediates (shift, clip).
    assert layer.counters["GEMM_STEPS"] == 1296 and layer.counters["ALU_STEPS"] == 292
    assert events.macs == 20_736 and events.alu_ops == 292 * 4
    assert events.reads == {"uop": 1296 + 292, "inp": 1296, "wgt": 1296, "acc": 1296 + 292,
                            "out": 288 // 4}
    # The plan: 3x6-pixel tiles of one output block, two tasks of one input block each, four
    # accumulator buffers; the last tile in two parts along its rows, 2 + 1 (its window
    # resident, runtime/ops/conv_cycles.py split_axis), so five tiles.
    # Micro-ops: 9 a task's GEMM (3x3 taps) for 5 tiles of 2 tasks, a MOV start a tile, a
    # tail kernel (SHR, MIN, MAX) a buffer (the second part's is the first tile's), and the
    # bias's shift and its copy into the second bank.
    uops = 5 * 2 * 9 + 5 + 4 + 2
    # ACC: the bias's two rows loaded once (the second bank's copy is one of the ALU steps).
    assert events.writes == {"uop": uops, "inp": 160, "wgt": 36, "acc": 2 + 1296 + 292,
                             "out": 2 + 1296 + 292}
    # Instructions of 16 bytes: the first task loads in two pieces (runtime/ops/conv_first.py);
    # the bias's 32 bytes are read once (its copy into the second bank is an ALU MOV). LOADs:
    # ACC 1, UOP 1, WGT 5 (the first task's two pieces), INP 4 windows and 4 token-only ones
    # (the tasks whose window is resident), 4 token-only UOP at the end; per tile a MOV start,
    # SHR, MIN, MAX and a STORE (25); 19 GEMMs (ten tasks, the first in two pieces, parts
    # beside the passes of the tile before); the bias's SHR and copy; FINISH.
    insns = 1 + 1 + 5 + 8 + 4 + 25 + 19 + 2 + 1
    assert layer.insns == insns == 66
    assert events.dram_bytes == 32 + 384 + 576 + uops * 4 + 288 + insns * 16
    # The table: 10 pJ per 64 bits of an 8 KB SRAM, times sqrt(macro bytes / 8 KB); on tiny
    # every row is one macro wide, a bank deep.
    uop = 10 * 32 / 64 * math.sqrt(512 / 8192)      # 2 interleaved banks of 128 x 32, kept twice
    inp = 10 * 32 / 64 * math.sqrt(1024 / 8192)     # 256 x 32 bits
    wgt = 10 * 128 / 64 * math.sqrt(4096 / 8192)    # 256 x 128 bits
    acc = 10 * 128 / 64 * math.sqrt(2048 / 8192)    # 2 banks of 128 x 128 bits
    out = 10 * 32 / 64 * math.sqrt(512 / 8192)      # 2 banks of 128 x 32 bits
    # Leakage: the logic model's GE (gemm 2,880 + 939·16 + 341·4, alu 3,113 + 4,294·4,
    # ctrl 120,570 + 2,200·4 + 45·64) at 20 nW and 98,304 SRAM bits at 0.5 nW.
    ge = (2880 + 939 * 16 + 341 * 4) + (3113 + 4294 * 4) + (120570 + 2200 * 4 + 45 * 64)
    leak_nw = ge * 20 + (256 * 32 * 2 + 256 * 32 + 256 * 128 + 256 * 128 + 256 * 32) * 0.5
    want = {"mac": 20_736 * 0.3, "alu": 1168 * 0.1,
            "uop": (1588 + uops * 2) * uop, "inp": (1296 + 160) * inp,
            "wgt": (1296 + 36) * wgt, "acc": (1588 + 1590) * acc, "out": (72 + 1590) * out,
            "dram": events.dram_bytes * 162.5, "control": insns * 2.0,
            "leakage": leak_nw * 1e-9 * (layer.cycles / 46.4e6) * 1e12}
    got = energy_pj(cfg, events, load_table(), 46.4)
    assert list(got) == list(CATEGORIES)
    for category in CATEGORIES:
        assert got[category] == pytest.approx(want[category], rel=1e-12), category


def test_a_row_across_several_macros():
    """default's WGT row (2,048 bits) is eight 1,024 x 256-bit macros side by side (the
    floorplan's inventory): a read costs eight 256-bit reads of a 32 KB macro."""
    from avta.isa.config import load_config
    from avta.isa.memories import SCRATCHPADS
    from avta.sim.energy import EventCounts
    cfg = load_config("default")
    none = dict.fromkeys(SCRATCHPADS, 0)
    events = EventCounts(0, 0, 0, 0, none | {"wgt": 1}, none | {"acc": 1}, 0)
    got = energy_pj(cfg, events, load_table(), 100.0)
    assert got["wgt"] == pytest.approx(8 * 10 * 256 / 64 * math.sqrt(32768 / 8192))
    # ACC: two 256-bit columns of 1,024-word macros (the 512-bit row of 16 int32).
    assert got["acc"] == pytest.approx(2 * 10 * 256 / 64 * math.sqrt(32768 / 8192))


def test_a_reset_gemm_does_no_macs(run_layer):
    cfg, layer = run_layer("tiny", "fsim")
    mix = dict(layer.mix, gemm_reset_steps=296)
    events = event_counts(cfg, counters=layer.counters, mix=mix, cycles=1, insns=1)
    assert events.macs == (1296 - 296) * 16 and events.reads["inp"] == 1000
    with pytest.raises(ValueError, match="does not fit the counters"):
        event_counts(cfg, counters=layer.counters, mix=dict(mix, gemm_reset_steps=1297),
                     cycles=1, insns=1)


def test_the_clock_must_be_a_frequency(run_layer):
    cfg, layer = run_layer("tiny", "fsim")
    for clock in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="positive frequency"):
            energy_pj(cfg, _events(cfg, layer), load_table(), clock)


@pytest.mark.tsim
def test_fsim_and_tsim_count_the_same_events(run_layer):
    """Every count but the cycles is exact on both; only leakage, over the cycles, differs."""
    cfg, f = run_layer("tiny", "fsim")
    _, t = run_layer("tiny", "tsim")
    ef, et = _events(cfg, f), _events(cfg, t)
    assert (ef.insns, ef.macs, ef.alu_ops, ef.reads, ef.writes, ef.dram_bytes) == \
        (et.insns, et.macs, et.alu_ops, et.reads, et.writes, et.dram_bytes)
    table = load_table()
    pf, pt = energy_pj(cfg, ef, table, 46.4), energy_pj(cfg, et, table, 46.4)
    assert {c: pf[c] for c in CATEGORIES if c != "leakage"} == \
        {c: pt[c] for c in CATEGORIES if c != "leakage"}
    assert pt["leakage"] / pf["leakage"] == pytest.approx(t.cycles / f.cycles)
