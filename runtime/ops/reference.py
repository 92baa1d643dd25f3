"""Numpy references of the operators, written from the textbook definitions in plain NCHW.

They share nothing with the simulators or the stream builder (no packing, no tiling), so an
agreement bit for bit is evidence that both are right. Accumulation is exact in int64 and then
wrapped to int32 as the accumulator wraps (ISA.md §3.3).
"""

import numpy as np

from .requant import Requant

__all__ = ["conv2d_ref", "matmul_ref", "max_pool_ref", "depthwise_ref", "wrap32"]


def wrap32(a):
    a = np.asarray(a, dtype=np.int64)
    return ((a + (1 << 31)) % (1 << 32)) - (1 << 31)


def conv2d_acc(x, w, *, stride=1, pad=0):
    """The exact sums of ``x[N, C, H, W] ⊛ w[O, C, KH, KW]`` as int64 ``[N, O, OH, OW]``."""
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, o, oh, ow), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            window = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            # [n, c, oh, ow] x [o, c] -> [n, o, oh, ow]
            out += np.einsum("nchw,oc->nohw", window, w[:, :, i, j], optimize=True)
    return out


def conv2d_ref(x, w, bias=None, *, stride=1, pad=0, requant=Requant()):
    """int8 ``[N, O, OH, OW]``: requantized convolution, bias ``[O]`` added after the shift."""
    acc = wrap32(conv2d_acc(x, w, stride=stride, pad=pad))
    b = None if bias is None else np.asarray(bias, np.int64).reshape(1, -1, 1, 1)
    return requant.reference(acc, b)


def matmul_ref(a, w, bias=None, *, requant=Requant()):
    """int8 ``[M, N]`` = requant(``a[M, K] @ w[N, K]ᵀ`` + bias ``[N]``)."""
    acc = wrap32(np.asarray(a, np.int64) @ np.asarray(w, np.int64).T)
    b = None if bias is None else np.asarray(bias, np.int64).reshape(1, -1)
    return requant.reference(acc, b)


def max_pool_ref(x, *, k, stride, pad):
    """int8 max pooling of ``x[N, C, H, W]``; padding never wins (it is −∞)."""
    x = np.asarray(x, dtype=np.int64)
    n, c, h, w = x.shape
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=np.iinfo(np.int64).min)
    out = np.full((n, c, oh, ow), np.iinfo(np.int64).min)
    for i in range(k):
        for j in range(k):
            out = np.maximum(out, xp[:, :, i:i + stride * (oh - 1) + 1:stride,
                                     j:j + stride * (ow - 1) + 1:stride])
    return out.astype(np.int8)


def depthwise_ref(x, w, *, stride=1, pad=0, requant=Requant()):
    """int8 depthwise convolution: channel c of ``x[N, C, H, W]`` with ``w[C, 1, KH, KW]``."""
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    n, c, h, wd = x.shape
    _, _, kh, kw = w.shape
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    acc = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            acc += xp[:, :, i:i + stride * (oh - 1) + 1:stride,
                      j:j + stride * (ow - 1) + 1:stride] * w[None, :, 0, i, j, None, None]
    return requant.reference(wrap32(acc))
