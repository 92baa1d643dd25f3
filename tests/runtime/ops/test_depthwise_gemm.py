"""Depthwise conv2d on the GEMM core (diagonal weight blocks) and the choice between it and the
ALU path by the cycle estimates."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.costs import ALU_FILL, INSN_OVERHEAD, LOAD_LATENCY
from avta.isa.enums import AluOp, MemType, Opcode
from avta.runtime.ops.conv_plan import PlanError, tiling_for
from avta.runtime.ops.depthwise import (depthwise_conv2d, estimate_alu, gemm_shape,
                                        plan_depthwise)
from avta.runtime.ops.reference import depthwise_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.ops.window import WindowShape, window_tiling
from avta.sim.fsim.backend import fsim_device

# (h, w, k, stride, pad): MobileNet's 3x3 with stride 1 and 2 on odd and even maps, a 1x1, a
# 5x5 and a stride 3.
GEOMETRIES = [(8, 8, 3, 2, 1), (7, 9, 3, 1, 1), (6, 6, 1, 1, 0), (7, 6, 5, 1, 2),
              (9, 8, 3, 3, 1)]
# (th, tw, tco) forced tilings that fit every configuration; None: the planner's choice.
TILES = [None, (1, 2, 1), (2, 3, 2)]


def _ops(program):
    return [(i.opcode, getattr(i, "alu_opcode", None)) for i in program.insns]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_path_is_bit_exact(cfg, int8, device, geometry, threads):
    h, w, k, stride, pad = geometry
    c = 3 * cfg.block_out
    x, wt = int8((cfg.batch, c, h, w)), int8((c, 1, k, k))
    rq = Requant(5, (-120, 120), use_clp=True)
    ref = depthwise_ref(x, wt, stride=stride, pad=pad, requant=rq)
    shape = gemm_shape(WindowShape(*x.shape, k, pad, stride))
    if cfg.block_in != cfg.block_out:
        with pytest.raises(PlanError, match="BLOCK_IN = BLOCK_OUT"):
            depthwise_conv2d(device(cfg), x, wt, stride=stride, pad=pad, requant=rq,
                             path="gemm")
        return
    for sizes in TILES:
        tiling = None if sizes is None else tiling_for(cfg, shape, *sizes, sizes[2], threads,
                                                       bias=False)
        dev = device(cfg, schedule="random", seed=threads)
        out = depthwise_conv2d(dev, x, wt, stride=stride, pad=pad, requant=rq, threads=threads,
                               tiling=tiling, path="gemm")
        np.testing.assert_array_equal(out, ref, err_msg=f"tiles {sizes}")
        ops = _ops(dev.last_program)
        assert (Opcode.GEMM, None) in ops and (Opcode.ALU, AluOp.MUL) not in ops


def test_gemm_path_loads_only_the_diagonal(default_cfg, int8):
    """Resident weights: each channel block's k² diagonal blocks are loaded once, nothing off
    the diagonal; one GEMM micro-op per block and kernel position."""
    cfg = default_cfg
    x, wt = int8((1, 64, 14, 14)), int8((64, 1, 3, 3))
    dev = fsim_device(cfg)
    out = depthwise_conv2d(dev, x, wt, stride=1, pad=1, requant=Requant(6, (0, 127)),
                           path="gemm")
    np.testing.assert_array_equal(out, depthwise_ref(x, wt, stride=1, pad=1,
                                                     requant=Requant(6, (0, 127))))
    assert dev.last_result.counters["WGT_LD"] == 4 * 9 * cfg.wgt_elem_bytes
    wgt = [i for i in dev.last_program.insns if i.opcode == Opcode.LOAD
           and i.memory_type == MemType.WGT and i.x_size]
    assert sum(i.x_size * i.y_size for i in wgt) == 4 * 9


def test_mobilenet_layers_choose_the_gemm_core():
    """MobileNet's 3x3 depthwise layers on default and huge: the GEMM path's estimate is at
    least twice as fast as the ALU's, and the planner takes it."""
    for name in ("default", "huge"):
        cfg = load_config(name)
        for c, size, stride in ((64, 112, 1), (128, 56, 2), (512, 14, 1), (1024, 7, 1)):
            shape = WindowShape(1, c, size, size, 3, 1, stride)
            plan = plan_depthwise(cfg, shape, requant=Requant(0, (0, 127)))
            assert plan.path == "gemm", (name, shape)
            assert plan.gemm_cycles * 2 < plan.alu_cycles, (name, shape, plan)


def test_the_alu_path_wins_where_the_gemm_core_cannot_run():
    """rect's blocks do not line up (BLOCK_IN 8, BLOCK_OUT 32); on huge a 7x7 kernel needs 49
    WGT rows per channel block and the WGT scratchpad has 32: the ALU path, and why."""
    rect = load_config("rect")
    plan = plan_depthwise(rect, WindowShape(1, 64, 8, 8, 3, 1, 1))
    assert plan.path == "alu" and plan.gemm_cycles is None and "BLOCK_IN" in plan.why
    huge = load_config("huge")
    seven = WindowShape(1, 64, 14, 14, 7, 3, 1)
    plan = plan_depthwise(huge, seven)
    assert plan.path == "alu" and "WGT" in plan.why
    with pytest.raises(PlanError, match="fits no path"):
        plan_depthwise(huge, seven, path="gemm")
    with pytest.raises(ValueError, match="not one of"):
        plan_depthwise(huge, seven, path="systolic")


@pytest.mark.parametrize("config", ["tiny", "default", "huge"])
def test_estimates_follow_fsim(config, rng):
    """Both paths' estimates within 12 % of fsim's cycles, so the choice is the faster one."""
    cfg = load_config(config)
    c = 4 * cfg.block_out
    x = rng.integers(-128, 128, (cfg.batch, c, 12, 12), dtype=np.int8)
    wt = rng.integers(-128, 128, (c, 1, 3, 3), dtype=np.int8)
    rq = Requant(6, (0, 127))
    for stride in (1, 2):
        plan = plan_depthwise(cfg, WindowShape(*x.shape, 3, 1, stride), requant=rq)
        for path, guess in (("gemm", plan.gemm_cycles), ("alu", plan.alu_cycles)):
            dev = fsim_device(cfg)
            depthwise_conv2d(dev, x, wt, stride=stride, pad=1, requant=rq, path=path)
            cycles = dev.last_result.cycles
            assert abs(guess - cycles) <= 0.12 * cycles, (path, stride, guess, cycles)


def test_alu_estimate_counts_every_pass():
    """One 4x4 tile of one block, 3x3 kernel, no requantization, default (8-byte bus, ACC_8BIT
    rows of 16 bytes): behind fetch's first ring on the read engine, LOADs, MOV, MUL, MOV, ADD
    one after another, then the STORE."""
    cfg = load_config("default")
    shape = WindowShape(1, 16, 4, 4, 3, 1, 1)
    t = window_tiling(shape, 4, 4, 1, 2)
    load = INSN_OVERHEAD + LOAD_LATENCY                             # before a LOAD's first beat
    loads = (load + 6 * (6 * 16 // 8)) + (load + 9 * 16 // 8)      # window; k² weight rows
    # MUL, ADD: two ACC reads a step; each of the four instructions fills the ALU pipeline.
    alu = 9 * 16 + 2 * 9 * 16 + 16 + 2 * 8 * 16 + 4 * ALU_FILL
    store = 2 + 4 * (16 * 4 // 8 + 6)                       # 4 DRAM rows of 4 pixels
    fetch = 24 * 16 // 8 - load          # the ring's 24 instructions after the first 8
    assert estimate_alu(cfg, shape, t, Requant()) == fetch + loads + alu + store
