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

:class:`Scale` is one layer's requantization as imported: the ideal multiplier, the shift,
its relative error and whether the layer runs on the host.
"""

import math
from dataclasses import dataclass

import numpy as np

from avta.errors import UserError

from ..ops.requant import Requant

__all__ = ["Scale", "UnsupportedNode", "choose_shift", "conv_like", "add_like", "pool_like",
           "clip_bounds"]

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
    differ)."""
    node: str
    op: str
    multiplier: float
    shift: int
    error: float
    on_host: bool = False
    uniform: bool = True

    @property
    def exact(self):
        return self.error == 0.0


def choose_shift(multiplier):
    """The shift ``s`` whose ``2^−s`` is nearest to ``multiplier`` in ratio (log2 rounded), and
    the relative error ``2^−s / multiplier − 1``."""
    shift = int(round(-math.log2(multiplier)))
    return shift, 2.0 ** -shift / multiplier - 1.0


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
              host_requant):
    """The device weights (int8), bias (int32, added before the shift), requantization,
    padding value and :class:`Scale` of a convolution or dense layer.

    ``weights`` are the ONNX integer weights ``[O, …]``, ``w_zero`` and ``sw`` scalars or one
    per output channel, ``bias`` int32 ``[O]`` in units of ``sx · sw`` (or ``None``);
    ``padded`` says whether the convolution pads its input; ``host_requant`` keeps an inexact
    layer's requantization on the host."""
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


def add_like(name, *, sa, za, sb, zb, sy, zy, activation):
    """``(shift_a, swap, requant, Scale)`` of ``y = round(sa(a − za)/sy + sb(b − zb)/sy) + zy``:
    the input at the larger scale (``a`` unless ``swap``) is shifted left by ``shift_a`` to the
    other's scale, then the sum is requantized."""
    swap = sb > sa
    if swap:
        sa, za, sb, zb = sb, zb, sa, za
    shift_a, _ = choose_shift(sb / sa)              # 2^-shift_a ≈ sb / sa <= 1
    if shift_a > 23:
        raise UnsupportedNode(f"its input scales {sa:.6g} and {sb:.6g} are too far apart")
    shift, _ = choose_shift(sb / sy)
    errors = [2.0 ** (shift_a - shift) / (sa / sy) - 1.0, 2.0 ** -shift / (sb / sy) - 1.0]
    error = max(errors, key=abs)
    requant = _offset_requant(-(za << shift_a) - zb, shift, zy, clip_bounds(zy, sy, activation))
    return shift_a, swap, requant, Scale(name, "add", sb / sy, shift, error)


def pool_like(name, op, *, window, sx, zx, sy, zy, activation, host_requant):
    """The requantization and :class:`Scale` of an average over ``window`` values:
    ``y = round((Σ x − window·zx) · sx / (sy · window)) + zy``; with ``host_requant`` an
    inexact one keeps onnxruntime's real multiplier (on the host)."""
    multiplier = sx / (sy * window)
    shift, error = choose_shift(multiplier)
    clip = clip_bounds(zy, sy, activation)
    if host_requant and error != 0.0:
        ort = np.float32(sx) / np.float32(sy) / np.float32(window)
        return Requant(0, clip, offset=-window * zx, scale=float(ort), zero_point=int(zy)), \
            Scale(name, op, multiplier, shift, error, on_host=True)
    requant = _offset_requant(-window * zx, shift, zy, clip)
    return requant, Scale(name, op, multiplier, shift, error)
