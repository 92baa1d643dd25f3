"""Numpy references of the operators, written from the textbook definitions in plain NCHW.

They share nothing with the simulators or the stream builder (no packing, no tiling), so an
agreement bit for bit is evidence that both are right. Accumulation is exact in int64 and then
wrapped to int32 as the accumulator wraps (docs/isa.md §3.3).
"""

import numpy as np

from .requant import SCALE_FRACTION, Requant

__all__ = ["conv2d_ref", "matmul_ref", "max_pool_ref", "depthwise_ref", "depthwise_acc",
           "avg_pool_ref",
           "global_avg_pool_ref", "add_ref", "scaled_sum", "wrap32"]


def wrap32(a):
    a = np.asarray(a, dtype=np.int64)
    return ((a + (1 << 31)) % (1 << 32)) - (1 << 31)


def windows(x, kh, kw, *, stride, pad, fill=0):
    """Each kernel offset ``(i, j)`` with the input values it meets at every output position:
    yields ``(i, j, view[N, C, OH, OW])`` of ``x`` (int64) padded with ``fill`` on all sides."""
    x = np.asarray(x, dtype=np.int64)
    h, w = x.shape[2:]
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (w + 2 * pad - kw) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    for i in range(kh):
        for j in range(kw):
            yield i, j, xp[:, :, i:i + stride * (oh - 1) + 1:stride,
                           j:j + stride * (ow - 1) + 1:stride]


def conv2d_acc(x, w, *, stride=1, pad=0, pad_value=0):
    """The exact sums of ``x[N, C, H, W] ⊛ w[O, C, KH, KW]`` as int64 ``[N, O, OH, OW]``, the
    padding holding ``pad_value``."""
    w = np.asarray(w, dtype=np.int64)
    out = 0
    for i, j, window in windows(x, *w.shape[2:], stride=stride, pad=pad, fill=pad_value):
        # [n, c, oh, ow] x [o, c] -> [n, o, oh, ow]
        out = out + np.einsum("nchw,oc->nohw", window, w[:, :, i, j], optimize=True)
    return out


def conv2d_ref(x, w, bias=None, *, stride=1, pad=0, pad_value=0, requant=Requant()):
    """int8 ``[N, O, OH, OW]``: requantized convolution, bias ``[O]`` added after the shift
    (before it with ``requant.bias_first``); the padding holds ``pad_value``."""
    acc = wrap32(conv2d_acc(x, w, stride=stride, pad=pad, pad_value=pad_value))
    b = None if bias is None else np.asarray(bias, np.int64).reshape(1, -1, 1, 1)
    return requant.reference(acc, b)


def matmul_ref(a, w, bias=None, *, requant=Requant()):
    """int8 ``[M, N]`` = requant(``a[M, K] @ w[N, K]ᵀ`` + bias ``[N]``)."""
    acc = wrap32(np.asarray(a, np.int64) @ np.asarray(w, np.int64).T)
    b = None if bias is None else np.asarray(bias, np.int64).reshape(1, -1)
    return requant.reference(acc, b)


def max_pool_ref(x, *, k, stride, pad):
    """int8 max pooling of ``x[N, C, H, W]``; padding never wins (it is −∞)."""
    lowest = np.iinfo(np.int64).min
    out = lowest
    for _, _, window in windows(x, k, k, stride=stride, pad=pad, fill=lowest):
        out = np.maximum(out, window)
    return out.astype(np.int8)


def depthwise_ref(x, w, bias=None, *, stride=1, pad=0, pad_value=0, requant=Requant()):
    """int8 depthwise convolution: channel c of ``x[N, C, H, W]`` with ``w[C, 1, KH, KW]``, the
    padding holding ``pad_value``, then ``requant`` with the int32 ``bias[C]`` (as
    :func:`conv2d_ref` adds it)."""
    b = None if bias is None else np.asarray(bias, np.int64).reshape(1, -1, 1, 1)
    return requant.reference(depthwise_acc(x, w, stride=stride, pad=pad, pad_value=pad_value), b)


def depthwise_acc(x, w, *, stride=1, pad=0, pad_value=0):
    """The int32 accumulators of :func:`depthwise_ref` (int64, wrapped as the accumulator
    wraps)."""
    w = np.asarray(w, dtype=np.int64)
    acc = 0
    for i, j, window in windows(x, *w.shape[2:], stride=stride, pad=pad, fill=pad_value):
        acc = acc + window * w[None, :, 0, i, j, None, None]
    return wrap32(acc)


def avg_pool_ref(x, *, k, stride, pad, requant=Requant()):
    """int8 average pooling of ``x[N, C, H, W]`` as the accelerator does it: the int32 sum of
    each k×k window (padding counts as 0, and as a cell of the window), then ``requant``: an
    arithmetic right shift, which rounds toward −∞, and the clip. With ``shift = log2(k·k)`` the
    result is the floor of the mean; for other window sizes the network chooses the shift (a
    3×3 window with shift 3 gives ⌊sum/8⌋, 9/8 of the mean)."""
    total = 0
    for _, _, window in windows(x, k, k, stride=stride, pad=pad):
        total = total + window
    return requant.reference(wrap32(total))


def global_avg_pool_ref(x, *, requant=Requant()):
    """int8 ``[N, C, 1, 1]``: the int32 sum of each channel's H×W plane of ``x[N, C, H, W]``,
    then ``requant`` (see :func:`avg_pool_ref` for the rounding)."""
    total = np.asarray(x, dtype=np.int64).sum(axis=(2, 3), keepdims=True)
    return requant.reference(wrap32(total))


def scaled_sum(a, b, scale_a, scale_b, scale_a2=0, scale_b2=0):
    """``a · scale_a + b · scale_b`` (int32, wrapping), each term ``⌊x · scale · scale2 /
    2^15⌋`` where a second factor is given (two ALU SCL passes, docs/isa.md §3.4)."""
    def term(x, m, m2):
        x = np.asarray(x, dtype=np.int64) * m
        return x * m2 >> SCALE_FRACTION if m2 else x
    return wrap32(term(a, scale_a, scale_a2) + term(b, scale_b, scale_b2))


def add_ref(a, b, *, shift_a=0, scale_a=0, scale_b=0, requant=Requant(), scale_a2=0,
            scale_b2=0):
    """int8 residual add: the int32 sum ``(a << shift_a) + b`` of two int8 tensors of one shape
    (``a · scale_a + b · scale_b`` when the multipliers are given, each term ``⌊x · scale ·
    scale2 / 2^15⌋`` with a second factor), then ``requant``."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if a.shape != b.shape:
        raise ValueError(f"add of tensors of shapes {a.shape} and {b.shape}; they must be equal")
    if scale_a or scale_b:
        return requant.reference(scaled_sum(a, b, scale_a, scale_b, scale_a2, scale_b2))
    return requant.reference(wrap32((a << shift_a) + b))
