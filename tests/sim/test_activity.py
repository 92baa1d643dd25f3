"""Binned per-stage activity (avta.sim.activity) on fsim and tsim.

Relations measured on ``tiny`` and asserted here:

* tsim is exact: a lane's ``idle`` and ``wait`` cycles are its IDLE_x and STALL_x counters, all
  bins add up to CYCLES, and the compute stage's ``gemm`` cycles are GEMM_STEPS plus
  ``avta.isa.costs.gemm_fill`` (6 on tiny) per GEMM instruction (the cycle it starts and the
  five stages of the pipeline it drains, one of them the index register and one the dot
  product's register; an ALU with an immediate has ``ALU_FILL``, 6, and the cycle its copy is
  latched). fsim's model
  charges the same, so the two agree exactly on GEMM and ALU busy cycles.
* The load lane agrees less: on ``tiny`` most LOADs are a few short rows, whose first-beat
  latency fsim's model (measured on ResNet-18's long loads, sim/fsim/timing.py) undercharges.
  On a matmul and a conv2d tsim's busy cycles were 1.57x and 1.23x fsim's on the load lane,
  1.11x and 1.02x on compute, 0.98x and 1.02x on store, and the runs' cycles 1.16x and 1.05x
  (with the GEMM beside the ALU, hw/core/compute.py, the matmul's compute is short enough for
  its loads to bind on tsim, which fsim's model does not see; before, 1.07x and 1.02x).
  :func:`test_fsim_and_tsim_agree` holds them to :data:`BUSY_RATIOS` and the cycles to within
  20%.
"""

import numpy as np
import pytest

from avta.isa import costs
from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import Uop
from avta.runtime.device import Device
from avta.runtime.ops.conv2d import conv2d
from avta.runtime.ops.matmul import matmul
from avta.runtime.ops.requant import Requant
from avta.sim.activity import (COLUMNS, LANES, Activity, bin_width, from_columns,
                               from_intervals)
from avta.sim.fsim import Fsim
from avta.sim.fsim import timing
from avta.sim.fsim.backend import FsimBackend
from avta.sim.image import Image, alu, finish, gemm, load, store, sync
from avta.sim.memory_knobs import MemoryKnobs

CFG = load_config("tiny")
UOPS, WGT, INP, OUT = 0x1000, 0x2000, 0x3000, 0x6000
STAGE_COUNTERS = {"load": "LD", "compute": "CP", "store": "ST"}
#: An ALU instruction's busy cycles besides its steps: the fill, and the cycle its copy is
#: latched (sim/fsim/timing.py, hw/core/compute.py); behind a draining GEMM its first
#: ``ALU_BEHIND_GEMM`` cycles are the GEMM's (hw/core/activity_port.py), and it begins its steps
#: as soon as it may, so only the rest of its fill shows.
ALU_EXTRA = costs.ALU_FILL + timing.ALU_LATCH
ALU_BEHIND_GEMM_EXTRA = costs.ALU_FILL - timing.ALU_BEHIND_GEMM
#: A GEMM instruction's busy cycles besides its steps (its pipeline's fill).
GEMM_EXTRA = costs.gemm_fill(CFG)


def late_load_program(rows=128, reps=1, size=1 << 16):
    """Per repetition: a long LOAD of ``rows`` INP rows that pushes a token the GEMM after it
    pops (the compute stage waits for it), an ALU SHR with an immediate, a STORE. The program
    goes at 0x8000 of a ``size``-byte image."""
    image = Image(CFG, size=size, insn_addr=0x8000)
    rng = np.random.default_rng(0)
    image.put(INP, rng.integers(-8, 8, rows * CFG.inp_elem_bytes, dtype=np.int8))
    image.put(WGT, rng.integers(-8, 8, CFG.wgt_elem_bytes, dtype=np.int8))
    image.put_uops(UOPS, [Uop(0, 0, 0)])
    image.add(load(MemType.UOP, dram=UOPS // CFG.uop_elem_bytes, x=1),
              load(MemType.WGT, dram=WGT // CFG.wgt_elem_bytes, x=1))
    for r in range(reps):
        image.add(
            load(MemType.INP, dram=INP // CFG.inp_elem_bytes, y=rows // 16, x=16,
                 push_next=1, pop_next=int(r > 0)),
            gemm(uops=(0, 1), iters=(rows // 16, 16), dst=(16, 1), src=(16, 1), pop_prev=1),
            alu(AluOp.SHR, iters=(1, rows), dst=(0, 1), src=(0, 1), imm=2, push_next=1,
                push_prev=1),
            store(dram=OUT // CFG.out_elem_bytes, x=rows, pop_prev=1, push_prev=1),
            sync("pop_next"))
    image.add(finish())
    return image


def regroup(activity, factor):
    """``activity``'s bins summed ``factor`` at a time."""
    lanes = {}
    for lane, states in activity.lanes.items():
        lanes[lane] = {}
        for state, counts in states.items():
            padded = np.zeros(-(-len(counts) // factor) * factor, dtype=np.int64)
            padded[:len(counts)] = counts
            lanes[lane][state] = padded.reshape(-1, factor).sum(axis=1)
    return lanes


def assert_same_bins(a, b):
    assert a.keys() == b.keys()
    for lane in a:
        for state in a[lane]:
            assert np.array_equal(a[lane][state], b[lane][state]), (lane, state)


# -- the record type -----------------------------------------------------------------------------

def test_bin_width_doubles_until_the_run_fits():
    assert bin_width(0) == 1
    assert bin_width(2048) == 1 and bin_width(2049) == 2
    assert bin_width(1000, max_bins=16) == 64            # 1000 / 64 = 15.6 bins
    assert bin_width(1000, bin_cycles=128, max_bins=16) == 128
    for bad in ({"bin_cycles": 3}, {"max_bins": 1}, {"max_bins": 6}, {"bin_cycles": 0}):
        with pytest.raises(ValueError):
            bin_width(10, **bad)


@pytest.mark.parametrize("max_bins", [2, 16, 4096])
def test_from_intervals_matches_counting_cycle_by_cycle(max_bins):
    rng = np.random.default_rng(max_bins)
    cycles = 1000
    per_cycle = {}                  # lane -> state name of every cycle
    intervals = {}
    for lane, states in LANES.items():
        cuts = np.sort(rng.choice(np.arange(1, cycles + 40), 30, replace=False))
        bounds = np.concatenate(([0], cuts))
        labels = rng.choice(states, len(bounds) - 1)
        timeline = np.full(cycles, "idle", dtype=object)
        for state in states:
            if state != "idle":
                chosen = labels == state
                intervals[(lane, state)] = (bounds[:-1][chosen], bounds[1:][chosen])
        for start, end, state in zip(bounds[:-1], bounds[1:], labels):
            timeline[start:end] = state
        per_cycle[lane] = timeline
    activity = from_intervals(cycles, intervals, max_bins=max_bins).check()
    width = activity.bin_cycles
    assert width == bin_width(cycles, max_bins=max_bins) and activity.estimated
    for lane, states in LANES.items():
        for state in states:
            expected = [(per_cycle[lane][i:i + width] == state).sum()
                        for i in range(0, cycles, width)]
            assert activity.lanes[lane][state].tolist() == expected, (lane, state)


def test_check_rejects_bins_that_do_not_add_up():
    counts = np.zeros((2, len(COLUMNS)), dtype=np.int64)
    for lane in LANES:
        counts[:, COLUMNS.index((lane, "idle"))] = [4, 2]
    activity = from_columns(counts, bin_cycles=4, cycles=6).check()
    assert activity.bins == 2 and activity.bin_lengths().tolist() == [4, 2]
    counts[1, COLUMNS.index(("store", "busy"))] = 1
    with pytest.raises(ValueError, match="store"):
        from_columns(counts, bin_cycles=4, cycles=6).check()
    assert isinstance(activity, Activity)


# -- fsim ----------------------------------------------------------------------------------------

def fsim_activity(image, **options):
    return Fsim(CFG).run_activity(bytearray(image.to_bytes()), image.insn_addr,
                                  len(image.insns), **options)


def test_fsim_activity_follows_its_cycle_model():
    image = late_load_program(reps=3)
    result, activity = fsim_activity(image)
    assert result.ok and activity.estimated
    activity.check()
    assert activity.cycles == result.cycles
    totals = activity.totals()
    for lane, short in STAGE_COUNTERS.items():
        assert totals[lane]["wait"] == result.counters[f"STALL_{short}"]
        assert totals[lane]["idle"] == result.counters[f"IDLE_{short}"]
    assert totals["compute"]["gemm"] == result.counters["GEMM_STEPS"] + 3 * GEMM_EXTRA
    # Each ALU instruction follows its GEMM, which drains beside it.
    assert totals["compute"]["alu"] == result.counters["ALU_STEPS"] + 3 * ALU_BEHIND_GEMM_EXTRA
    assert totals["compute"]["wait"] > 0                # the GEMMs wait for the long LOADs
    # Every instruction ran; the first INP LOAD (instruction 2) starts after the WGT LOAD.
    starts = activity.insn_start
    assert starts.shape == (len(image.insns),) and (starts >= 0).all()
    assert starts[0] == starts[1] == costs.FETCH_LATENCY < starts[2]


def test_fsim_coarse_bins_are_the_fine_bins_summed():
    image = late_load_program(reps=3)
    _, fine = fsim_activity(image)
    _, coarse = fsim_activity(image, max_bins=8)
    coarse.check()
    assert fine.bin_cycles == 1 and coarse.bin_cycles == bin_width(fine.cycles, max_bins=8)
    assert coarse.bins <= 8 < fine.cycles
    assert_same_bins(coarse.lanes, regroup(fine, coarse.bin_cycles))


# -- tsim ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tsim():
    from avta.sim.tsim.driver import Tsim
    with Tsim(CFG, activity=True) as sim:
        yield sim


def tsim_activity(sim, image, knobs=MemoryKnobs(), **options):
    sim.set_knobs(knobs)
    dram = np.frombuffer(bytearray(image.to_bytes()), dtype=np.uint8).copy()
    return sim.run_activity(dram, image.insn_addr, len(image.insns), **options)


@pytest.mark.tsim
@pytest.mark.parametrize("reps", [1, 3])
def test_tsim_activity_is_exact(tsim, reps):
    image = late_load_program(reps=reps)
    # A slow memory: the compute stage waits on the LOAD's token.
    result, activity = tsim_activity(tsim, image, MemoryKnobs(latency=(20, 20)))
    assert result.ok, result.detail
    activity.check()
    assert not activity.estimated and activity.cycles == result.cycles
    totals = activity.totals()
    for lane, short in STAGE_COUNTERS.items():
        assert totals[lane]["wait"] == result.counters[f"STALL_{short}"]
        assert totals[lane]["idle"] == result.counters[f"IDLE_{short}"]
    gemms = alus = reps
    assert totals["compute"]["gemm"] == result.counters["GEMM_STEPS"] + GEMM_EXTRA * gemms
    assert totals["compute"]["alu"] == (result.counters["ALU_STEPS"]
                                        + ALU_BEHIND_GEMM_EXTRA * alus)
    assert totals["compute"]["wait"] > 100 * reps
    assert totals["compute"]["other"] > 0              # LOAD UOP, sync, FINISH


@pytest.mark.tsim
def test_tsim_coarse_bins_are_the_fine_bins_summed(tsim):
    image = late_load_program(reps=3)
    _, fine = tsim_activity(tsim, image)
    _, coarse = tsim_activity(tsim, image, bin_cycles=2, max_bins=4)
    coarse.check()
    assert coarse.cycles == fine.cycles > 4 * 2
    assert fine.bin_cycles == 1 and coarse.bin_cycles == bin_width(fine.cycles, bin_cycles=2,
                                                                     max_bins=4)
    assert coarse.bins <= 4
    assert_same_bins(coarse.lanes, regroup(fine, coarse.bin_cycles))


@pytest.mark.tsim
def test_tsim_activity_needs_the_activity_build():
    from avta.hw.top import top_verilog
    from avta.sim.tsim.driver import Tsim
    assert "activity" not in top_verilog(CFG)
    assert "activity__running" in top_verilog(CFG, activity=True)
    with Tsim(CFG) as plain, pytest.raises(ValueError, match="activity=True"):
        plain.run_activity(np.zeros(1 << 16, np.uint8), 0, 1)


def test_builds_without_activity_keep_their_cache_key():
    from avta.sim.tsim.build import HARNESS, without_activity
    harness = HARNESS.read_text()
    assert "TSIM_ACTIVITY" in harness
    stripped = without_activity(harness)
    assert "activity" not in stripped.lower()
    assert stripped.count("\n") < harness.count("\n")


#: tsim's busy cycles over fsim's, per lane: the bounds of test_fsim_and_tsim_agree.
BUSY_RATIOS = {"load": (1.0, 1.7), "compute": (1.0, 1.15), "store": (0.9, 1.1)}


def _operators(dev, which):
    rng = np.random.default_rng(1)
    cfg = dev.cfg
    if which == "matmul":
        a = rng.integers(-128, 128, (8 * cfg.batch, 8 * cfg.block_in), dtype=np.int8)
        w = rng.integers(-128, 128, (8 * cfg.block_out, 8 * cfg.block_in), dtype=np.int8)
        return matmul(dev, a, w, requant=Requant(shift=6, clip=(-100, 100)))
    x = rng.integers(-128, 128, (cfg.batch, 2 * cfg.block_in, 8, 8), dtype=np.int8)
    w = rng.integers(-128, 128, (2 * cfg.block_out, 2 * cfg.block_in, 3, 3), dtype=np.int8)
    return conv2d(dev, x, w, pad=1, requant=Requant(shift=8, clip=(-127, 127)))


@pytest.mark.tsim
@pytest.mark.parametrize("which", ["matmul", "conv2d"])
def test_fsim_and_tsim_agree(which):
    from avta.sim.tsim.backend import TsimBackend
    fsim = FsimBackend(CFG, dram_size=1 << 20, activity=True)
    tsim = TsimBackend(CFG, dram_size=1 << 20, activity=True)
    devices = [Device(CFG, backend) for backend in (fsim, tsim)]
    assert np.array_equal(*[_operators(dev, which) for dev in devices])
    f, t = fsim.last_activity.check(), tsim.last_activity.check()
    assert 1 <= t.cycles / f.cycles <= 1.2
    for lane, (low, high) in BUSY_RATIOS.items():
        ratio = t.busy(lane).sum() / f.busy(lane).sum()
        assert low <= ratio <= high, (lane, ratio)
    # Beyond the micro-op steps, both charge the pipeline fill per GEMM instruction, less
    # where a GEMM starts while the one before it drains (their cycles are counted once). The
    # two models agree within a few cycles (measured: matmul 601 and 605 GEMM cycles, conv2d
    # 2,435 and 2,439; the ALU's 64 and 64, 65 and 66).
    program = devices[1].last_program
    gemms = sum(insn.opcode == Opcode.GEMM for insn in program.insns)
    steps = devices[1].last_result.counters["GEMM_STEPS"]
    assert gemms > 0
    f_gemm, t_gemm = f.totals()["compute"]["gemm"], t.totals()["compute"]["gemm"]
    assert steps < f_gemm <= steps + gemms * GEMM_EXTRA
    assert 0 <= t_gemm - f_gemm <= gemms // 2, (f_gemm, t_gemm)
    assert abs(t.totals()["compute"]["alu"] - f.totals()["compute"]["alu"]) <= 2
