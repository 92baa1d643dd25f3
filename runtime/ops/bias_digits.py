"""A bias as one GEMM step: the operands that let the GEMM core, not the ALU, start a tile's
accumulators at a per-channel bias.

One GEMM step adds ``Σ_i inp[i] · wgt[o][i]`` over the BLOCK_IN lanes to each output lane ``o``
(int8 × int8, int32 sums). With the INP row of constants :func:`constant_row` — 1 in lane 0,
−128 in the BLOCK_IN − 1 others — and a WGT row of int8 digits ``d`` per output channel, the
step adds ``d_0 − 128 · (d_1 + … + d_{BI−1})``. :func:`bias_digits` writes every bias in
:func:`one_step_bound` that way, so a reset GEMM and this step start the accumulators at the
bias, as the ALU MOV of the bias rows does (:mod:`.conv2d`), on the other core.

The digits: ``d_0 ≡ bias (mod 128)``, taken in 0..127, or in −128..−1 when the sum the other
lanes must carry, ``S = (d_0 − bias) / 128``, is then above their largest, ``(BI − 1) · 127``;
``S`` is spread over the other lanes, each at most 127 and at least −128. Every bias from
``−((BI − 1) · 16,256 + 128)`` to ``(BI − 1) · 16,384 + 127`` has digits; the bound that holds
for either sign, :func:`one_step_bound`, is ``(BI − 1) · 16,256 + 127`` (16,256 = 127 · 128).
"""

import numpy as np

__all__ = ["one_step_bound", "constant_row", "bias_digits"]

#: The weight of every INP lane but the first: the int8 whose product with a digit spans most.
_LANE = -128
#: The int8 range of one digit.
_DIGIT_MIN, _DIGIT_MAX = -128, 127


def one_step_bound(block_in):
    """The largest ``|bias|`` that one GEMM step of :func:`constant_row` against
    :func:`bias_digits` reaches for both signs: ``(block_in − 1) · 16,256 + 127``."""
    _check_block_in(block_in)
    return (block_in - 1) * (-_LANE) * _DIGIT_MAX + _DIGIT_MAX


def constant_row(block_in):
    """``int8[block_in]``: the INP row every output row's bias step reads (1, then −128 in the
    other lanes)."""
    _check_block_in(block_in)
    row = np.full(block_in, _LANE, np.int8)
    row[0] = 1
    return row


def bias_digits(bias, block_in):
    """``int8[len(bias), block_in]``: each bias's digits, so that ``digits @ constant_row(block_in)``
    (in int32) is ``bias``. A bias beyond :func:`one_step_bound` raises ``ValueError``: the
    caller starts the accumulators with an ALU MOV instead."""
    bound = one_step_bound(block_in)
    b = np.asarray(bias, dtype=np.int64).reshape(-1)
    if b.size and int(np.abs(b).max()) > bound:
        raise ValueError(f"bias {int(b[np.abs(b).argmax()])} is beyond one GEMM step's "
                         f"±{bound} (BLOCK_IN {block_in})")
    low = b % 128                                       # d_0 in 0..127
    rest = (low - b) // 128                             # S, the other lanes' sum
    over = rest > (block_in - 1) * _DIGIT_MAX
    low, rest = np.where(over, low - 128, low), np.where(over, rest - 1, rest)
    digits = np.zeros((b.size, block_in), np.int64)
    digits[:, 0] = low
    for lane in range(1, block_in):                     # greedy: each lane takes what it can
        d = np.clip(rest, _DIGIT_MIN, _DIGIT_MAX)
        digits[:, lane] = d
        rest = rest - d
    assert not rest.any(), "the bound leaves no sum the lanes cannot carry"
    return digits.astype(np.int8)


def _check_block_in(block_in):
    if isinstance(block_in, bool) or not isinstance(block_in, (int, np.integer)) \
            or block_in < 2:
        raise ValueError(f"BLOCK_IN {block_in!r} must be an integer of at least 2 (one lane of "
                         f"1, the others of -128)")
