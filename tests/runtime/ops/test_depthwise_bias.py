"""Depthwise conv2d with what an imported model needs: an int32 bias added before the shift,
padding that holds −128 (an input whose zero point is −128), and a per-channel fixed-point
requantization (multipliers, offsets and shifts in ACC rows after the bias rows), on the GEMM
core and with the ALU, bit for bit against the numpy reference."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, Opcode
from avta.runtime.ops.depthwise import PATHS, depthwise_conv2d, plan_depthwise
from avta.runtime.ops.reference import depthwise_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.ops.window import WindowShape


def _per_channel(rng, channels, zy=-128):
    """Q15 multipliers in [2^14, 2^15) and shifts 8..11, one per channel."""
    m = tuple(int(v) for v in rng.integers(1 << 14, 1 << 15, channels))
    s = tuple(int(v) for v in rng.integers(8, 12, channels))
    return Requant(0, (-128, 127), bias_first=True, multiplier=m, shifts=s,
                   offsets=tuple(zy * (1 << k) + (1 << (k - 1)) for k in s))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("pad_value", [0, -128])
@pytest.mark.parametrize("per_channel", [False, True], ids=["shift", "per-channel"])
def test_bias_padding_and_channel_rows(tiny_cfg, device, int8, path, pad_value, per_channel):
    cfg = tiny_cfg.replace(alu_scale=1)
    rng = np.random.default_rng(11)
    c = 3 * cfg.block_out
    x, w = int8((cfg.batch, c, 7, 6)), int8((c, 1, 3, 3))
    bias = rng.integers(-3000, 3000, c).astype(np.int32)
    rq = _per_channel(rng, c) if per_channel else Requant(
        7, (-128, 127), bias_first=True, offset=(-5 << 7) + (1 << 6))
    dev = device(cfg)
    out = depthwise_conv2d(dev, x, w, bias, stride=2, pad=1, pad_value=pad_value, requant=rq,
                           path=path)
    want = depthwise_ref(x, w, bias, stride=2, pad=1, pad_value=pad_value, requant=rq)
    np.testing.assert_array_equal(out, want)
    assert len(np.unique(want)) > 20                        # not all clipped
    ops = {(i.opcode, getattr(i, "alu_opcode", None)) for i in dev.last_program.insns}
    assert ((Opcode.GEMM, None) in ops) == (path == "gemm")
    assert ((Opcode.ALU, AluOp.SCL) in ops) == per_channel


def test_the_reference_pads_with_the_pad_value(int8):
    """The padding is what the reference adds when pad_value is −128: a 1×1 window of weight 1
    at a corner with pad 1 sees −128."""
    x = int8((1, 4, 3, 3))
    w = np.zeros((4, 1, 3, 3), np.int8)
    w[:, 0, 0, 0] = 1
    out = depthwise_ref(x, w, pad=1, pad_value=-128, requant=Requant(0, (-128, 127)))
    assert (out[:, :, 0, :] == -128).all() and (out[:, :, :, 0] == -128).all()
    np.testing.assert_array_equal(out[:, :, 1:, 1:], x[:, :, :2, :2])


def test_rows_are_counted_by_both_estimates(default_cfg):
    """A bias and channel rows cost both paths something: their estimates grow."""
    cfg = default_cfg.replace(alu_scale=1)
    shape = WindowShape(1, 64, 14, 14, 3, 1, 1)
    plain = plan_depthwise(cfg, shape, requant=Requant(7, (-128, 127)))
    rows = plan_depthwise(cfg, shape, requant=_per_channel(np.random.default_rng(0), 64),
                          has_bias=True)
    assert rows.gemm_cycles > plain.gemm_cycles and rows.alu_cycles > plain.alu_cycles
