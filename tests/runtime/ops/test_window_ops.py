"""Max pooling (min-value padded loads) and depthwise conv2d on the ALU path (MUL) on fsim
(tests/runtime/ops/test_depthwise_gemm.py has the GEMM path and the choice)."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType, PadValue
from avta.runtime.ops.depthwise import depthwise_conv2d
from avta.runtime.ops.pool import max_pool2d
from avta.runtime.ops.reference import depthwise_ref, max_pool_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.ops.window import PlanError, WindowShape, plan_window, window_tiling

# (h, w, k, stride, pad)
GEOMETRIES = [(8, 8, 3, 2, 1), (7, 9, 2, 2, 0), (5, 6, 3, 1, 1), (6, 6, 1, 1, 0)]
# (th, tw, tcb) forced tilings that fit every configuration; None: the planner's choice.
POOL_TILES = [None, (1, 2, 1), (2, 3, 2)]
DEPTHWISE_TILES = [None, (1, 2, 1), (2, 3, 1)]


def tiling(cfg, x, k, stride, pad, sizes, threads):
    if sizes is None:
        return None
    return window_tiling(WindowShape(*x.shape, k, pad, stride), *sizes, threads)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
@pytest.mark.parametrize("threads", [1, 2])
def test_max_pool(cfg, int8, device, geometry, threads):
    h, w, k, stride, pad = geometry
    x = int8((cfg.batch, 2 * cfg.block_out, h, w))
    x[..., 0, 0] = -128                          # the most negative value still beats padding
    ref = max_pool_ref(x, k=k, stride=stride, pad=pad)
    for sizes in POOL_TILES:
        dev = device(cfg, schedule="random", seed=threads)
        out = max_pool2d(dev, x, k=k, stride=stride, pad=pad, threads=threads,
                         tiling=tiling(cfg, x, k, stride, pad, sizes, threads))
        np.testing.assert_array_equal(out, ref, err_msg=f"tiles {sizes}")
    loads = [i for i in dev.last_program.insns if i.opcode == 0 and i.x_size
             and i.memory_type == MemType.ACC_8BIT]
    if pad:
        assert all(i.pad_value == PadValue.MIN for i in loads)
        assert any(i.y_pad_0 or i.x_pad_0 for i in loads)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
@pytest.mark.parametrize("threads", [1, 2])
def test_depthwise(cfg, int8, device, geometry, threads):
    h, w, k, stride, pad = geometry
    c = 2 * cfg.block_out
    x, wt = int8((cfg.batch, c, h, w)), int8((c, 1, k, k))
    rq = Requant(4, (-120, 120), use_clp=True)
    ref = depthwise_ref(x, wt, stride=stride, pad=pad, requant=rq)
    for sizes in DEPTHWISE_TILES:
        dev = device(cfg, schedule="random", seed=threads)
        out = depthwise_conv2d(dev, x, wt, stride=stride, pad=pad, requant=rq, threads=threads,
                               tiling=tiling(cfg, x, k, stride, pad, sizes, threads),
                               path="alu")
        np.testing.assert_array_equal(out, ref, err_msg=f"tiles {sizes}")
    assert any(i.opcode == 4 and i.alu_opcode == AluOp.MUL for i in dev.last_program.insns)


# MobileNet's stride-2 depthwise layers (3x3, pad 1) on odd and even maps, and a stride 3.
STRIDED = [(7, 7, 3, 2, 1), (6, 10, 3, 2, 1), (9, 8, 3, 3, 1)]


@pytest.mark.parametrize("geometry", STRIDED, ids=lambda g: "x".join(map(str, g)))
def test_depthwise_strided(cfg, int8, device, geometry):
    """Strided windows: the MOV loops step the input window by the stride (s·TW_in per output
    row, s per output column), in border tiles and inner ones alike."""
    h, w, k, stride, pad = geometry
    c = cfg.block_out
    x, wt = int8((cfg.batch, c, h, w)), int8((c, 1, k, k))
    rq = Requant(6, (0, 127))
    ref = depthwise_ref(x, wt, stride=stride, pad=pad, requant=rq)
    for sizes in (None, (1, 2, 1), (2, 1, 1)):
        out = depthwise_conv2d(device(cfg), x, wt, stride=stride, pad=pad, requant=rq,
                               tiling=tiling(cfg, x, k, stride, pad, sizes, 2), path="alu")
        np.testing.assert_array_equal(out, ref, err_msg=f"tiles {sizes}")


def test_depthwise_min_max_tail(default_cfg, int8, device):
    cfg = default_cfg
    x, wt = int8((1, 32, 9, 9)), int8((32, 1, 3, 3))
    for rq in (Requant(), Requant(7, (0, 127)), Requant(-1)):
        out = depthwise_conv2d(device(cfg), x, wt, stride=1, pad=1, requant=rq, path="alu")
        np.testing.assert_array_equal(out, depthwise_ref(x, wt, stride=1, pad=1, requant=rq))


def test_resnet_stem_pool(default_cfg, int8, device):
    """ResNet-18's 3x3/2 max pool on the 112x112x64 stem output."""
    cfg = default_cfg
    x = int8((1, 64, 112, 112))
    out = max_pool2d(device(cfg, dram_size=4 << 20), x, k=3, stride=2, pad=1)
    np.testing.assert_array_equal(out, max_pool_ref(x, k=3, stride=2, pad=1))


def test_window_errors(default_cfg, device):
    with pytest.raises(PlanError, match="multiples of BATCH"):
        max_pool2d(device(default_cfg), np.zeros((1, 8, 4, 4), np.int8), k=2, stride=2)
    with pytest.raises(PlanError, match="pad < k"):
        WindowShape(1, 16, 4, 4, 2, 2, 1).check(default_cfg)
    with pytest.raises(ValueError, match=r"\[C, 1, K, K\]"):
        depthwise_conv2d(device(default_cfg), np.zeros((1, 16, 4, 4), np.int8),
                         np.zeros((16, 2, 3, 3), np.int8))
    huge = WindowShape(1, 16, 4096, 4096, 3, 1, 1)
    with pytest.raises(PlanError, match="no tile"):
        plan_window(default_cfg, huge, rows_per_block=lambda i, o: 10 ** 9,
                    uops_per_tile=lambda t: 1, insns_per_tile=lambda t: 1)


def test_max_pool_folds_rows_first(default_cfg, int8):
    """ResNet's 3x3 stride-2 pool folds each window's rows first, in place, then the rows'
    first columns: 6 MAX steps an output pixel for tall tiles instead of 8, bit for bit."""
    from avta.isa.enums import Opcode
    from avta.sim.fsim.backend import fsim_device
    cfg = default_cfg
    x = int8((1, 32, 28, 28))
    dev = fsim_device(cfg)
    out = max_pool2d(dev, x, k=3, stride=2, pad=1)
    np.testing.assert_array_equal(out, max_pool_ref(x, k=3, stride=2, pad=1))
    steps = sum(i.iter_out * i.iter_in * (i.uop_end - i.uop_bgn)
                for i in dev.last_program.insns
                if i.opcode == Opcode.ALU and i.alu_opcode == AluOp.MAX)
    pixels = 2 * 14 * 14                                 # two channel blocks of 14x14
    assert 6 * pixels <= steps < 7 * pixels
