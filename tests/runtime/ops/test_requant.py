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
        acc = s.upload(pack_bias(cfg, bias, requant), mem=MemType.ACC)
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


# -- fixed-point multipliers (ALU SCL, ALU_SCALE: 1) -----------------------------------------

@pytest.mark.parametrize("shift, pre_shift", [(1, 0), (7, 0), (12, 0), (20, 0), (3, 4)])
def test_a_multiplier_rounds_once(shift, pre_shift):
    """SCL's floor, then + 2^(s−1) and >> s: acc · 2^p · m / 2^(15+s) rounded half up, once."""
    rng = np.random.default_rng(shift)
    acc = rng.integers(-(1 << 24), 1 << 24, 5000)
    m = int(rng.integers(1 << 14, 1 << 15))
    q = Requant(shift, multiplier=m, pre_shift=pre_shift, offset=1 << (shift - 1))
    exact = (2 * (acc << pre_shift) * m + (1 << (15 + shift))) // (1 << (16 + shift))
    np.testing.assert_array_equal(q.reference(acc), (exact & 0xFF).astype(np.uint8).view(np.int8))


def test_multiplier_values_are_checked():
    for bad in (0, -3, 1 << 15, 2.5, True):
        with pytest.raises(ValueError, match="multiplier"):
            Requant(3, multiplier=bad)
    with pytest.raises(ValueError, match="not both"):
        Requant(3, multiplier=5, scale=0.5)
    with pytest.raises(ValueError, match="pre_shift"):
        Requant(3, pre_shift=2)
    with pytest.raises(ValueError, match="pre_shift"):
        Requant(3, multiplier=5, pre_shift=40)


@pytest.mark.parametrize("bias_first", [False, True])
def test_conv2d_with_a_multiplier_on_the_device(tiny_cfg, device, int8, bias_first):
    cfg = tiny_cfg.replace(alu_scale=1)
    x, w = int8((1, 4, 5, 6)), int8((8, 4, 3, 3))
    bias = np.random.default_rng(4).integers(-5000, 5000, 8).astype(np.int32)
    q = Requant(9, (-100, 120), bias_first=bias_first, multiplier=23117,
                offset=(1 << 8) + (7 << 9))
    dev = device(cfg)
    got = _conv_pad_value(dev, x, w, bias, q)
    np.testing.assert_array_equal(got, conv2d_ref(x, w, bias, pad=1, pad_value=-128,
                                                  requant=q))
    assert AluOp.SCL in {insn.alu_opcode for insn in dev.last_program.insns
                         if insn.opcode == 4}


def test_a_multiplier_needs_alu_scale(tiny_cfg, device, int8):
    x, w = int8((1, 4, 5, 6)), int8((8, 4, 3, 3))
    bias = np.zeros(8, np.int32)
    with pytest.raises(ValueError, match="ALU_SCALE: 1"):
        _conv_pad_value(device(tiny_cfg), x, w, bias, Requant(9, multiplier=23117))


def _per_channel(rng, channels, zy=3):
    """A per-channel requantization: random multipliers in [2^14, 2^15), shifts 8..14."""
    m = tuple(int(v) for v in rng.integers(1 << 14, 1 << 15, channels))
    s = tuple(int(v) for v in rng.integers(8, 15, channels))
    return Requant(0, (-128, 127), bias_first=True, multiplier=m, shifts=s,
                   offsets=tuple(zy * (1 << k) + (1 << (k - 1)) for k in s))


def test_per_channel_values_are_checked():
    with pytest.raises(ValueError, match="needs 2 shifts"):
        Requant(bias_first=True, multiplier=(5, 6), shifts=(3,), offsets=(0, 0))
    with pytest.raises(ValueError, match="shift 0 and offset 0"):
        Requant(3, bias_first=True, multiplier=(5,), shifts=(3,), offsets=(0,))
    with pytest.raises(ValueError, match="per-channel shift"):
        Requant(bias_first=True, multiplier=(5,), shifts=(0,), offsets=(0,))
    with pytest.raises(ValueError, match="belong to a per-channel"):
        Requant(3, shifts=(3,), offsets=(0,))


@pytest.mark.parametrize("shape", [(1, 4, 5, 6), (2, 8, 4, 4)])
def test_conv2d_per_channel_on_the_device(tiny_cfg, device, int8, shape):
    """Multipliers, offsets and shifts as resident ACC rows beside the bias: SCL, ADD, SHR with
    two operands, against the reference channel by channel."""
    cfg = tiny_cfg.replace(alu_scale=1)
    rng = np.random.default_rng(shape[1])
    x, w = int8(shape), int8((12, shape[1], 3, 3))
    bias = rng.integers(-5000, 5000, 12).astype(np.int32)
    q = _per_channel(rng, 12)
    dev = device(cfg)
    got = _conv_pad_value(dev, x, w, bias, q)
    want = conv2d_ref(x, w, bias, pad=1, pad_value=-128, requant=q)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20              # not all clipped
    two_operand = {insn.alu_opcode for insn in dev.last_program.insns
                   if insn.opcode == 4 and not insn.use_imm}
    assert {AluOp.SCL, AluOp.ADD, AluOp.SHR} <= two_operand


# -- 24-bit multipliers (ALU_SCALE: 2) and two Q15 passes ------------------------------------

def _wide_per_channel(rng, channels, zy=-128):
    """A per-channel requantization with Q23 multipliers in [2^22, 2^23), shifts 6..12."""
    m = tuple(int(v) for v in rng.integers(1 << 22, 1 << 23, channels))
    s = tuple(int(v) for v in rng.integers(6, 13, channels))
    return Requant(0, (-128, 127), bias_first=True, multiplier=m, shifts=s, multiplier_bits=24,
                   offsets=tuple(zy * (1 << k) + (1 << (k - 1)) for k in s))


def test_a_24_bit_multiplier_rounds_once():
    """SCL's floor with a Q23 row, then + 2^(s−1) and >> s: acc · m / 2^(23+s) rounded half up."""
    rng = np.random.default_rng(24)
    q = _wide_per_channel(rng, 3, zy=0)
    acc = rng.integers(-(1 << 20), 1 << 20, (400, 3))
    m, s = (np.array(v, np.int64) for v in (q.multiplier, q.shifts))
    exact = (2 * acc * m + (1 << (23 + s))) // (1 << (24 + s))
    np.testing.assert_array_equal(q.reference(acc),
                                  np.clip(exact, -128, 127).astype(np.int8))


def test_two_multipliers_round_once():
    """A pool's sum plus ``pre_offset``, times m1 exactly (shifted left by 15 first), SCL m2,
    then the rounding shift: (acc + c) · m1 · m2 / 2^(15+s) rounded half up, once."""
    rng = np.random.default_rng(2)
    acc = rng.integers(-(1 << 14), 1 << 14, 5000)
    q = Requant(20, multiplier=23117, multiplier2=17001, pre_offset=-700, pre_shift=15,
                offset=(5 << 20) + (1 << 19))
    exact = (2 * (acc - 700) * 23117 * 17001 + (1 << 35)) // (1 << 36) + 5
    np.testing.assert_array_equal(q.reference(acc), (exact & 0xFF).astype(np.uint8).view(np.int8))


def test_wide_and_two_pass_values_are_checked():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="multiplier_bits"):
        Requant(3, multiplier=5, multiplier_bits=20)
    with pytest.raises(ValueError, match="per-channel"):
        Requant(3, multiplier=5, multiplier_bits=24)
    with pytest.raises(ValueError, match="multiplier"):
        Requant(bias_first=True, multiplier=(1 << 23,), shifts=(3,), offsets=(0,),
                multiplier_bits=24)
    with pytest.raises(ValueError, match="multiplier2"):
        Requant(3, multiplier2=5)
    with pytest.raises(ValueError, match="multiplier2"):
        Requant(3, multiplier=(5,), multiplier2=5, bias_first=True, shifts=(3,), offsets=(0,))
    with pytest.raises(ValueError, match="pre_offset"):
        Requant(3, multiplier=5, pre_offset=1 << 15)
    assert _wide_per_channel(rng, 2).multiplier_bits == 24


def test_a_24_bit_multiplier_needs_alu_scale_2(tiny_cfg, device, int8):
    rng = np.random.default_rng(1)
    x, w = int8((1, 4, 5, 6)), int8((8, 4, 3, 3))
    with pytest.raises(ValueError, match="ALU_SCALE: 2"):
        _conv_pad_value(device(tiny_cfg.replace(alu_scale=1)), x, w, np.zeros(8, np.int32),
                        _wide_per_channel(rng, 8))


@pytest.mark.parametrize("bits", [16, 24])
def test_conv2d_per_channel_on_a_24_bit_device(tiny_cfg, device, int8, bits):
    """Q23 rows on ALU_SCALE: 2, and Q15 rows there too (shifted left by 8 when packed)."""
    cfg = tiny_cfg.replace(alu_scale=2)
    rng = np.random.default_rng(bits)
    x, w = int8((1, 4, 5, 6)), int8((8, 4, 3, 3))
    bias = rng.integers(-5000, 5000, 8).astype(np.int32)
    q = _wide_per_channel(rng, 8) if bits == 24 else _per_channel(rng, 8)
    got = _conv_pad_value(device(cfg), x, w, bias, q)
    want = conv2d_ref(x, w, bias, pad=1, pad_value=-128, requant=q)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20


def test_add_of_inputs_scaled_by_two_factors(tiny_cfg, device, int8):
    """Each input times m1 exactly (left shift by 15, SCL), then SCL m2 rounding down; the sum
    requantized: on the device as the reference, with Q15 immediates only (ALU_SCALE: 1)."""
    a, b = int8((2, 8, 3, 5)), int8((2, 8, 3, 5))
    q = Requant(17, (-128, 127), offset=(3 << 17) + (1 << 16))
    kw = dict(scale_a=23117, scale_a2=17001, scale_b=16500, scale_b2=20000)
    got = add(device(tiny_cfg.replace(alu_scale=1)), a, b, requant=q, **kw)
    want = add_ref(a, b, requant=q, **kw)
    np.testing.assert_array_equal(got, want)
    terms = (a.astype(np.int64) * 23117 * 17001 >> 15) + (b.astype(np.int64) * 16500 * 20000 >> 15)
    np.testing.assert_array_equal(want, np.clip((terms + (3 << 17) + (1 << 16)) >> 17, -128, 127))


# -- per-channel rows that share a shift -------------------------------------------------------

def _two_operand(program):
    return [AluOp(i.alu_opcode) for i in program.insns if i.opcode == 4 and not i.use_imm
            and i.alu_opcode != AluOp.MOV]


@pytest.mark.parametrize("zy, ops", [(0, [AluOp.SCL]), (-128, [AluOp.SCL, AluOp.ADD])],
                         ids=["offsets-as-immediates", "offsets-as-a-row"])
def test_per_channel_rows_with_one_shift_shift_by_an_immediate(tiny_cfg, device, int8, zy, ops):
    """Q23 multipliers of one shift (a per-tensor scale as the 24-bit import writes it, or
    per-channel scales in one binade): the same values, but SHR by an immediate, and the offset
    too when it is a rounding half alone (ADD and SHR immediates); an offset with a zero point
    stays a row (its immediates would take three passes, the row one, a cycle a step but two at
    each output block's first)."""
    cfg = tiny_cfg.replace(alu_scale=2)
    rng = np.random.default_rng(7)
    x, w = int8((1, 4, 5, 6)), int8((8, 4, 3, 3))
    bias = rng.integers(-5000, 5000, 8).astype(np.int32)
    m = tuple(int(v) for v in rng.integers(1 << 22, 1 << 23, 8))
    q = Requant(0, (-128, 127), bias_first=True, multiplier=m, shifts=(9,) * 8,
                multiplier_bits=24, offsets=((zy << 9) + (1 << 8),) * 8)
    dev = device(cfg)
    got = _conv_pad_value(dev, x, w, bias, q)
    want = conv2d_ref(x, w, bias, pad=1, pad_value=-128, requant=q)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20
    assert sorted(set(_two_operand(dev.last_program))) == sorted(ops)


def test_per_channel_rows_of_different_shifts_keep_three_row_passes(tiny_cfg):
    """Shifts that differ between channels need the rows: SCL, ADD and SHR read them."""
    from avta.runtime.ops.conv_tail import AluRecorder
    rng = np.random.default_rng(3)
    passes = AluRecorder()
    _wide_per_channel(rng, 8).emit(passes, "same", None, lambda k: f"row {k}")
    assert [(op, kernel) for kernel, op, imm in passes.insns if imm is None] == [
        (AluOp.SCL, "row 0"), (AluOp.ADD, "row 1"), (AluOp.SHR, "row 2")]
