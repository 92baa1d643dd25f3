"""Average pooling and global average pooling (ALU ADD in the accumulator, then the requant
tail) on fsim, bit for bit against the numpy references."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType, PadValue
from avta.runtime.ops.pool import (GlobalPoolShape, GlobalPoolTiling, avg_pool2d,
                                   build_global_avg_pool, global_avg_pool, plan_global_avg_pool)
from avta.runtime.ops.reference import avg_pool_ref, global_avg_pool_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.ops.window import PlanError, WindowShape, window_tiling

# (h, w, k, stride, pad, shift): ResNet-style 2x2/2, a padded 3x3/2 (shift 3: sum/8), a 3x3/1.
GEOMETRIES = [(6, 8, 2, 2, 0, 2), (7, 7, 3, 2, 1, 3), (5, 6, 3, 1, 1, 3)]
# (threads, (th, tw, tcb) or None for the planner's tiling), each run of a test.
RUNS = [(2, None), (1, (1, 2, 1)), (2, (2, 3, 2))]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
def test_avg_pool(cfg, int8, device, geometry):
    h, w, k, stride, pad, shift = geometry
    x = int8((cfg.batch, 2 * cfg.block_out, h, w))
    rq = Requant(shift, (-128, 127))
    ref = avg_pool_ref(x, k=k, stride=stride, pad=pad, requant=rq)
    for threads, sizes in RUNS:
        tiling = None if sizes is None else window_tiling(WindowShape(*x.shape, k, pad, stride),
                                                          *sizes, threads)
        dev = device(cfg, schedule="random", seed=threads)
        out = avg_pool2d(dev, x, k=k, stride=stride, pad=pad, requant=rq, threads=threads,
                         tiling=tiling)
        np.testing.assert_array_equal(out, ref, err_msg=f"threads {threads}, tiles {sizes}")
    insns = dev.last_program.insns
    assert any(i.opcode == 4 and i.alu_opcode == AluOp.ADD for i in insns)
    loads = [i for i in insns if i.opcode == 0 and i.x_size and i.memory_type == MemType.ACC_8BIT]
    assert all(i.pad_value == PadValue.ZERO for i in loads)


def test_avg_pool_rounds_toward_minus_infinity(default_cfg, device):
    """A window's sum shifted right: floor, not round to nearest (−1/4 → −1, 3/4 → 0)."""
    cfg = default_cfg
    x = np.zeros((1, 16, 2, 4), np.int8)
    x[0, :, 0, 0] = -1                       # window 0: sum −1
    x[0, :, :, 2:] = [[1, 1], [1, 0]]        # window 1: sum 3
    rq = Requant(2)
    out = avg_pool2d(device(cfg), x, k=2, stride=2, requant=rq)
    np.testing.assert_array_equal(out, avg_pool_ref(x, k=2, stride=2, pad=0, requant=rq))
    assert (out[0, :, 0, 0] == -1).all() and (out[0, :, 0, 1] == 0).all()


def test_avg_pool_tails(default_cfg, int8, device):
    """No shift (the low byte of the sum), a ReLU clip, and a left shift."""
    cfg = default_cfg
    x = int8((1, 32, 5, 5))
    for rq in (Requant(), Requant(4, (0, 127)), Requant(-1)):
        out = avg_pool2d(device(cfg), x, k=3, stride=2, pad=1, requant=rq)
        np.testing.assert_array_equal(out, avg_pool_ref(x, k=3, stride=2, pad=1, requant=rq))


# (n blocks, c blocks, h, w)
PLANES = [(1, 2, 7, 7), (2, 3, 3, 5)]


@pytest.mark.parametrize("planes", PLANES, ids=lambda p: "x".join(map(str, p)))
def test_global_avg_pool(cfg, int8, device, planes):
    nb, cb, h, w = planes
    x = int8((nb * cfg.batch, cb * cfg.block_out, h, w))
    rq = Requant(5, (-128, 127))
    ref = global_avg_pool_ref(x, requant=rq)
    shape = GlobalPoolShape(*x.shape)
    # The planner's tiling, one block per tile, and planes summed in pieces of 4 (the last
    # piece shorter, and a piece of one element when h·w = 4k + 1).
    for tiling in (None, GlobalPoolTiling(1, h * w, 1), GlobalPoolTiling(1, 4, 2)):
        dev = device(cfg, schedule="random", seed=1)
        out = global_avg_pool(dev, x, requant=rq, tiling=tiling)
        assert out.shape == (x.shape[0], x.shape[1], 1, 1)
        np.testing.assert_array_equal(out, ref, err_msg=f"tiling {tiling}")
    assert plan_global_avg_pool(cfg, shape).piece == h * w


def test_global_avg_pool_resnet(default_cfg, int8, device):
    """ResNet-18's 7x7x512 → 1x1x512 before the classifier, ReLU-clipped."""
    cfg = default_cfg
    x = int8((1, 512, 7, 7), lo=0)
    rq = Requant(6, (0, 127))
    out = global_avg_pool(device(cfg), x, requant=rq)
    np.testing.assert_array_equal(out, global_avg_pool_ref(x, requant=rq))


def test_global_plan_splits_large_planes(tiny_cfg):
    """A 56x56 plane does not fit tiny's 256-row ACC: one block per tile, in pieces."""
    t = plan_global_avg_pool(tiny_cfg, GlobalPoolShape(1, 8, 56, 56))
    assert t.tcb == 1 and t.piece < 56 * 56
    assert t.threads * t.rows <= tiny_cfg.acc_depth


def test_pool_errors(default_cfg, device):
    cfg = default_cfg
    rq = Requant(2)
    with pytest.raises(PlanError, match="multiples of BATCH"):
        avg_pool2d(device(cfg), np.zeros((1, 8, 4, 4), np.int8), k=2, stride=2, requant=rq)
    with pytest.raises(PlanError, match="pad < k"):
        avg_pool2d(device(cfg), np.zeros((1, 16, 4, 4), np.int8), k=2, stride=2, pad=2,
                   requant=rq)
    with pytest.raises(PlanError, match="BLOCK_OUT = 16"):
        global_avg_pool(device(cfg), np.zeros((1, 24, 7, 7), np.int8), requant=rq)
    with pytest.raises(PlanError, match="ACC rows exceed"):
        build_global_avg_pool(cfg, GlobalPoolShape(1, 16, 64, 64), 0, 0, requant=rq,
                              tiling=GlobalPoolTiling(1, 4096, 2))
