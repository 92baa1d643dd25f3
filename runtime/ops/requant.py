"""Requantization: the ALU tail that turns 32-bit accumulators into 8-bit outputs.

Upstream's conv2d and GEMM tests compute ``clip((acc >> shift) + bias, lo, hi)`` and keep the low
8 bits; on VTA that is ALU SHR with an immediate, ALU ADD of a bias row,
then either MIN and MAX with immediates or the Intel Labs CLP (clip to [−b, b], docs/isa.md §3.4).
STORE writes the low 8 bits of each lane (OUT mirrors ACC, docs/isa.md §3).

When no sum can overflow, the bias costs nothing after the GEMM: ``(acc >> s) + bias`` equals
``(acc + (bias << s)) >> s`` (``bias << s`` is a multiple of ``2^s``), so the accumulators can
start at ``bias << s`` — one ALU MOV per row instead of the reset GEMM — and the tail drops the
ADD (:meth:`Requant.bias_starts_acc` says when that is exact).

Imported models (docs/onnx.md) need two more things: a bias in accumulator units added *before*
the shift (``bias_first``; the accumulators can always start at it), and a constant ``offset``
added before the shift, which is how a rounding half-unit and zero points reach ops that have no
bias rows (pools, the residual add). A ``scale`` (a real multiplier) is the host's
requantization: such a node cannot run on the accelerator and the executor runs it with the
numpy reference.
"""

import math
from dataclasses import dataclass

import numpy as np

from avta.isa.enums import AluOp
from avta.isa.formats import IMM_BITS

__all__ = ["Requant", "IMM_MIN", "IMM_MAX", "SHIFT_MIN", "SHIFT_MAX", "PRODUCT_MAX"]

#: The ALU immediate is a signed IMM_BITS-bit field (docs/isa.md §2).
IMM_MIN, IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1
#: SHR takes B[5:0] as a signed 6-bit amount (docs/isa.md §3.4).
SHIFT_MIN, SHIFT_MAX = -32, 31
#: The largest magnitude of one int8 × int8 product, (−128)·(−128).
PRODUCT_MAX = 1 << 14
#: An offset is an int32.
IMM32_MIN, IMM32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class Requant:
    """``clip((acc >> shift) + bias, lo, hi)``, then the low 8 bits.

    Attributes
    ----------
    shift : int
        Arithmetic right shift (negative: left shift), −32..31; 0 emits no SHR.
    clip : tuple or None
        ``(lo, hi)`` inclusive bounds within the 16-bit immediate, or ``None`` for no clip.
    use_clp : bool
        Clip with one CLP (needs ``lo == −hi``) instead of MIN then MAX.
    bias_first : bool
        Add the node's bias to the accumulator before the shift (accumulator units) instead of
        after it (output units).
    offset : int
        A constant added to the accumulator before a right shift, or after a left shift:
        ``(acc + offset) >> shift``; with ``offset = 2^(shift−1)`` the shift rounds to nearest,
        ties toward +∞. On the device: ALU ADD immediates around the SHR (:meth:`emit`).
    scale : float or None
        The host's requantization ``round_half_even(float32(acc + bias + offset) · scale) +
        zero_point`` (what onnxruntime computes) in place of the shift; a node with a scale
        runs on the host.
    zero_point : int
        With a ``scale``: the output's zero point, added after the rounding (without a scale it
        must be 0: the shift's offset carries it).
    """
    shift: int = 0
    clip: tuple = None
    use_clp: bool = False
    bias_first: bool = False
    offset: int = 0
    scale: float = None
    zero_point: int = 0


    def __post_init__(self):
        if not SHIFT_MIN <= self.shift <= SHIFT_MAX:
            raise ValueError(f"shift {self.shift} is outside {SHIFT_MIN}..{SHIFT_MAX} (SHR reads a "
                             f"signed 6-bit amount, docs/isa.md §3.4)")
        if self.clip is not None:
            lo, hi = self.clip
            if not IMM_MIN <= lo <= hi <= IMM_MAX:
                raise ValueError(f"clip bounds {self.clip} must satisfy {IMM_MIN} <= lo <= hi <= "
                                 f"{IMM_MAX} ({IMM_BITS}-bit ALU immediates)")
            if self.use_clp and lo != -hi:
                raise ValueError(f"CLP clips to [-b, b]; clip {self.clip} is not symmetric, use "
                                 f"MIN/MAX (use_clp=False)")
        elif self.use_clp:
            raise ValueError("use_clp needs clip bounds")
        if not IMM32_MIN <= self.offset <= IMM32_MAX:
            raise ValueError(f"offset {self.offset} is not an int32")
        if self.scale is not None and not (math.isfinite(self.scale) and self.scale > 0
                                           and self.scale <= float(np.finfo(np.float32).max)
                                           and np.float32(self.scale) > 0):
            raise ValueError(f"scale {self.scale} must be a positive real number that float32 "
                             f"holds (the host multiplies in float32)")
        if self.scale is None:
            if self.zero_point:
                raise ValueError("zero_point is for a host requantization (with a scale); a "
                                 "shift's offset carries the zero point")
            self._offset_steps()                # an offset the ALU immediates cannot reach

    def _offset_steps(self):
        """The ALU steps of ``(acc + offset) >> shift`` for shift ≥ 0: ``[(ADD, imm) or (SHR,
        amount), …]``. ``offset = hi·2^shift + lo`` with ``0 <= lo < 2^shift``, and
        ``⌊(acc + lo) / 2^shift⌋ + hi`` is the same number; ``lo`` is added in pieces of at
        most 14 bits between partial shifts, because ``⌊(⌊(a + l₁) / 2^k⌋ + l₂) / 2^m⌋ =
        ⌊(a + l₁ + l₂·2^k) / 2^(k+m)⌋`` for ``0 <= l₁ < 2^k``."""
        shift, steps = self.shift, []
        if shift < 0:
            steps.append((AluOp.SHR, shift))
            rest = self.offset
        else:
            lo, rest = self.offset % (1 << shift), self.offset >> shift
            done = 0
            while done < shift:
                k = min(14, shift - done)
                piece = (lo >> done) & ((1 << k) - 1)
                if piece:
                    steps.append((AluOp.ADD, piece))
                steps.append((AluOp.SHR, k))
                done += k
        if rest:
            if not IMM_MIN <= rest <= IMM_MAX:
                raise ValueError(f"offset {self.offset} with shift {self.shift}: the part "
                                 f"{rest} added after the shift does not fit a "
                                 f"{IMM_BITS}-bit ALU immediate")
            steps.append((AluOp.ADD, rest))
        return steps

    @property
    def on_host(self):
        """True when the requantization is the host's (a real ``scale``)."""
        return self.scale is not None

    def bias_starts_acc(self, bias_bound, products):
        """Whether accumulators that start at ``bias << shift`` and sum ``products`` int8 × int8
        products give the same result as adding ``bias`` after the shift, for every input and
        every bias of magnitude at most ``bias_bound`` (``None``: unknown, so no).

        It is exact when no int32 sum wraps: ``products · 2^14 + bias_bound · 2^shift < 2^31``
        (then the reference's ``acc >> shift`` and its sum with the bias do not wrap either). A
        left shift (negative ``shift``) would lose the bias's low bits, so it never starts the
        accumulators. A bias added before the shift (``bias_first``) starts them as it is
        (:attr:`bias_shift` 0)."""
        if self.bias_first:
            return self.scale is None       # int32 sums wrap alike in any order: always exact
        if bias_bound is None or self.shift < 0 or self.scale is not None:
            return False
        return products * PRODUCT_MAX + (int(bias_bound) << self.shift) < 1 << 31

    @property
    def bias_shift(self):
        """How far left the bias rows are shifted when the accumulators start at them: the
        shift, or 0 for a bias added before the shift."""
        return 0 if self.bias_first else self.shift

    def emit(self, builder, same, bias=None):
        """Emit the tail on ``builder``: ``same`` is an ALU kernel whose micro-ops have
        src = dst over the rows to requantize; ``bias`` one whose src is each row's bias row.
        A requantization with a ``scale`` raises ``ValueError`` (it is the host's)."""
        if self.scale is not None:
            raise ValueError(f"requantization by the real scale {self.scale:.6g} runs on the "
                             f"host (a shift is a power of two)")
        if bias is not None and self.bias_first:
            builder.alu(bias, AluOp.ADD)
        if self.offset:
            for op, imm in self._offset_steps():
                builder.alu(same, op, imm=imm)
        elif self.shift:
            builder.alu(same, AluOp.SHR, imm=self.shift)
        if bias is not None and not self.bias_first:
            builder.alu(bias, AluOp.ADD)
        if self.clip is not None:
            lo, hi = self.clip
            if self.use_clp:
                builder.alu(same, AluOp.CLP, imm=hi)
            else:
                builder.alu(same, AluOp.MIN, imm=hi)
                builder.alu(same, AluOp.MAX, imm=lo)

    def reference(self, acc, bias=None):
        """The int8 result for int32-wrapped accumulators ``acc`` (numpy, any shape) and a bias
        broadcastable to it; written from the formula above, independently of the simulators."""
        r = _wrap(np.asarray(acc, dtype=np.int64))              # the int32 accumulator
        if bias is not None and (self.bias_first or self.scale is not None):
            r = _wrap(r + np.asarray(bias, dtype=np.int64))
            bias = None
        if self.scale is not None:
            scaled = _wrap(r + self.offset).astype(np.float32) * np.float32(self.scale)
            r = np.clip(np.rint(scaled), -2.0 ** 31, 2.0 ** 31 - 1).astype(np.int64)
            r = _wrap(r + self.zero_point)
        elif self.shift >= 0:
            r = _wrap(r + self.offset) >> self.shift
        else:
            r = _wrap(_wrap(r << -self.shift) + self.offset)
        if bias is not None:
            r = _wrap(r + np.asarray(bias, dtype=np.int64))
        if self.clip is not None:
            r = np.clip(r, *self.clip)
        return (r & 0xFF).astype(np.uint8).view(np.int8)


def _wrap(r):
    """int64 values wrapped to int32, as the accumulator wraps."""
    return ((r + (1 << 31)) % (1 << 32)) - (1 << 31)
