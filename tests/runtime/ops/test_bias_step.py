"""The GEMM core starts the accumulators at the bias (runtime/ops/bias_digits.py, the start
"gemm" of conv_tail.plan_options): a reset GEMM and one GEMM step of the bias's digits, with the
tail's first two passes beside them, where one step holds the bias and the planner's estimate
says it is faster than the ALU MOV. Outputs bit for bit the reference's; past the bound the
MOV start stays."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.runtime.ops.bias_digits import one_step_bound
from avta.runtime.ops.conv2d import conv2d, pack_bias_step
from avta.runtime.ops.conv_plan import Conv2dShape, plan_conv2d
from avta.runtime.ops.conv_tail import bias_step_fits, plan_layer, plan_options
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant


def _per_channel(rng, channels, bits=16):
    """Per-channel fixed point: multipliers of ``bits`` bits, shifts 8..11,
    a rounding half and a zero point in the offsets, the bias first, clip 0..127."""
    m = tuple(int(v) for v in rng.integers(1 << (bits - 2), 1 << (bits - 1), channels))
    s = tuple(int(v) for v in rng.integers(8, 12, channels))
    return Requant(0, (0, 127), bias_first=True, multiplier=m, shifts=s, multiplier_bits=bits,
                   offsets=tuple(3 * (1 << k) + (1 << (k - 1)) for k in s))


def _starts(program):
    """``(reset GEMMs, bias-row MOVs)`` of a program; the MOVs before the load stage's first
    LOAD copy the resident rows into the second ACC bank (conv_emit), and start no tile."""
    resets = sum(1 for i in program.insns if i.opcode == Opcode.GEMM and i.reset)
    first_load = next(k for k, i in enumerate(program.insns)
                      if i.opcode == Opcode.LOAD and i.memory_type in (MemType.INP, MemType.WGT))
    movs = sum(1 for i in program.insns[first_load:] if i.opcode == Opcode.ALU
               and i.alu_opcode == AluOp.MOV and not i.use_imm)
    return resets, movs


def _run(dev, x, w, bias, q, stride, tiling=None):
    got = conv2d(dev, x, w, bias, stride=stride, requant=q, tiling=tiling)
    want = conv2d_ref(x, w, bias, stride=stride, requant=q)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20                      # not all clipped
    return _starts(dev.last_program)


#: ResNet-18's C4 at a quarter of its pixels: a strided 1x1 whose tail binds (ALU-bound).
HUGE_C4 = Conv2dShape(1, 64, 28, 28, 128, 1, 1, 0, 2)


def test_huge_strided_1x1_starts_by_the_gemm_core(device, rng):
    """On huge the planner takes the GEMM start for the strided 1x1 (the estimate says it is
    faster), the bias at the bound of one step and at its negative: bit-exact on fsim."""
    cfg = load_config("huge").replace(alu_scale=2)
    sh = HUGE_C4
    x = rng.integers(-128, 128, (sh.n, sh.cin, sh.h, sh.w), dtype=np.int8)
    w = rng.integers(-128, 128, (sh.cout, sh.cin, 1, 1), dtype=np.int8)
    q = _per_channel(rng, sh.cout, bits=24)
    bound = one_step_bound(cfg.block_in)
    bias = rng.integers(-1 << 14, 1 << 14, sh.cout).astype(np.int32)
    bias[:2] = bound, -bound
    assert bias_step_fits(cfg, sh, q, True, bound)
    assert plan_layer(cfg, sh, requant=q, has_bias=True, bias_bound=bound,
                      bias_step=True).bias_step
    resets, movs = _run(device(cfg, dram_size=4 << 20), x, w, bias, q, sh.stride)
    assert resets > 1 and movs == 0


def test_huge_past_the_bound_starts_by_the_mov(device, rng):
    """One past the bound one GEMM step holds: no bias step, the ALU MOV start, bit-exact."""
    cfg = load_config("huge").replace(alu_scale=2)
    sh = HUGE_C4
    x = rng.integers(-128, 128, (sh.n, sh.cin, sh.h, sh.w), dtype=np.int8)
    w = rng.integers(-128, 128, (sh.cout, sh.cin, 1, 1), dtype=np.int8)
    q = _per_channel(rng, sh.cout, bits=24)
    bias = rng.integers(-1 << 14, 1 << 14, sh.cout).astype(np.int32)
    bias[5] = -(one_step_bound(cfg.block_in) + 1)
    assert pack_bias_step(cfg, bias, q) is None
    assert not bias_step_fits(cfg, sh, q, True, one_step_bound(cfg.block_in) + 1)
    resets, movs = _run(device(cfg, dram_size=4 << 20), x, w, bias, q, sh.stride)
    assert movs > 0


@pytest.mark.parametrize("config", ["tiny", "default"])
def test_gemm_start_bit_exact_on_small_configurations(config, device, rng):
    """The GEMM start forced on (the tiling planned for it), the bias at the bound of tiny's and
    default's BLOCK_IN: bit-exact (on tsim too: both configurations are mirrored)."""
    cfg = load_config(config).replace(alu_scale=1)
    sh = Conv2dShape(1, 2 * cfg.block_in, 8, 8, 4 * cfg.block_out, 1, 1, 0, 2)
    x = rng.integers(-128, 128, (sh.n, sh.cin, sh.h, sh.w), dtype=np.int8)
    w = rng.integers(-128, 128, (sh.cout, sh.cin, 1, 1), dtype=np.int8)
    q = _per_channel(rng, sh.cout)
    bound = one_step_bound(cfg.block_in)
    bias = rng.integers(-bound, bound + 1, sh.cout).astype(np.int32)
    bias[:2] = bound, -bound
    options = plan_options(cfg, sh, q, True, bound, gemm=True)
    assert options["start"] == "gemm"
    t = plan_conv2d(cfg, sh, threads=2, **options)
    assert t.bias_step
    resets, movs = _run(device(cfg), x, w, bias, q, sh.stride, tiling=t)
    assert resets > 1 and movs == 0


def test_a_gemm_start_past_the_bound_is_refused():
    cfg = load_config("default")
    sh = Conv2dShape(1, 16, 8, 8, 32, 1, 1, 0, 2)
    q = _per_channel(np.random.default_rng(1), 32)
    with pytest.raises(ValueError, match="cannot start these accumulators"):
        plan_options(cfg, sh, q, True, one_step_bound(cfg.block_in) + 1, gemm=True)
    # a bias added after the shift (upstream's tail) never starts the accumulators by a GEMM
    assert not bias_step_fits(cfg, sh, Requant(8, (0, 127)), True, 1 << 14)
