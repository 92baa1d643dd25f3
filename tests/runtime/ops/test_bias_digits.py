"""The bias as one GEMM step (runtime/ops/bias_digits.py): every bias within the bound, on every
BLOCK_IN the configurations use, is the GEMM step of the constant row against its digits."""

import numpy as np
import pytest

from avta.runtime.ops.bias_digits import bias_digits, constant_row, one_step_bound


def _step(digits, block_in):
    """What one GEMM step adds: int8 × int8 products summed in int32."""
    return digits.astype(np.int32) @ constant_row(block_in).astype(np.int32)


@pytest.mark.parametrize("block_in", [2, 4, 8, 16, 32, 64])
def test_every_bias_within_the_bound_is_one_step(block_in):
    bound = one_step_bound(block_in)
    for lo in range(-bound, bound + 1, 1 << 17):        # in chunks: 64 lanes of 2M biases
        bias = np.arange(lo, min(lo + (1 << 17), bound + 1), dtype=np.int64)
        digits = bias_digits(bias, block_in)
        assert digits.dtype == np.int8
        np.testing.assert_array_equal(_step(digits, block_in), bias)


def test_the_bound_on_huge_and_default():
    assert one_step_bound(64) == 63 * 16256 + 127 == 1_024_255
    assert one_step_bound(16) == 15 * 16256 + 127


@pytest.mark.parametrize("block_in", [4, 16, 64])
def test_past_the_bound_raises(block_in):
    bound = one_step_bound(block_in)
    for bias in (bound + 1, -bound - 1, 1 << 31 - 1, -(1 << 31)):
        with pytest.raises(ValueError, match="beyond one GEMM step"):
            bias_digits([0, bias], block_in)


def test_constant_row():
    np.testing.assert_array_equal(constant_row(4), [1, -128, -128, -128])
    for bad in (1, 0, -4, 2.0, True, None):
        with pytest.raises(ValueError, match="BLOCK_IN"):
            constant_row(bad)
