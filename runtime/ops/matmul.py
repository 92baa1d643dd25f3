"""Blocked matrix multiply (and dense) with a requantization tail.

``C[M, N] = requant(A[M, K] · W[N, K]ᵀ + bias[N])`` is a 1×1 convolution of a one-row image:
batch rows ``b`` of a block of ``BATCH`` rows of A are the batch, the ``M / BATCH`` blocks are the
image's columns and K is the channels. :mod:`avta.runtime.ops.conv2d` then tiles it (``tw`` row
blocks × ``tco`` column blocks per tile, ``tci`` blocks of K per load task, accumulating over the
tasks) and double-buffers it with two virtual threads. In DRAM, A is stored K-block major
(``(K/BLOCK_IN, M/BATCH, BATCH, BLOCK_IN)``), W as ``(N/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT,
BLOCK_IN)`` and C as ``(N/BLOCK_OUT, M/BATCH, BATCH, BLOCK_OUT)``.
"""

import numpy as np

from .conv2d import build_conv2d, conv2d
from .conv_plan import Conv2dShape, plan_conv2d
from .requant import Requant

__all__ = ["matmul", "dense", "matmul_shape", "build_matmul", "plan_matmul"]


def matmul_shape(cfg, m, k, n):
    """The :class:`Conv2dShape` that computes an ``m × k`` by ``k × n`` product."""
    for what, value, block, key in (("M", m, cfg.batch, "BATCH"), ("K", k, cfg.block_in,
                                                                  "BLOCK_IN"),
                                    ("N", n, cfg.block_out, "BLOCK_OUT")):
        if value % block:
            raise ValueError(f"{what} = {value} is not a multiple of {key} = {block} on "
                             f"{cfg.name!r}; pad the matrix")
    return Conv2dShape(cfg.batch, k, 1, m // cfg.batch, n, 1, 1, 0, 1)


def plan_matmul(cfg, m, k, n, **options):
    return plan_conv2d(cfg, matmul_shape(cfg, m, k, n), **options)


def build_matmul(cfg, m, k, n, bufs, **options):
    """The program of one product on the operands at ``bufs``
    (:class:`~avta.runtime.ops.conv2d.Conv2dBuffers`, in the layouts above)."""
    return build_conv2d(cfg, matmul_shape(cfg, m, k, n), bufs, **options)


def matmul(device, a, w, bias=None, *, requant=Requant(), threads=2, tiling=None):
    """int8 ``C[M, N]`` for int8 ``a[M, K]`` and ``w[N, K]`` (output-channel major, as VTA
    stores weights) and optional int32 ``bias[N]``, on ``device``."""
    cfg = device.cfg
    a, w = np.asarray(a, np.int8), np.asarray(w, np.int8)
    (m, k), n = a.shape, w.shape[0]
    if w.shape[1] != k:
        raise ValueError(f"A is {m}x{k} but W is {w.shape[0]}x{w.shape[1]}: W must be N x K")
    matmul_shape(cfg, m, k, n)
    # x[b, k, 0, j] = A[j·BATCH + b, k]: row blocks of A become the image's columns.
    x = a.reshape(m // cfg.batch, cfg.batch, k).transpose(1, 2, 0)[:, :, None, :]
    out = conv2d(device, x, w[:, :, None, None], bias, requant=requant, threads=threads,
                 tiling=tiling)
    return out[:, :, 0, :].transpose(2, 0, 1).reshape(m, n)


#: A dense (fully connected) layer is the same product: ``y = requant(x · Wᵀ + bias)``.
dense = matmul
