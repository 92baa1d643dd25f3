"""Accumulators that start at the shifted bias: exact, and used only when exact."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType, Opcode
from avta.runtime.ops.conv2d import bias_bound, conv2d
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import PRODUCT_MAX, Requant


def _ops(program):
    """(GEMM resets, ALU opcodes) of a program's compute instructions."""
    resets = sum(1 for i in program.insns if i.opcode == Opcode.GEMM and i.reset)
    alus = [AluOp(i.alu_opcode) for i in program.insns if i.opcode == Opcode.ALU]
    return resets, alus


def test_bias_starts_acc_bound():
    """Exact while products · 2^14 + bound · 2^shift stays below 2^31."""
    rq = Requant(shift=8, clip=(0, 127))
    products = 4608                                      # 512 channels x 3x3
    room = (1 << 31) - 1 - products * PRODUCT_MAX
    assert rq.bias_starts_acc(room >> 8, products)
    assert not rq.bias_starts_acc((room >> 8) + 1, products)
    assert not rq.bias_starts_acc(None, products)
    assert not Requant(shift=-2).bias_starts_acc(0, products)     # a left shift loses bias bits
    assert Requant().bias_starts_acc(1000, products)
    assert bias_bound(None) is None and bias_bound([3, -70, 5]) == 70 and bias_bound([]) == 0


@pytest.mark.parametrize("shift, clip, use_clp", [(8, (0, 127), False), (0, (-128, 127), False),
                                                  (5, (-64, 64), True)])
def test_small_bias_starts_the_accumulators(default_cfg, rng, int8, device, shift, clip, use_clp):
    """No reset GEMM and no ADD: one MOV per tile, one left SHR of the bias rows (if shifted)."""
    cfg = default_cfg
    x = int8((1, 2 * cfg.block_in, 7, 6))
    w = int8((3 * cfg.block_out, 2 * cfg.block_in, 3, 3))
    bias = rng.integers(-1 << 14, 1 << 14, w.shape[0])
    rq = Requant(shift, clip, use_clp)
    dev = device(cfg)
    out = conv2d(dev, x, w, bias, stride=1, pad=1, requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, stride=1, pad=1, requant=rq))
    resets, alus = _ops(dev.last_program)
    assert resets == 0 and AluOp.ADD not in alus
    tiles = alus.count(AluOp.MAX if not use_clp else AluOp.CLP)
    # The bias rows: loaded once into the first ACC bank the accumulator buffers use and
    # shifted left there once, then copied by a MOV into the second bank if they use two
    # (conv_plan, conv_emit).
    loads = sum(1 for i in dev.last_program.insns
                if i.opcode == Opcode.LOAD and i.memory_type == MemType.ACC)
    assert loads == 1
    copies = alus.count(AluOp.MOV) - tiles
    assert copies in (0, 1)
    assert alus.count(AluOp.SHR) == (tiles + 1 if shift else 0)


def test_large_bias_is_added_after_the_shift(default_cfg, rng, int8, device):
    """A bias whose shifted value could wrap an int32 sum is added after the shift: still exact,
    including outputs where the folded sum would have wrapped."""
    cfg = default_cfg
    x = np.full((1, cfg.block_in, 4, 4), -128, np.int8)
    w = np.full((cfg.block_out, cfg.block_in, 3, 3), -128, np.int8)   # every product +2^14
    bias = np.full(cfg.block_out, (1 << 31) // (1 << 12) - 1)         # bias << 12 near 2^31
    bias[::2] = -bias[::2]
    rq = Requant(shift=12, clip=(-128, 127))
    assert not rq.bias_starts_acc(bias_bound(bias), cfg.block_in * 9)
    dev = device(cfg)
    out = conv2d(dev, x, w, bias, stride=1, pad=1, requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, stride=1, pad=1, requant=rq))
    resets, alus = _ops(dev.last_program)
    assert resets > 0 and AluOp.ADD in alus and AluOp.MOV not in alus
