"""The requantization tail's imported-model features: a bias before the shift, a
constant offset made of ALU immediates around the shift, a host-only real scale; and a
convolution whose padding holds −128, and an add with one input shifted left. On fsim (and on
tsim through the mirrored ``device`` fixture) bit for bit against the numpy references."""

import numpy as np
import pytest

from avta.isa.enums import AluOp
from avta.runtime.ops.elementwise import add
from avta.runtime.ops.reference import add_ref, conv2d_acc, conv2d_ref
from avta.runtime.ops.requant import IMM_MAX, IMM_MIN, Requant


def _alu(steps, acc):
    """``steps`` of :meth:`Requant._offset_steps` run as the ALU runs them on int32 lanes."""
    r = np.asarray(acc, np.int64)
    for op, imm in steps:
        assert IMM_MIN <= imm <= IMM_MAX
        r = r + imm if op == AluOp.ADD else (r >> imm if imm >= 0 else r << -imm)
    return r


@pytest.mark.parametrize("shift", [0, 1, 5, 14, 15, 17, 29])
def test_offset_steps_are_the_formula(shift):
    """Every offset the decomposition takes gives ⌊(acc + offset) / 2^shift⌋ exactly."""
    rng = np.random.default_rng(shift)
    acc = rng.integers(-(1 << 30), 1 << 30, 2000)
    for offset in [0, 1, (1 << shift) - 1 if shift else 0, -(1 << shift), 12345 << shift,
                   -77 * (1 << shift) + (1 << max(shift - 1, 0)),
                   *rng.integers(-(1 << 20), 1 << 20, 5)]:
        try:
            q = Requant(shift, offset=int(offset))
        except ValueError:
            # only an offset beyond int32, or one whose part after the shift is beyond 16 bits
            assert not -(1 << 31) <= offset < 1 << 31 or \
                not IMM_MIN <= (int(offset) >> shift) <= IMM_MAX
            continue
        np.testing.assert_array_equal(_alu(q._offset_steps(), acc), (acc + offset) >> shift)


def test_offset_with_a_left_shift_and_bad_values():
    np.testing.assert_array_equal(Requant(-2, offset=-5).reference(np.array([3, -4])),
                                  np.array([7, -21], np.int8))
    with pytest.raises(ValueError, match="16-bit ALU immediate"):
        Requant(0, offset=1 << 20)
    with pytest.raises(ValueError, match="zero_point is for a host"):
        Requant(3, zero_point=4)
    with pytest.raises(ValueError, match="positive real"):
        Requant(scale=-1.0)
    for scale in (1e300, 1e-50):            # inf and 0 in float32, where the host multiplies
        with pytest.raises(ValueError, match="float32 holds"):
            Requant(scale=scale)


def test_a_scale_is_the_hosts():
    q = Requant(clip=(-128, 127), offset=-10, scale=0.3, zero_point=5)
    acc = np.array([0, 10, 15, 25, 1000, -1000])
    # round_half_even((acc - 10) * 0.3) + 5: 3 → -3+5, 0 → 5, 1.5 → 2+5, 4.5 → 4+5, clipped
    np.testing.assert_array_equal(q.reference(acc), np.array([2, 5, 7, 9, 127, -128], np.int8))
    with pytest.raises(ValueError, match="runs on the host"):
        q.emit(None, None)


@pytest.mark.parametrize("bias_first", [False, True])
def test_conv2d_bias_before_the_shift_and_padding_of_minus_128(tiny_cfg, device, int8,
                                                                bias_first):
    x, w = int8((1, 4, 5, 6)), int8((8, 4, 3, 3))
    bias = np.random.default_rng(3).integers(-5000, 5000, 8).astype(np.int32)
    q = Requant(6, (-100, 120), bias_first=bias_first, offset=-200 if bias_first else 0)
    got = _conv_pad_value(device(tiny_cfg), x, w, bias, q)
    np.testing.assert_array_equal(got, conv2d_ref(x, w, bias, pad=1, pad_value=-128,
                                                  requant=q))
    # the reference's padding of -128 is an input explicitly padded with -128
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-128)
    np.testing.assert_array_equal(conv2d_acc(x, w, pad=1, pad_value=-128), conv2d_acc(padded, w))


def _conv_pad_value(device, x, w, bias, requant):
    """conv2d on the device with padding −128 (what the executor builds for pad_value)."""
    from avta.isa.enums import MemType
    from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d, pack_bias
    from avta.runtime.ops.conv_plan import Conv2dShape
    from avta.runtime.packing import pack_nchw, pack_oihw
    cfg = device.cfg
    shape = Conv2dShape(*x.shape, w.shape[0], 3, 3, 1, 1, pad_value=-128)
    with device.scratch() as s:
        inp = s.upload(pack_nchw(x, cfg.batch, cfg.block_in), mem=MemType.INP)
        wgt = s.upload(pack_oihw(w, cfg.block_out, cfg.block_in), mem=MemType.WGT)
        acc = s.upload(pack_bias(cfg, bias), mem=MemType.ACC)
        out = s.alloc(shape.n * shape.cout * shape.oh * shape.ow, mem=MemType.OUT)
        device.run(build_conv2d(cfg, shape, Conv2dBuffers(
            inp.elem(cfg, MemType.INP), wgt.elem(cfg, MemType.WGT), out.elem(cfg, MemType.OUT),
            acc.elem(cfg, MemType.ACC)), requant=requant))
        return device.read_nchw(out, shape.n, shape.cout, shape.oh, shape.ow)


@pytest.mark.parametrize("shift_a", [0, 1, 3])
def test_add_with_a_shifted_input_and_an_offset(tiny_cfg, device, int8, shift_a):
    a, b = int8((1, 8, 3, 5)), int8((1, 8, 3, 5))
    q = Requant(3, (-128, 127), offset=-(5 << shift_a) + 3 + 4 + (-7 << 3))
    out = add(device(tiny_cfg), a, b, requant=q, shift_a=shift_a)
    np.testing.assert_array_equal(out, add_ref(a, b, shift_a=shift_a, requant=q))
    wide = (a.astype(np.int64) << shift_a) + b - (5 << shift_a) + 3 + 4
    np.testing.assert_array_equal(out, np.clip((wide >> 3) - 7, -128, 127))
