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

With ALU SCL (``ALU_SCALE`` 1 or 2, docs/isa.md §3.4) a real multiplier runs on the device in fixed
point: ``multiplier`` m scales the accumulator by ``m / 2^15`` (rounding down) before the
offset and the shift, so ``(⌊acc · m / 2^15⌋ + offset) >> shift`` with ``offset = 2^(shift−1)``
is ``acc · m / 2^(15+shift)`` rounded once, half up (a floor composes exactly with the
rounding shift). ``pre_shift`` shifts the accumulator left first, for a multiplier of 1/2 or
more, where the caller has checked the headroom.

Per output channel (a tuple ``multiplier`` with ``shifts`` and ``offsets``, for conv2d and
dense) the same three steps read ACC rows instead of immediates: SCL by a row of multipliers,
ADD a row of offsets, SHR by a row of shifts (:meth:`Requant.channel_rows`), rows that stay
resident beside the bias rows for the whole layer (:data:`CHANNEL_ROW_BLOCKS`). Where every
channel has the same shift, SHR (and, for a rounding half alone, the offset) takes immediates
instead: one ACC read a step instead of two at each output block's first pixel (the ALU reuses a
row over the block's other pixels, docs/isa.md §3.4). Those rows can
hold 24-bit multipliers (``multiplier_bits`` 24, ``m / 2^23``) for a configuration with
``ALU_SCALE: 2``, precise enough to carry a float32 scale (docs/onnx.md); Q15 rows run there
too, shifted left by 8 as they are packed.

An immediate multiplier is always Q15 (docs/isa.md §3.4). Where the accumulator is small
enough to be multiplied exactly (a pool's sum, shifted left by 15 first), a second immediate
``multiplier2`` refines it: ``⌊(acc + pre_offset) · m · m2 / 2^15⌋`` rounded by the shift after
it is ``(acc + pre_offset) · m · m2 / 2^(15+s)`` rounded once, with ``m · m2`` carrying about
28 significant bits.
"""

import math
from dataclasses import dataclass

import numpy as np

from avta.isa.enums import AluOp
from avta.isa.formats import IMM_BITS

from ..stream import StreamError

__all__ = ["Requant", "IMM_MIN", "IMM_MAX", "SHIFT_MIN", "SHIFT_MAX", "PRODUCT_MAX",
           "SCALE_FRACTION", "MULTIPLIER_MAX", "CHANNEL_ROW_BLOCKS", "MULTIPLIER_BITS"]

#: The ALU immediate is a signed IMM_BITS-bit field (docs/isa.md §2).
IMM_MIN, IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1
#: SHR takes B[5:0] as a signed 6-bit amount (docs/isa.md §3.4).
SHIFT_MIN, SHIFT_MAX = -32, 31
#: The largest magnitude of one int8 × int8 product, (−128)·(−128).
PRODUCT_MAX = 1 << 14
#: SCL multiplies by m / 2^SCALE_FRACTION, m a signed 16-bit immediate (docs/isa.md §3.4); a
#: requantization's multiplier is positive, so at most MULTIPLIER_MAX.
SCALE_FRACTION = 15
MULTIPLIER_MAX = IMM_MAX
#: The widths W a requantization's row multipliers may be written for (Q15, Q23): each needs a
#: configuration whose SCL is at least as wide (``Config.scale_bits``).
MULTIPLIER_BITS = (16, 24)
#: ACC row blocks a layer with per-channel requantization keeps resident: its bias, then the
#: multipliers, offsets and shifts (one row per output block each).
CHANNEL_ROW_BLOCKS = 4
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
    multiplier : int or None
        A fixed-point factor ``multiplier / 2^15`` (1..2^15 − 1) applied to the accumulator
        (after the bias when ``bias_first``) before the offset and the shift: one ALU SCL,
        rounding down; needs a configuration with ``ALU_SCALE`` 1 or 2.
    pre_shift : int
        With a ``multiplier``: a left shift (0..31) of the accumulator before SCL, for factors
        of 1/2 or more; the caller makes sure that it does not overflow.
    shifts, offsets : tuple or None
        With a tuple ``multiplier`` (one per output channel, :attr:`per_channel`): each
        channel's shift (1..31) and offset (int32), ``(⌊acc · m_c / 2^(W−1)⌋ + offset_c) >>
        shift_c``; ``shift`` and ``offset`` are then 0 and the bias comes first.
    multiplier_bits : int
        W, the width the per-channel multipliers are written for: 16 (Q15, 1..2^15 − 1) or 24
        (Q23, 1..2^23 − 1, needs ``ALU_SCALE: 2``). A per-tensor multiplier is an immediate,
        always Q15 (W 16).
    multiplier2 : int or None
        With a per-tensor ``multiplier``: a second Q15 factor (1..2^15 − 1), one more SCL with
        an immediate right after the first.
    pre_offset : int
        With a ``multiplier``: a constant (a 16-bit immediate) added to the accumulator before
        ``pre_shift`` and SCL, in accumulator units (a pool's zero-point term).
    """
    shift: int = 0
    clip: tuple = None
    use_clp: bool = False
    bias_first: bool = False
    offset: int = 0
    scale: float = None
    zero_point: int = 0
    multiplier: int = None
    pre_shift: int = 0
    shifts: tuple = None
    offsets: tuple = None
    multiplier_bits: int = 16
    multiplier2: int = None
    pre_offset: int = 0

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
        if self.multiplier_bits not in MULTIPLIER_BITS:
            raise ValueError(f"multiplier_bits {self.multiplier_bits!r} must be one of "
                             f"{', '.join(map(str, MULTIPLIER_BITS))} (SCL's widths, docs/isa.md "
                             f"§3.4)")
        if self.multiplier_bits != 16 and not self.per_channel:
            raise ValueError("a 24-bit multiplier is read from ACC rows: it must be per-channel "
                             "(a tuple; one value repeated for a per-tensor scale)")
        if self.multiplier2 is not None:
            if self.multiplier is None or self.per_channel:
                raise ValueError("multiplier2 refines a per-tensor multiplier (an immediate)")
            _check_multiplier(self.multiplier2, "multiplier2")
        if isinstance(self.pre_offset, bool) or not isinstance(self.pre_offset, int) \
                or not IMM_MIN <= self.pre_offset <= IMM_MAX:
            raise ValueError(f"pre_offset {self.pre_offset!r} must be an integer in "
                             f"{IMM_MIN}..{IMM_MAX} (an ALU immediate)")
        if self.pre_offset and self.multiplier is None:
            raise ValueError("pre_offset belongs to a requantization with a multiplier")
        if self.per_channel:
            self._check_channels()
        elif self.shifts is not None or self.offsets is not None:
            raise ValueError("shifts and offsets belong to a per-channel multiplier (a tuple)")
        elif self.multiplier is not None:
            _check_multiplier(self.multiplier)
        if self.multiplier is not None:
            if self.scale is not None:
                raise ValueError("a requantization has a host scale or a device multiplier, "
                                 "not both")
        if isinstance(self.pre_shift, bool) or not isinstance(self.pre_shift, int) \
                or not 0 <= self.pre_shift <= SHIFT_MAX:
            raise ValueError(f"pre_shift {self.pre_shift!r} must be an integer in 0..{SHIFT_MAX}")
        if self.pre_shift and self.multiplier is None:
            raise ValueError("pre_shift belongs to a requantization with a multiplier")
        if self.scale is None:
            if self.zero_point:
                raise ValueError("zero_point is for a host requantization (with a scale); a "
                                 "shift's offset carries the zero point")
            self._offset_steps()                # an offset the ALU immediates cannot reach

    @property
    def per_channel(self):
        """True when the multiplier, shift and offset are one per output channel."""
        return isinstance(self.multiplier, tuple)

    def _check_channels(self):
        n = len(self.multiplier)
        for m in self.multiplier:
            _check_multiplier(m, "multiplier", self.multiplier_bits)
        if not (isinstance(self.shifts, tuple) and isinstance(self.offsets, tuple)
                and len(self.shifts) == len(self.offsets) == n):
            raise ValueError(f"a per-channel multiplier of {n} channels needs {n} shifts and "
                             f"{n} offsets (tuples)")
        for s in self.shifts:
            if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= SHIFT_MAX:
                raise ValueError(f"per-channel shift {s!r} must be an integer in 1..{SHIFT_MAX}")
        for o in self.offsets:
            if isinstance(o, bool) or not isinstance(o, int) or not IMM32_MIN <= o <= IMM32_MAX:
                raise ValueError(f"per-channel offset {o!r} must be an int32")
        if self.shift or self.offset or not self.bias_first:
            raise ValueError("a per-channel requantization has shift 0 and offset 0 (its rows "
                             "carry them) and adds its bias first")

    def channel_rows(self, channels, scale_bits=None):
        """``[3, channels]`` int32: the multipliers, offsets and shifts of every output channel,
        padded channels (beyond the requantization's) with multiplier 0, offset 0, shift 1. For
        a configuration whose SCL is ``scale_bits`` wide (default: :attr:`multiplier_bits`)
        the multipliers are shifted left to its width (m / 2^(W−1) is the same factor)."""
        scale_bits = self.multiplier_bits if scale_bits is None else scale_bits
        if scale_bits < self.multiplier_bits:
            raise StreamError(f"{self.multiplier_bits}-bit multipliers need a "
                              f"{self.multiplier_bits}-bit SCL (ALU_SCALE: 2), not {scale_bits} "
                              f"bits (docs/isa.md §3.4)")
        rows = np.zeros((3, channels), np.int64)
        rows[2] = 1
        n = len(self.multiplier)
        rows[:, :n] = [self.multiplier, self.offsets, self.shifts]
        rows[0] <<= scale_bits - self.multiplier_bits
        return rows.astype(np.int32)

    def _offset_steps(self):
        """The ALU steps of ``(acc + offset) >> shift``: ``[(ADD, imm) or (SHR, amount), …]``
        (:func:`_offset_steps`)."""
        return _offset_steps(self.offset, self.shift)

    def _channel_steps(self, same, channel):
        """The per-channel offsets and shifts after SCL: ``[(kernel, op, imm), …]``. ADD and SHR
        read the rows (``channel(1)``, ``channel(2)``); where every channel has the same shift
        — a per-tensor scale in rows, or per-channel scales in one binade — SHR takes an
        immediate instead, and so does the offset when it is the same for every channel and
        two immediates carry it (a rounding half alone: ADD 2^(s−1), SHR s). The values are the
        same: only the operands move, so no ACC read of a row at each output block's first
        pixel (the ALU reuses the row over the block's other pixels, docs/isa.md §3.4)."""
        shifts, offsets = set(self.shifts), set(self.offsets)
        if len(shifts) > 1:
            return [(channel(1), AluOp.ADD, None), (channel(2), AluOp.SHR, None)]
        (shift,) = shifts
        if len(offsets) == 1:
            steps = _offset_steps(next(iter(offsets)), shift, strict=False)
            if steps is not None and len(steps) <= 2:
                return [(same, op, imm) for op, imm in steps]
        return [(channel(1), AluOp.ADD, None), (same, AluOp.SHR, shift)]

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

    def emit(self, builder, same, bias=None, channel=None):
        """Emit the tail on ``builder``: ``same`` is an ALU kernel whose micro-ops have
        src = dst over the rows to requantize; ``bias`` one whose src is each row's bias row;
        ``channel(k)`` one whose src is each row's channel row of block ``k`` (0 multipliers, 1
        offsets, 2 shifts; needed with :attr:`per_channel`). A requantization with a ``scale``
        raises ``ValueError`` (it is the host's)."""
        if self.scale is not None:
            raise ValueError(f"requantization by the real scale {self.scale:.6g} runs on the "
                             f"host (a shift is a power of two)")
        if bias is not None and self.bias_first:
            builder.alu(bias, AluOp.ADD)
        cfg = getattr(builder, "cfg", None)     # a recorder counting passes has none
        if cfg is not None and self.multiplier_bits > max(cfg.scale_bits, 16):
            raise StreamError(f"a {self.multiplier_bits}-bit multiplier needs the configuration "
                              f"key ALU_SCALE: 2 ({cfg.name} has {cfg.alu_scale}; docs/isa.md "
                              f"§3.4)")
        if self.pre_offset:
            builder.alu(same, AluOp.ADD, imm=self.pre_offset)
        if self.pre_shift:
            builder.alu(same, AluOp.SHR, imm=-self.pre_shift)
        if self.per_channel:
            if channel is None:
                raise ValueError("a per-channel requantization reads its channel rows: only "
                                 "conv2d and dense have them")
            builder.alu(channel(0), AluOp.SCL)
            for kernel, op, imm in self._channel_steps(same, channel):
                builder.alu(kernel, op, imm=imm)
        elif self.multiplier is not None:
            builder.alu(same, AluOp.SCL, imm=self.multiplier)
            if self.multiplier2 is not None:
                builder.alu(same, AluOp.SCL, imm=self.multiplier2)
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
        else:
            if self.multiplier is not None:
                r = _wrap(_wrap(r + self.pre_offset) << self.pre_shift)
            if self.per_channel:                   # channels along axis 1: [N, C, ...]
                shape = (1, -1) + (1,) * (r.ndim - 2)
                m, off, s = (np.asarray(v, np.int64).reshape(shape)
                             for v in (self.multiplier, self.offsets, self.shifts))
                r = _wrap((r * m) >> (self.multiplier_bits - 1))
                r = _wrap(r + off) >> s
            elif self.multiplier is not None:      # ⌊acc · 2^pre_shift · m / 2^15⌋
                r = _wrap((r * self.multiplier) >> SCALE_FRACTION)
                if self.multiplier2 is not None:
                    r = _wrap((r * self.multiplier2) >> SCALE_FRACTION)
            if self.per_channel:
                pass
            elif self.shift >= 0:
                r = _wrap(r + self.offset) >> self.shift
            else:
                r = _wrap(_wrap(r << -self.shift) + self.offset)
        if bias is not None:
            r = _wrap(r + np.asarray(bias, dtype=np.int64))
        if self.clip is not None:
            r = np.clip(r, *self.clip)
        return (r & 0xFF).astype(np.uint8).view(np.int8)


def _offset_steps(offset, shift, strict=True):
    """The ALU steps of ``(acc + offset) >> shift`` for shift ≥ 0: ``[(ADD, imm) or (SHR,
    amount), …]``. ``offset = hi·2^shift + lo`` with ``0 <= lo < 2^shift``, and ``⌊(acc + lo) /
    2^shift⌋ + hi`` is the same number; ``lo`` is added in pieces of at most 14 bits between
    partial shifts, because ``⌊(⌊(a + l₁) / 2^k⌋ + l₂) / 2^m⌋ = ⌊(a + l₁ + l₂·2^k) /
    2^(k+m)⌋`` for ``0 <= l₁ < 2^k``. A part ``hi`` beyond an immediate raises ``ValueError``,
    or without ``strict`` gives ``None``."""
    steps = []
    if shift < 0:
        steps.append((AluOp.SHR, shift))
        rest = offset
    else:
        lo, rest = offset % (1 << shift), offset >> shift
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
            if not strict:
                return None
            raise ValueError(f"offset {offset} with shift {shift}: the part {rest} added "
                             f"after the shift does not fit a {IMM_BITS}-bit ALU immediate")
        steps.append((AluOp.ADD, rest))
    return steps


def _check_multiplier(m, what="multiplier", bits=16):
    top = (1 << (bits - 1)) - 1
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= top:
        raise ValueError(f"{what} {m!r} must be an integer in 1..{top} (SCL's {bits}-bit "
                         f"operand, docs/isa.md §3.4)")


def _wrap(r):
    """int64 values wrapped to int32, as the accumulator wraps."""
    return ((r + (1 << 31)) % (1 << 32)) - (1 << 31)
