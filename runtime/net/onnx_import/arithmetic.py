"""The arithmetic of an imported quantized operator: ONNX's real scales and zero points turned
into a node of the network format (docs/onnx.md has the derivations).

Every ONNX int8 tensor is held on the device as the same int8 values ``q`` (uint8 tensors as
``q − 128``, their zero point moved by −128), with the real value ``scale · (q − zero_point)``.
A convolution or dense layer computes

    y = clip(round((Σ (x − zx)(w − zw) + b) · M) + zy),     M = sx · sw / sy

and the accelerator computes ``Σ x·w'`` with ``w' = w − zw`` (which must fit int8) and adds a
bias before a right shift by ``s``. With ``2^−s`` for ``M``:

    B = b − zx · Σ w' + zy · 2^s + 2^(s−1)       and       y = clip((Σ x·w' + B) >> s)

is exact when ``M`` is a power of two, except that ``+ 2^(s−1)`` then ``>>`` rounds a half up
(toward +∞) where onnxruntime rounds it to even. The padding of a convolution must be the zero
point (it holds the real value 0): 0 when ``zx = 0``, the LOAD's −128 when ``zx = −128``.

With ``fixed_point`` (a device with ALU SCL, ``ALU_SCALE: 1``) ``M`` is carried in fixed point
instead: ``M ≈ m · 2^−(15+s)`` with ``m`` in [2^14, 2^15) (:func:`fixed_point`), the bias (with
the zero-point terms in accumulator units) starts the accumulators, and

    y = clip((⌊(Σ x·w' + b − zx · Σ w') · m / 2^15⌋ + zy · 2^s + 2^(s−1)) >> s)

rounds ``(Σ x·w' + B) · m · 2^−(15+s)`` once (SCL rounds down, which composes exactly with the
rounding shift; docs/isa.md §3.4). An add multiplies both inputs by integers exactly (a left
shift by 15, then SCL) and a pool its sum, so their zero-point terms stay exact integers too.

With ``fixed=24`` (``ALU_SCALE: 2``) a convolution or dense layer's ``M`` is onnxruntime's own
float32 ratio ``float32(float32(sx · sw) / sy)``, carried as a 24-bit multiplier (23 significant
bits, :func:`fixed_point`) in ACC rows, one per output channel (a per-tensor ``M`` repeated),
and a pool's ``sx / (sy · window)`` as two 15-bit factors ``m1 · m2`` (:func:`two_factors`,
about 28 significant bits): its sum plus ``−window · zx`` is multiplied by ``m1`` exactly, then
by ``m2`` rounding down, then rounded once by the shift. An add keeps its 15-bit integer
multipliers.

:class:`Scale` is one layer's requantization as imported: the ideal multiplier, the shift,
its relative error and whether the layer runs on the host.
"""

import math
from dataclasses import dataclass

import numpy as np

from avta.errors import UserError

from ...ops.requant import PRODUCT_MAX, SCALE_FRACTION, SHIFT_MAX, Requant

__all__ = ["Scale", "UnsupportedNode", "choose_shift", "fixed_point", "two_factors",
           "conv_like", "add_like", "pool_like", "clip_bounds", "fixed_bits"]

INT8_MIN, INT8_MAX = -128, 127


class UnsupportedNode(UserError):
    """An ONNX node the importer cannot map; ``reason`` says which rule it breaks."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Scale:
    """One layer's requantization: ``multiplier`` (the real ``M``, the largest over channels),
    ``shift`` (``2^−shift`` on the device), ``error`` (``2^−shift / M − 1``, the largest in
    magnitude over channels and inputs), ``on_host`` (the layer keeps onnxruntime's real
    multiplier and runs on the host) and ``uniform`` (false when the channels' multipliers
    differ); ``fixed`` is the device's 15-bit multiplier ``m`` (``M ≈ m · 2^−(15+shift)``,
    ``error`` then that approximation's), a tuple of them (one per output channel, each with
    its own shift) or ``None`` for a power of two."""
    node: str
    op: str
    multiplier: float
    shift: int
    error: float
    on_host: bool = False
    uniform: bool = True
    fixed: int = None

    @property
    def exact(self):
        """A power of two that is the ratio itself (no fixed-point multiplier)."""
        return self.error == 0.0 and self.fixed is None


def choose_shift(multiplier):
    """The shift ``s`` whose ``2^−s`` is nearest to ``multiplier`` in ratio (log2 rounded), and
    the relative error ``2^−s / multiplier − 1``."""
    shift = int(round(-math.log2(multiplier)))
    return shift, 2.0 ** -shift / multiplier - 1.0


def fixed_bits(fixed):
    """The multiplier width W an import's ``fixed`` asks for: 0 (none), 16 (``True`` or 16) or
    24."""
    if fixed is False or fixed is None or fixed == 0:
        return 0
    if fixed is True or fixed == 16:
        return 16
    if fixed == 24:
        return 24
    raise UserError(f"fixed-point multipliers are 16 or 24 bits wide, not {fixed!r}")


def fixed_point(multiplier, bits=16):
    """``(m, s)``: the ``bits``-wide (W) ``m`` in [2^(W−2), 2^(W−1)) and the shift ``s`` with
    ``m · 2^−(W−1+s)`` nearest to ``multiplier`` (``s`` may be 0 or negative for a multiplier
    of 1/2 or more)."""
    if not (math.isfinite(multiplier) and multiplier > 0):
        raise UnsupportedNode(f"its scale ratio {multiplier!r} is not a positive number")
    fraction = bits - 1
    e = math.floor(math.log2(multiplier))
    m = int(round(multiplier * 2.0 ** (fraction - 1 - e)))
    if m == 1 << fraction:                      # rounded up to the next power of two
        m, e = m >> 1, e + 1
    return m, -e - 1


def two_factors(multiplier):
    """``(m1, m2, s)``: 15-bit factors in [2^14, 2^15) and a shift with ``m1 · m2 · 2^−(15+s)``
    nearest to ``multiplier`` among them (``m1 · m2`` in [2^29, 2^30): about 28 significant
    bits), for two SCL passes with immediates."""
    if not (math.isfinite(multiplier) and multiplier > 0):
        raise UnsupportedNode(f"its scale ratio {multiplier!r} is not a positive number")
    shift = 14 - math.floor(math.log2(multiplier))     # m1 · m2 in [2^29, 2^30)
    return (*_factor_pair(multiplier, shift), shift)


def _fixed_requant(multiplier, bound, clip, zy, *, exact=False, acc_offset=0, bias_first=False):
    """``(Requant, m, s, error)`` of ``M = multiplier`` in fixed point for accumulators of
    magnitude at most ``bound``, or ``None`` where it does not fit (the caller keeps the power
    of two). ``exact``: shift the accumulator left by 15 first so that SCL multiplies exactly
    (inputs small enough, as a pool's), and then ``acc_offset``, in accumulator units, is
    added as ``acc_offset · m`` after SCL."""
    if acc_offset and not exact:
        raise ValueError("an offset in accumulator units needs the exact product")
    m, s = fixed_point(multiplier)
    pre = SCALE_FRACTION if exact else max(0, 1 - s)
    shift = s + pre
    while shift > SHIFT_MAX and m > 1:          # a tiny M: fewer bits, still the nearest
        m, shift = (m + 1) >> 1, shift - 1
    if shift < 1 or shift > SHIFT_MAX or (int(bound) << pre) >= 1 << 31:
        return None
    error = m * 2.0 ** -(SCALE_FRACTION + shift - pre) / multiplier - 1.0
    offset = acc_offset * m + zy * (1 << shift) + (1 << (shift - 1))
    try:
        requant = Requant(shift, clip, bias_first=bias_first, offset=int(offset), multiplier=m,
                          pre_shift=pre)
    except ValueError:
        return None
    return requant, m, shift - pre, error


def _fixed_channels(multipliers, bound, clip, zy, bits=16):
    """``(Requant, multipliers, error)`` of one ``bits``-wide fixed-point multiplier and shift
    per output channel (rows of ACC, ALU SCL/ADD/SHR with two operands), or ``None`` where they
    do not fit; ``error`` is the largest in magnitude over the channels."""
    fraction = bits - 1
    pairs = [fixed_point(float(m), bits) for m in multipliers]
    pre = max(0, 1 - min(s for _, s in pairs))
    if (int(bound) << pre) >= 1 << 31:
        return None
    ms, shifts, offsets, errors = [], [], [], []
    for multiplier, (m, s) in zip(multipliers, pairs):
        shift = s + pre
        while shift > SHIFT_MAX and m > 1:
            m, shift = (m + 1) >> 1, shift - 1
        if shift > SHIFT_MAX:
            return None
        ms.append(m)
        shifts.append(shift)
        offsets.append(zy * (1 << shift) + (1 << (shift - 1)))
        errors.append(m * 2.0 ** -(fraction + shift - pre) / float(multiplier) - 1.0)
    try:
        requant = Requant(0, clip, bias_first=True, multiplier=tuple(ms), pre_shift=pre,
                          shifts=tuple(shifts), offsets=tuple(int(o) for o in offsets),
                          multiplier_bits=bits)
    except ValueError:
        return None
    return requant, tuple(ms), max(errors, key=abs)


def _round_half(shift):
    return 1 << (shift - 1) if shift > 0 else 0


def clip_bounds(zy, sy, activation):
    """The int8 clip of an output with zero point ``zy`` and scale ``sy`` after a fused
    ``activation``: ``None``, ``("relu",)`` or ``("clip", lo, hi)`` in real numbers."""
    lo, hi = INT8_MIN, INT8_MAX
    if activation is not None:
        if activation[0] == "relu":
            lo = max(lo, zy)
        else:
            a, b = activation[1:]
            if a is not None and np.isfinite(a):
                lo = max(lo, zy + int(np.rint(np.float32(a) / np.float32(sy))))
            if b is not None and np.isfinite(b):
                hi = min(hi, zy + int(np.rint(np.float32(b) / np.float32(sy))))
    if lo > hi:
        raise UnsupportedNode(f"the activation's bounds {activation[1:]} leave no int8 value")
    return lo, hi


def _int32(values, what):
    values = np.asarray(values, dtype=np.int64)
    if values.size and (values.min() < -(1 << 31) or values.max() >= 1 << 31):
        raise UnsupportedNode(f"{what} does not fit int32")
    return values.astype(np.int32)


def conv_like(name, op, *, weights, w_zero, sx, zx, sw, sy, zy, bias, activation, padded,
              host_requant, fixed=False):
    """The device weights (int8), bias (int32, added before the shift), requantization,
    padding value and :class:`Scale` of a convolution or dense layer.

    ``weights`` are the ONNX integer weights ``[O, …]``, ``w_zero`` and ``sw`` scalars or one
    per output channel, ``bias`` int32 ``[O]`` in units of ``sx · sw`` (or ``None``);
    ``padded`` says whether the convolution pads its input; ``host_requant`` keeps an inexact
    layer's requantization on the host; ``fixed`` carries the multiplier in fixed point (ALU
    SCL) where it fits."""
    o = weights.shape[0]
    w_zero = np.broadcast_to(np.asarray(w_zero, np.int64), (o,))
    shifted = weights.astype(np.int64) - w_zero.reshape((o,) + (1,) * (weights.ndim - 1))
    if shifted.min() < INT8_MIN or shifted.max() > INT8_MAX:
        raise UnsupportedNode("its weights minus their zero point do not fit int8")
    weights = shifted.astype(np.int8)
    pad_value = 0
    if padded and zx != 0:
        if zx != INT8_MIN:
            raise UnsupportedNode(f"it pads an input whose zero point is {zx}; the accelerator "
                                  f"pads with 0 or -128 (zero points 0 or -128)")
        pad_value = INT8_MIN
    multipliers = (np.float64(sx) * np.asarray(sw, np.float64) / np.float64(sy)).reshape(-1)
    shift, _ = choose_shift(float(multipliers.max()))
    errors = 2.0 ** -shift / multipliers - 1.0
    error = float(errors[np.argmax(np.abs(errors))])
    total = np.zeros(o, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(o)
    total = total - zx * weights.astype(np.int64).reshape(o, -1).sum(axis=1)
    clip = clip_bounds(zy, sy, activation)
    scale = Scale(name, op, float(multipliers.max()), shift, error,
                  uniform=bool(np.all(multipliers == multipliers[0])))
    if host_requant and error != 0.0:
        if multipliers.size > 1 and not np.all(multipliers == multipliers[0]):
            raise UnsupportedNode("its per-channel scales differ; the host's requantization "
                                  "takes one scale per layer")
        ort = np.float32(sx) * np.float32(np.asarray(sw).reshape(-1)[0]) / np.float32(sy)
        scale.on_host = True
        requant = Requant(0, clip, bias_first=True, scale=float(ort), zero_point=int(zy))
        return weights, _int32(total, "its bias with the zero-point terms"), requant, \
            pad_value, scale
    products = int(np.prod(weights.shape[1:]))
    bound = products * PRODUCT_MAX + int(np.abs(total).max(initial=0))
    if fixed_bits(fixed) == 24 and (error != 0.0 or not scale.uniform):
        # onnxruntime's float32 ratio, channel by channel, in 24-bit rows
        ort = np.float32(sx) * np.broadcast_to(np.asarray(sw, np.float32).reshape(-1), (o,))
        ort = (ort / np.float32(sy)).astype(np.float64)
        lowered = _fixed_channels(ort, bound, clip, zy, bits=24)
        if lowered is not None:
            requant, fixed_ms, scale.error = lowered
            scale.fixed = fixed_ms if not scale.uniform else fixed_ms[0]
            return weights, _int32(total, "its bias with the zero-point terms"), requant, \
                pad_value, scale
    if fixed and not scale.uniform:
        lowered = _fixed_channels(multipliers, bound, clip, zy)
        if lowered is not None:
            requant, scale.fixed, scale.error = lowered
            return weights, _int32(total, "its bias with the zero-point terms"), requant, \
                pad_value, scale
    if fixed_bits(fixed) == 16 and scale.uniform and error != 0.0:
        lowered = _fixed_requant(float(multipliers[0]), bound, clip, zy, bias_first=True)
        if lowered is not None:
            requant, scale.fixed, scale.shift, scale.error = lowered
            return weights, _int32(total, "its bias with the zero-point terms"), requant, \
                pad_value, scale
    if shift >= 0:
        total = total + zy * (1 << shift) + _round_half(shift)
        requant = Requant(shift, clip, bias_first=True)
    else:
        requant = Requant(shift, clip, bias_first=True, offset=int(zy))
    return weights, _int32(total, "its bias with the zero-point terms"), requant, pad_value, scale


def _offset_requant(acc_offset, shift, zy, clip):
    """The requantization of ``(acc + acc_offset) · 2^−shift + zy`` rounded to nearest."""
    if shift >= 0:
        offset = acc_offset + zy * (1 << shift) + _round_half(shift)
    else:
        offset = acc_offset * (1 << -shift) + zy
    try:
        return Requant(shift, clip, offset=int(offset))
    except ValueError as error:
        raise UnsupportedNode(f"its requantization cannot run on the ALU: {error}") from None


def add_like(name, *, sa, za, sb, zb, sy, zy, activation, fixed=False):
    """``(shift_a, swap, requant, Scale)`` of ``y = round(sa(a − za)/sy + sb(b − zb)/sy) + zy``:
    the input at the larger scale (``a`` unless ``swap``) is shifted left by ``shift_a`` to the
    other's scale, then the sum is requantized. With ``fixed`` (ALU SCL) ``shift_a`` is
    ``(scale_a, scale_b)`` instead, the inputs' integer multipliers
    (:func:`~avta.runtime.ops.elementwise.build_add`) where they fit."""
    swap = sb > sa
    if swap:
        sa, za, sb, zb = sb, zb, sa, za
    clip = clip_bounds(zy, sy, activation)
    if fixed_bits(fixed) == 24:
        lowered = _two_factor_add(name, sa, za, sb, zb, sy, zy, clip)
        if lowered is not None:
            return lowered[0], swap, lowered[1], lowered[2]
    if fixed:
        lowered = _fixed_add(name, sa, za, sb, zb, sy, zy, clip)
        if lowered is not None:
            return lowered[0], swap, lowered[1], lowered[2]
    shift_a, _ = choose_shift(sb / sa)              # 2^-shift_a ≈ sb / sa <= 1
    if shift_a > 23:
        raise UnsupportedNode(f"its input scales {sa:.6g} and {sb:.6g} are too far apart")
    shift, _ = choose_shift(sb / sy)
    errors = [2.0 ** (shift_a - shift) / (sa / sy) - 1.0, 2.0 ** -shift / (sb / sy) - 1.0]
    error = max(errors, key=abs)
    requant = _offset_requant(-(za << shift_a) - zb, shift, zy, clip_bounds(zy, sy, activation))
    return shift_a, swap, requant, Scale(name, "add", sb / sy, shift, error)


def _fixed_add(name, sa, za, sb, zb, sy, zy, clip):
    """``((scale_a, scale_b), Requant, Scale)`` of an add in fixed point: both inputs times
    integers ``ma``, ``mb`` with ``sa/sy ≈ ma · 2^−(15+s)``, ``sb/sy ≈ mb · 2^−(15+s)`` and the
    larger in [2^14, 2^15), summed exactly, then rounded once by the shift; or ``None``."""
    ma, s = fixed_point(sa / sy)                # sa >= sb: a's multiplier is the larger
    shift = SCALE_FRACTION + s
    mb = int(round(sb / sy * 2.0 ** shift))
    if mb < 1 or not 1 <= shift <= SHIFT_MAX:
        return None
    offset = -(za * ma + zb * mb) + zy * (1 << shift) + (1 << (shift - 1))
    try:
        requant = Requant(shift, clip, offset=int(offset))
    except ValueError:
        return None
    errors = [ma * 2.0 ** -shift / (sa / sy) - 1.0, mb * 2.0 ** -shift / (sb / sy) - 1.0]
    scale = Scale(name, "add", sb / sy, s, max(errors, key=abs), fixed=ma)
    return (ma, mb), requant, scale


def _two_factor_pool(sx, sy, window, zx, zy, clip):
    """``(Requant, m1, s, error)`` of an average over ``window`` values by two 15-bit factors
    of onnxruntime's float32 ``sx / (sy · window)``, or ``None`` where the sum (at most
    ``window · 255`` from its zero point) times ``m1`` could leave int32 or ``window · zx`` is
    no immediate."""
    ort = float(np.float32(sx) / (np.float32(sy) * np.float32(window)))
    m1, m2, shift = two_factors(ort)
    if window * 255 * (1 << SCALE_FRACTION) >= 1 << 31 or not 1 <= shift <= SHIFT_MAX:
        return None
    try:
        requant = Requant(shift, clip, offset=zy * (1 << shift) + (1 << (shift - 1)),
                          multiplier=m1, multiplier2=m2, pre_offset=-window * zx,
                          pre_shift=SCALE_FRACTION)
    except ValueError:
        return None
    error = m1 * m2 * 2.0 ** -(SCALE_FRACTION + shift) / ort - 1.0
    return requant, m1, shift, error


def _factor_pair(multiplier, shift):
    """``(m1, m2)`` in [2^14, 2^15) × [1, 2^15) with ``m1 · m2`` nearest to ``multiplier ·
    2^(15+shift)``."""
    target = multiplier * 2.0 ** (SCALE_FRACTION + shift)
    m1 = np.arange(1 << 14, 1 << 15, dtype=np.int64)
    m2 = np.rint(target / m1).astype(np.int64)
    ok = (m2 >= 1) & (m2 < 1 << 15)
    m1, m2 = m1[ok], m2[ok]
    best = int(np.argmin(np.abs(m1 * m2 - target)))
    return int(m1[best]), int(m2[best])


def _two_factor_add(name, sa, za, sb, zb, sy, zy, clip):
    """``((ma1, ma2, mb1, mb2), Requant, Scale)`` of an add whose inputs are each multiplied by
    two 15-bit factors (exactly by the first, rounding down by the second, about 28
    significant bits: :func:`two_factors`), summed, the zero-point terms (rounded to integers)
    subtracted, then rounded once by the shift; or ``None``. ``sa >= sb``."""
    ma, mb = sa / sy, sb / sy
    _, _, shift = two_factors(ma)
    if not 1 <= shift <= SHIFT_MAX:
        return None
    (a1, a2), (b1, b2) = _factor_pair(ma, shift), _factor_pair(mb, shift)
    offset = -round(za * a1 * a2 / 2.0 ** SCALE_FRACTION) \
        - round(zb * b1 * b2 / 2.0 ** SCALE_FRACTION) + zy * (1 << shift) + (1 << (shift - 1))
    try:
        requant = Requant(shift, clip, offset=int(offset))
    except ValueError:
        return None
    errors = [a1 * a2 * 2.0 ** -(SCALE_FRACTION + shift) / ma - 1.0,
              b1 * b2 * 2.0 ** -(SCALE_FRACTION + shift) / mb - 1.0]
    scale = Scale(name, "add", mb, shift, max(errors, key=abs), fixed=a1)
    return (a1, a2, b1, b2), requant, scale


def pool_like(name, op, *, window, sx, zx, sy, zy, activation, host_requant, fixed=False):
    """The requantization and :class:`Scale` of an average over ``window`` values:
    ``y = round((Σ x − window·zx) · sx / (sy · window)) + zy``; with ``host_requant`` an
    inexact one keeps onnxruntime's real multiplier (on the host); with ``fixed`` it is carried
    in fixed point (ALU SCL) where it fits."""
    multiplier = sx / (sy * window)
    shift, error = choose_shift(multiplier)
    clip = clip_bounds(zy, sy, activation)
    if fixed_bits(fixed) == 24 and error != 0.0:
        lowered = _two_factor_pool(sx, sy, window, zx, zy, clip)
        if lowered is not None:
            requant, m1, s, error = lowered
            return requant, Scale(name, op, multiplier, s, error, fixed=m1)
    if fixed and error != 0.0:
        lowered = _fixed_requant(multiplier, window * 256, clip, zy, exact=True,
                                 acc_offset=-window * zx)
        if lowered is not None:
            requant, m, s, error = lowered
            return requant, Scale(name, op, multiplier, s, error, fixed=m)
    if host_requant and error != 0.0:
        ort = np.float32(sx) / np.float32(sy) / np.float32(window)
        return Requant(0, clip, offset=-window * zx, scale=float(ort), zero_point=int(zy)), \
            Scale(name, op, multiplier, shift, error, on_host=True)
    requant = _offset_requant(-window * zx, shift, zy, clip)
    return requant, Scale(name, op, multiplier, shift, error)
