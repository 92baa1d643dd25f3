"""Blocked matrix multiply and the dense (fully connected) layer, with a requantization tail.

**matmul.** ``C[M, N] = requant(A[M, K] · W[N, K]ᵀ + bias[N])`` is a 1×1 convolution of a
one-row image: batch rows ``b`` of a block of ``BATCH`` rows of A are the batch, the ``M / BATCH``
blocks are the image's columns and K is the channels. :mod:`avta.runtime.ops.conv2d` then tiles it
(``tw`` row blocks × ``tco`` column blocks per tile, ``tci`` blocks of K per load task,
accumulating over the tasks) and double-buffers it with two virtual threads, so the weights of a
tile serve every row block in it. In DRAM, A is stored K-block major (``(K/BLOCK_IN, M/BATCH,
BATCH, BLOCK_IN)``), W as ``(N/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN)`` and C as
``(N/BLOCK_OUT, M/BATCH, BATCH, BLOCK_OUT)``.

**dense.** ``y[N, O] = requant(x[N, K] · w[O, K]ᵀ + bias[O])`` in conv2d's own layouts: the
batch N is conv2d's batch and the image is 1×1, so x is ``(N/B, K/BI, 1, 1, B, BI)`` INP elements
and y ``(N/B, O/BO, 1, 1, B, BO)`` OUT elements — exactly what a global average pooling writes and
what the next layer reads (:func:`build_dense`). When every batch block of x is one tile, this
is the matmul above with M = BATCH; with several batch blocks the weights are read once per batch
block unless they fit WGT whole (use :func:`matmul` for large M).

**Shapes that are not whole blocks.** The device-level :func:`matmul` and :func:`dense` pad on
the host: rows of A (the batch of x) with zero rows up to a multiple of BATCH — a batch of 1 on
``batch2`` runs as 2 rows, the second all zero, and its results are dropped; :func:`dense` also
pads K with zero columns of x and w (they add nothing to the sums) up to a multiple of BLOCK_IN
and O with zero rows of w and zero bias up to a multiple of BLOCK_OUT (those outputs are
dropped), so ResNet's 512 → 1000 classifier runs on every configuration. The ``build_*``
functions take DRAM operands as they are and refuse shapes that are not whole blocks (the padding
is then the caller's, in its DRAM layout).
"""

import numpy as np

from ..packing import pad_channels
from .conv2d import build_conv2d, conv2d
from .conv_plan import Conv2dShape, plan_conv2d
from .requant import Requant

__all__ = ["matmul", "dense", "matmul_shape", "build_matmul", "plan_matmul", "dense_shape",
           "build_dense", "plan_dense"]


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
    stores weights) and optional int32 ``bias[N]``, on ``device``. Any M: rows are padded with
    zeros up to a multiple of BATCH (module docstring); K and N must be whole blocks."""
    cfg = device.cfg
    a, w = np.asarray(a, np.int8), np.asarray(w, np.int8)
    (m, k), n = a.shape, w.shape[0]
    if w.shape[1] != k:
        raise ValueError(f"A is {m}x{k} but W is {w.shape[0]}x{w.shape[1]}: W must be N x K")
    a = pad_channels(a, cfg.batch, 0)
    mp = a.shape[0]
    matmul_shape(cfg, mp, k, n)
    # x[b, k, 0, j] = A[j·BATCH + b, k]: row blocks of A become the image's columns.
    x = a.reshape(mp // cfg.batch, cfg.batch, k).transpose(1, 2, 0)[:, :, None, :]
    out = conv2d(device, x, w[:, :, None, None], bias, requant=requant, threads=threads,
                 tiling=tiling)
    return out[:, :, 0, :].transpose(2, 0, 1).reshape(mp, n)[:m]


def dense_shape(cfg, n, k, o):
    """The :class:`Conv2dShape` of a dense layer: batch ``n``, ``k`` inputs, ``o`` outputs, a
    1×1 image; :class:`~avta.runtime.ops.conv_plan.PlanError` unless they are whole blocks."""
    shape = Conv2dShape(n, k, 1, 1, o, 1, 1, 0, 1)
    shape.check(cfg)
    return shape


def plan_dense(cfg, n, k, o, **options):
    return plan_conv2d(cfg, dense_shape(cfg, n, k, o), **options)


def build_dense(cfg, n, k, o, bufs, **options):
    """The program of one dense layer on the operands at ``bufs``
    (:class:`~avta.runtime.ops.conv2d.Conv2dBuffers`): x as INP elements ``(N/B, K/BI, 1, 1, B,
    BI)``, w as WGT elements ``(O/BO, K/BI, 1, 1, BO, BI)``, y as OUT elements ``(N/B, O/BO, 1,
    1, B, BO)``, bias (optional) as ACC elements ``(O/BO, B, BO)``; ``options`` as for
    :func:`~avta.runtime.ops.conv2d.build_conv2d`."""
    return build_conv2d(cfg, dense_shape(cfg, n, k, o), bufs, **options)


def dense(device, x, w, bias=None, *, requant=Requant(), threads=2, tiling=None):
    """A fully connected layer on ``device``: int8 ``y[N, O] = requant(x[N, K] · w[O, K]ᵀ +
    bias[O])`` (int32 bias, added after the shift) for any N, K and O — padded with zeros to
    whole blocks on the host (module docstring); bit for bit
    :func:`~avta.runtime.ops.reference.matmul_ref`."""
    cfg = device.cfg
    x, w = np.asarray(x, np.int8), np.asarray(w, np.int8)
    if x.ndim != 2 or w.ndim != 2 or w.shape[1] != x.shape[1]:
        raise ValueError(f"dense of x {x.shape} and w {w.shape}: x must be N x K and w O x K")
    (n, _), o = x.shape, w.shape[0]
    xp = pad_channels(pad_channels(x, cfg.batch, 0), cfg.block_in)
    wp = pad_channels(pad_channels(w, cfg.block_out, 0), cfg.block_in)
    bp = None if bias is None else pad_channels(np.asarray(bias, np.int32).reshape(o),
                                               cfg.block_out, 0)
    out = conv2d(device, xp[:, :, None, None], wp[:, :, None, None], bp, requant=requant,
                 threads=threads, tiling=tiling)
    return out[:n, :o, 0, 0]
