"""Requantization: the ALU tail that turns 32-bit accumulators into 8-bit outputs.

Upstream's conv2d and GEMM tests compute ``clip((acc >> shift) + bias, lo, hi)`` and keep the low
8 bits (upstream-vta.md §6.2); on VTA that is ALU SHR with an immediate, ALU ADD of a bias row,
then either MIN and MAX with immediates or the Intel Labs CLP (clip to [−b, b], docs/isa.md §3.4).
STORE writes the low 8 bits of each lane (OUT mirrors ACC, docs/isa.md §3).

When no sum can overflow, the bias costs nothing after the GEMM: ``(acc >> s) + bias`` equals
``(acc + (bias << s)) >> s`` (``bias << s`` is a multiple of ``2^s``), so the accumulators can
start at ``bias << s`` — one ALU MOV per row instead of the reset GEMM — and the tail drops the
ADD (:meth:`Requant.bias_starts_acc` says when that is exact).
"""

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
    """
    shift: int = 0
    clip: tuple = None
    use_clp: bool = False

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

    def bias_starts_acc(self, bias_bound, products):
        """Whether accumulators that start at ``bias << shift`` and sum ``products`` int8 × int8
        products give the same result as adding ``bias`` after the shift, for every input and
        every bias of magnitude at most ``bias_bound`` (``None``: unknown, so no).

        It is exact when no int32 sum wraps: ``products · 2^14 + bias_bound · 2^shift < 2^31``
        (then the reference's ``acc >> shift`` and its sum with the bias do not wrap either). A
        left shift (negative ``shift``) would lose the bias's low bits, so it never starts the
        accumulators."""
        if bias_bound is None or self.shift < 0:
            return False
        return products * PRODUCT_MAX + (int(bias_bound) << self.shift) < 1 << 31

    def emit(self, builder, same, bias=None):
        """Emit the tail on ``builder``: ``same`` is an ALU kernel whose micro-ops have
        src = dst over the rows to requantize; ``bias`` one whose src is each row's bias row."""
        if self.shift:
            builder.alu(same, AluOp.SHR, imm=self.shift)
        if bias is not None:
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
        r = np.asarray(acc, dtype=np.int64)
        r = ((r + (1 << 31)) % (1 << 32)) - (1 << 31)           # the int32 accumulator
        if self.shift >= 0:
            r = r >> self.shift
        else:
            r = r << -self.shift
            r = ((r + (1 << 31)) % (1 << 32)) - (1 << 31)
        if bias is not None:
            r = r + np.asarray(bias, dtype=np.int64)
            r = ((r + (1 << 31)) % (1 << 32)) - (1 << 31)
        if self.clip is not None:
            r = np.clip(r, *self.clip)
        return (r & 0xFF).astype(np.uint8).view(np.int8)
