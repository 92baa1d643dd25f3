"""GEMM unit: II = 1, forwarding at every read-after-write distance, reset, batch and
rectangular blocks, compared row for row with fsim (docs/isa.md §3.3)."""

import random

import numpy as np
import pytest

from avta.hw.core.gemm import Gemm, pipe_cuts, tree_levels
from avta.isa import costs
from avta.isa.config import ConfigError, load_config
from avta.isa.enums import Opcode
from avta.isa.insn import GemmInsn, Uop
from avta.sim.fsim.gemm import execute_gemm

PORTS = {"uop_rd": ("uop", "r"), "inp_rd": ("inp", "r"), "wgt_rd": ("wgt", "r"),
         "acc_rd": ("acc", "r"), "acc_wr": ("acc", "w")}


@pytest.fixture
def run_gemms(compare_unit, random_rows, uop_rows):
    """``run_gemms(cfg, uops, insns, seed=0)``: the instructions on the GEMM unit and on fsim from
    the same random scratchpads, compared; the cycles of each instruction."""
    def run(cfg, uops, insns, seed=0):
        rng = np.random.default_rng(seed)
        contents = {pad: random_rows(cfg, pad, rng) for pad in ("inp", "wgt", "acc")}
        contents["uop"] = uop_rows(cfg, uops)
        return compare_unit(cfg, Gemm(cfg=cfg), PORTS, insns, contents, execute_gemm)
    return run


def _gemm(**fields):
    return GemmInsn(opcode=Opcode.GEMM, **fields)


@pytest.mark.parametrize("config", ["tiny", "rect", "batch2"])
def test_random_gemms(run_gemms, config):
    cfg = load_config(config)
    rng = random.Random(config)
    uops = [Uop(rng.randrange(8), rng.randrange(cfg.inp_depth), rng.randrange(cfg.wgt_depth))
            for _ in range(6)]
    insns = []
    for _ in range(4):
        bgn = rng.randrange(5)
        insns.append(_gemm(
            reset=int(rng.random() < 0.2), uop_bgn=bgn, uop_end=rng.randrange(bgn, 7),
            iter_out=rng.randrange(1, 4), iter_in=rng.randrange(1, 4),
            dst_factor_out=rng.randrange(3), dst_factor_in=rng.randrange(3),
            src_factor_out=rng.randrange(5), src_factor_in=rng.randrange(5),
            wgt_factor_out=rng.randrange(5), wgt_factor_in=rng.randrange(5)))
    run_gemms(cfg, uops, insns, seed=len(config))


@pytest.mark.parametrize("distance", range(1, 7))
def test_read_after_write_at_distance(run_gemms, distance):
    """Step s accumulates into the row step s − distance wrote (docs/isa.md §3.3, RTL forwards)."""
    cfg = load_config("tiny")
    uops = [Uop(d, 3 + d, 5 + d) for d in range(distance)]
    insn = _gemm(uop_bgn=0, uop_end=distance, iter_out=2, iter_in=3, src_factor_in=1,
                 wgt_factor_out=1)
    cycles = run_gemms(cfg, uops, [insn], seed=distance)
    steps = 6 * distance
    assert cycles[0] <= steps + 8


def test_steps_per_cycle(run_gemms):
    """II = 1: a GEMM of N steps takes N + a constant number of cycles."""
    cfg = load_config("tiny")
    uops = [Uop(i, i, i) for i in range(8)]
    short = _gemm(uop_bgn=0, uop_end=8, iter_out=1, iter_in=1)
    long = _gemm(uop_bgn=0, uop_end=8, iter_out=2, iter_in=4, dst_factor_in=1)
    cycles = run_gemms(cfg, uops, [short, long])
    assert cycles[1] - cycles[0] == 64 - 8
    assert cycles[0] <= 8 + 8


@pytest.mark.parametrize("stages", [0, 1])
def test_cycles_are_the_cost_model(run_gemms, stages):
    """A GEMM of N steps takes exactly N + ``costs.gemm_fill`` cycles on the unit, from the
    cycle of ``start`` to the cycle of ``done`` (fsim's model, sim/fsim/timing.py, and the
    planner charge that): the index register included (hw/core/gemm.py)."""
    cfg = load_config("tiny").replace(gemm_pipe_stages=stages)
    uops = [Uop(i, i, i) for i in range(4)]
    insn = _gemm(uop_bgn=0, uop_end=4, iter_out=2, iter_in=3, dst_factor_in=4)
    assert run_gemms(cfg, uops, [insn]) == [24 + costs.gemm_fill(cfg)]


def test_tiny_gemm_is_n_plus_7(run_gemms):
    """On ``tiny`` (one dot-product register) a GEMM of N steps takes N + 7 cycles: the cycle it
    starts and the drain (COMPUTE_FILL, 4), the index register, the row register between the
    INP/WGT block RAMs and the multipliers, and the dot product's register."""
    cfg = load_config("tiny")
    uops = [Uop(i, i, i) for i in range(4)]
    insn = _gemm(uop_bgn=0, uop_end=4, iter_out=2, iter_in=3, dst_factor_in=4)
    assert cfg.gemm_stages == 1
    assert run_gemms(cfg, uops, [insn]) == [24 + 7]


def test_reset_and_degenerate(run_gemms):
    cfg = load_config("rect")
    uops = [Uop(1, 2, 3), Uop(4, 5, 6)]
    insns = [_gemm(reset=1, uop_bgn=0, uop_end=2, iter_out=2, iter_in=1, dst_factor_out=7),
             _gemm(uop_bgn=1, uop_end=1, iter_out=3, iter_in=3),       # empty uop range
             _gemm(uop_bgn=0, uop_end=2, iter_out=0, iter_in=3),       # iter_out == 0
             _gemm(uop_bgn=0, uop_end=2, iter_out=1, iter_in=2, dst_factor_in=7)]
    cycles = run_gemms(cfg, uops, insns)
    assert cycles[1] <= 3 and cycles[2] <= 3


def test_indices_wrap_modulo_depth(run_gemms):
    cfg = load_config("tiny")
    uops = [Uop(cfg.acc_depth - 1, cfg.inp_depth - 1, cfg.wgt_depth - 1)]
    insn = _gemm(uop_bgn=0, uop_end=1, iter_out=2, iter_in=2, dst_factor_out=1,
                 dst_factor_in=1, src_factor_in=2, wgt_factor_out=3)
    run_gemms(cfg, uops, [insn])


# -- the dot product's pipeline (GEMM_PIPE_STAGES) ----------------------------------------------

@pytest.mark.parametrize(("log_block_in", "stages", "cuts"), [
    (1, 1, {0}), (2, 1, {0}), (3, 2, {0, 2}), (4, 2, {0, 2}), (5, 3, {0, 2, 4}),
    (6, 3, {0, 2, 4}), (7, 4, {0, 2, 4, 6})])
def test_derived_stages(log_block_in, stages, cuts):
    """Absent GEMM_PIPE_STAGES: a register after the multipliers and one per two adder levels
    (docs/architecture.md, GEMM pipeline): 1 at BLOCK_IN 4, 2 at 16, 3 at 64."""
    cfg = _tiny_block_in(log_block_in)
    assert cfg.gemm_stages == stages
    assert pipe_cuts(tree_levels(cfg.block_in), cfg.gemm_stages) == cuts
    assert costs.gemm_fill(cfg) == (costs.COMPUTE_FILL + costs.INDEX_REGISTER
                                    + costs.ROW_REGISTER + stages)
    assert "GEMM_PIPE_STAGES" not in cfg.to_dict()


def test_stages_key():
    cfg = load_config("tiny").replace(gemm_pipe_stages=0)
    assert cfg.gemm_stages == 0 and cfg.to_dict()["GEMM_PIPE_STAGES"] == 0
    assert cfg.config_id != load_config("tiny").config_id
    assert pipe_cuts(6, 6) == {0, 1, 2, 3, 4, 5} and pipe_cuts(6, 1) == {0}
    with pytest.raises(ConfigError, match="GEMM_PIPE_STAGES = 3: must be at most"):
        load_config("tiny").replace(gemm_pipe_stages=3)


def _tiny_block_in(log_block_in):
    """tiny (256 rows per scratchpad) with BLOCK_IN 2^log_block_in."""
    return load_config("tiny").replace(log_block_in=log_block_in,
                                       log_inp_buff_size=8 + log_block_in,
                                       log_wgt_buff_size=10 + log_block_in)


def _pipe_cfg(log_block_in, stages):
    """:func:`_tiny_block_in` with ``stages`` ("max": LOG_BLOCK_IN)."""
    cfg = _tiny_block_in(log_block_in)
    return cfg.replace(gemm_pipe_stages=log_block_in if stages == "max" else stages)


@pytest.mark.parametrize("log_block_in", [2, 4, 6])
def test_pipeline_depths_agree(run_gemms, log_block_in):
    """Random steps whose dst rows repeat at every distance, with no pipeline registers and with
    one after every level, against fsim (numpy): the same ACC, and each register one cycle."""
    rng = random.Random(log_block_in)
    got = {}
    for stages in (0, "max"):
        cfg = _pipe_cfg(log_block_in, stages)
        uops = [Uop(rng.randrange(3), rng.randrange(cfg.inp_depth), rng.randrange(cfg.wgt_depth))
                for _ in range(8)]
        insns = [_gemm(reset=int(i == 2), uop_bgn=0, uop_end=8, iter_out=3, iter_in=2,
                       dst_factor_out=rng.randrange(2), dst_factor_in=rng.randrange(2),
                       src_factor_in=1, wgt_factor_out=1) for i in range(4)]
        rng = random.Random(log_block_in)      # the same program at both depths
        got[stages] = run_gemms(cfg, uops, insns, seed=log_block_in)
    assert [b - a for a, b in zip(got[0], got["max"])] == [log_block_in] * 4
