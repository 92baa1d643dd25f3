"""A residual add fused into the convolution that makes one of its operands.

A ResNet block ends with ``add(conv(y), x)``: the convolution requantizes its accumulators to
int8 (``y' = clip((acc >> s) + bias, lo, hi)``), stores them, and the add loads ``y'`` and the
shortcut ``x`` again to compute ``requant_add(y' + x)``. Fused, the convolution's tail goes on
in ACC: after its own requantization it ADDs the tile's shortcut rows — LOADed as ACC_8BIT
into rows beside the tile's accumulators (:meth:`Conv2dTiling.shortcut_base`), as the
separate add on the ALU loads them — and runs the add's requantization before the one STORE.
The add's program, its loads of both operands and its STORE of the sum are gone; the layer
pays one LOAD of the shortcut per tile in the compute stage and three or four ALU steps a row,
which run beside the next tile's GEMMs where those are long enough.

Every value is the unfused network's, bit for bit: the convolution's clip bounds lie within
int8 (:func:`why_not`), so ``y'`` is what the separate add reads from DRAM, and ``y' + x``
is the int32 sum the add computes. One step may go: the convolution's lower clip, when no
value it raises can reach the add's output (:func:`drops_lower_clip`): for ``v < lo`` the
unfused sum is ``lo + x ≤ lo + 127 < 0`` and the fused one ``v + x`` is lower still, and the
add's requantization gives every value in ``[−2^30, −1]`` the same result, its monotone
floor and clip reaching the same bound. The shift of at least 2 keeps ``v + x`` above
``−2^30`` (no int32 wrap, ``|v| < 2^(31 − s)``).

Whether a layer is fused is the cycle model's choice (:func:`fused_wins`): the fused layer's
estimate against the plain layer's and the add's.
"""

from dataclasses import dataclass, replace

import numpy as np

from avta.isa.enums import AluOp, MemType

from .requant import Requant

__all__ = ["FusedAdd", "why_not", "drops_lower_clip", "emit_fused_tail", "load_shortcut"]

#: A value below every conv output the lower clip may be dropped for (see the docstring).
_FAR_BELOW = -(1 << 30)
#: The smallest conv shift for which ``v + x`` stays above :data:`_FAR_BELOW`.
_MIN_SHIFT_TO_DROP = 2
#: The int8 range a stored output keeps exactly.
_INT8 = (-128, 127)


@dataclass(frozen=True)
class FusedAdd:
    """The add fused into a convolution: ``requant`` of ``conv_out + shortcut`` (the add's own
    requantization, ``shift_a`` 0, no multipliers: :func:`why_not`)."""
    requant: Requant


def why_not(conv_requant, add_requant, *, shift_a=0, scaled=False):
    """Why an add with ``add_requant`` cannot be fused into a convolution requantized by
    ``conv_requant`` (an empty string when it can)."""
    if shift_a or scaled:
        return "the add scales an operand (shift_a or SCL multipliers)"
    for what, r in (("convolution", conv_requant), ("add", add_requant)):
        if r.on_host:
            return f"the {what}'s requantization is the host's"
    clip = conv_requant.clip
    if clip is None or not _INT8[0] <= clip[0] <= clip[1] <= _INT8[1]:
        return (f"the convolution's clip {clip} is not within int8: its stored output is "
                f"not the value the ALU would add")
    if add_requant.multiplier is not None or add_requant.bias_first:
        return "the add's requantization has a multiplier"
    return ""


def drops_lower_clip(conv_requant, add_requant, bias_shifted):
    """Whether the fused tail may leave out the convolution's lower clip (the module
    docstring): ``bias_shifted``, whether the accumulators start at the shifted bias (or
    there is none), so that ``v`` is ``(acc + bias·2^s) >> s`` with no wrap."""
    lo = conv_requant.clip[0]
    if (lo + _INT8[1] >= 0 or conv_requant.shift < _MIN_SHIFT_TO_DROP or not bias_shifted
            or conv_requant.multiplier is not None or conv_requant.bias_first
            or abs(add_requant.offset) >= 1 << 28):
        return False
    far, near = add_requant.reference(np.array([_FAR_BELOW, -1]))
    return bool(far == near)


def emit_fused_tail(builder, conv_requant, fused, same, bias, channel, shortcut, *,
                    drop_lower):
    """Emit the fused tail: the convolution's requantization (``same``, ``bias``,
    ``channel`` as :meth:`Requant.emit` takes them), its clip (the upper bound; the lower one
    unless ``drop_lower``), the ADD of the shortcut rows (``shortcut``: an ALU kernel whose
    src is each row's shortcut row) and the add's requantization."""
    replace(conv_requant, clip=None, use_clp=False).emit(builder, same, bias, channel)
    lo, hi = conv_requant.clip
    if conv_requant.use_clp and not drop_lower:
        builder.alu(same, AluOp.CLP, imm=hi)
    else:
        builder.alu(same, AluOp.MIN, imm=hi)
        if not drop_lower:
            builder.alu(same, AluOp.MAX, imm=lo)
    builder.alu(shortcut, AluOp.ADD)
    fused.requant.emit(builder, same)


def load_shortcut(builder, shape, t, tile, va, dram, cob, co0, nco):
    """LOAD (ACC_8BIT, compute stage) the shortcut rows of ``tile`` (output blocks ``co0`` on,
    ``nco`` of them; ``cob`` in all) from ``dram`` into accumulator buffer ``va``'s shortcut
    rows (:meth:`Conv2dTiling.shortcut_base`), in the accumulators' layout: one LOAD when the
    tile's rows are whole output rows, one per block otherwise
    (:func:`~.conv_cycles.shortcut_load_cycles` counts the same)."""
    base = t.shortcut_base(va)
    first = ((tile.nb * cob + co0) * shape.oh + tile.oh0) * shape.ow + tile.ow0
    if tile.tw == shape.ow and tile.th * tile.tw == t.acc_pitch:
        builder.load(MemType.ACC_8BIT, sram=base, dram=dram + first, y_size=nco,
                     x_size=tile.th * shape.ow, x_stride=shape.oh * shape.ow)
        return
    for co in range(nco):
        builder.load(MemType.ACC_8BIT, sram=base + co * t.acc_pitch,
                     dram=dram + first + co * shape.oh * shape.ow, y_size=tile.th,
                     x_size=tile.tw, x_stride=shape.ow)
