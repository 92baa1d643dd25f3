"""Max pooling with its windows copied into ACC by the GEMM core, and the choice between it and
the ALU path, on fsim (and tsim where the runtime tests mirror), bit for bit the reference."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import MemType, Opcode
from avta.runtime.ops.conv_plan import PlanError
from avta.runtime.ops.pool_gemm import (estimate_max_pool_alu, estimate_max_pool_gemm,
                                        max_pool_on_device, plan_max_pool)
from avta.runtime.ops.reference import max_pool_ref
from avta.runtime.ops.window import WindowShape, window_tiling

# (h, w, k, stride, pad)
GEOMETRIES = [(8, 8, 3, 2, 1), (7, 9, 2, 2, 0), (5, 6, 3, 1, 1), (6, 6, 1, 1, 0)]
# (th, tw) forced tilings (one channel block a tile); None: the planner's choice.
TILES = [None, (1, 1), (2, 3), (3, 2)]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
def test_max_pool_on_the_gemm_path(cfg, int8, device, geometry):
    h, w, k, stride, pad = geometry
    if cfg.block_in != cfg.block_out:
        pytest.skip("the GEMM path needs square blocks")
    x = int8((cfg.batch, 2 * cfg.block_out, h, w))
    x[..., 0, 0] = -128                          # the most negative value ties the padding
    x[..., -1, -1] = 127
    ref = max_pool_ref(x, k=k, stride=stride, pad=pad)
    shape = WindowShape(*x.shape, k, pad, stride)
    for sizes in TILES:
        tiling = None if sizes is None else window_tiling(shape, *sizes, 1, 2)
        dev = device(cfg)
        out = max_pool_on_device(dev, x, k=k, stride=stride, pad=pad, path="gemm",
                                 tiling=tiling)
        np.testing.assert_array_equal(out, ref, err_msg=f"tiles {sizes}")
        insns = dev.last_program.insns
        assert not any(i.opcode == Opcode.LOAD and i.memory_type == MemType.ACC_8BIT
                       for i in insns)           # the windows come in as INP rows
        counters = dev.last_result.counters
        for name, value in dev.last_program.expected_counters().items():
            assert counters[name] == value, name


def test_a_tiling_of_two_blocks_is_refused(tiny_cfg, device):
    x = np.zeros((tiny_cfg.batch, 2 * tiny_cfg.block_out, 4, 4), np.int8)
    tiling = window_tiling(WindowShape(*x.shape, 2, 0, 2), 1, 2, 2, 2)
    with pytest.raises(PlanError, match="does not fit the GEMM path"):
        max_pool_on_device(device(tiny_cfg), x, k=2, stride=2, path="gemm", tiling=tiling)


def test_the_gemm_path_needs_square_blocks(device):
    cfg = load_config("rect")
    x = np.zeros((cfg.batch, cfg.block_out, 4, 4), np.int8)
    with pytest.raises(PlanError, match="BLOCK_IN"):
        max_pool_on_device(device(cfg), x, k=2, stride=2, path="gemm")
    plan = plan_max_pool(cfg, WindowShape(*x.shape, 2, 0, 2))
    assert plan.path == "alu" and "BLOCK_IN" in plan.why


@pytest.mark.parametrize("config", ["default", "huge"])
def test_resnet_pool_takes_the_gemm_path_and_it_is_faster(config):
    """ResNet's 3×3 stride-2 pool of 64×112×112: the copies hide beside the MAX passes, where
    the ALU path's LOAD ACC_8BITs take the compute stage's time."""
    cfg = load_config(config)
    shape = WindowShape(1, 64, 112, 112, 3, 1, 2)
    plan = plan_max_pool(cfg, shape)
    assert plan.path == "gemm"
    assert plan.gemm_cycles < 0.85 * plan.alu_cycles
    assert estimate_max_pool_gemm(cfg, shape, plan.tiling) == plan.gemm_cycles
    alu = plan_max_pool(cfg, shape, path="alu")
    assert estimate_max_pool_alu(cfg, shape, alu.tiling) == plan.alu_cycles


def test_bad_path_is_refused(default_cfg):
    with pytest.raises(ValueError, match="not one of"):
        plan_max_pool(default_cfg, WindowShape(1, 16, 4, 4, 2, 0, 2), path="simd")


def _every_fitting_tiling(cfg, shape):
    """The GEMM path's tilings that fit, in the order of the planner's search."""
    from avta.runtime.ops.conv_plan import tile_sizes
    from avta.runtime.ops.pool_gemm import fits_gemm_path
    for tw in tile_sizes(shape.ow):
        for th in tile_sizes(shape.oh):
            t = window_tiling(shape, th, tw, 1, 2)
            if fits_gemm_path(cfg, shape, t):
                yield t


@pytest.mark.parametrize("config", ["default", "huge", "tiny"])
@pytest.mark.parametrize("geometry", [(1, 64, 56, 56, 3, 1, 2), (1, 32, 15, 9, 2, 0, 2),
                                      (2, 16, 12, 12, 3, 1, 1)], ids=str)
def test_the_pruned_search_finds_the_first_best_tiling(config, geometry):
    """The GEMM path's plan is the first tiling with the smallest estimate of an exhaustive
    search, although the search estimates only the tilings whose bound (the compute stage's
    passes and the last store) does not exceed the best estimate so far."""
    from avta.runtime.ops.pool_gemm import lower_bound_max_pool_gemm, plan_max_pool_gemm
    cfg = load_config(config)
    shape = WindowShape(geometry[0] * cfg.batch, geometry[1] * cfg.block_out // 16, *geometry[2:])
    tilings = list(_every_fitting_tiling(cfg, shape))
    assert len(tilings) > 3
    estimates = [estimate_max_pool_gemm(cfg, shape, t) for t in tilings]
    for t, cycles in zip(tilings, estimates):
        assert lower_bound_max_pool_gemm(cfg, shape, t) <= cycles, t
    assert plan_max_pool_gemm(cfg, shape) == tilings[estimates.index(min(estimates))]
