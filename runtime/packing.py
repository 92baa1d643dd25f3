"""Host tensors to and from VTA's blocked DRAM layouts (ISA.md §3 row layouts).

A DRAM element is a byte copy of a scratchpad row: INP ``[b][k]`` int8, WGT ``[o][k]`` int8,
ACC ``[b][o]`` int32, OUT ``[b][o]`` int8. Tensors are blocked so that one element is one row:

* matrices: ``A[M, K]`` → ``(M/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN)``; weights ``W[N, K]`` →
  ``(N/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN)``; results ``C[M, N]`` →
  ``(M/BATCH, N/BLOCK_OUT, BATCH, BLOCK_OUT)``;
* feature maps (upstream's NCHWnc): ``x[N, C, H, W]`` → ``(N/BATCH, C/BLOCK, H, W, BATCH,
  BLOCK)`` with BLOCK = BLOCK_IN for inputs and BLOCK_OUT for outputs;
* kernels (OIHWoi): ``w[O, I, KH, KW]`` → ``(O/BLOCK_OUT, I/BLOCK_IN, KH, KW, BLOCK_OUT,
  BLOCK_IN)``.
"""

import numpy as np

__all__ = ["pack_matrix", "unpack_matrix", "pack_weights", "pack_nchw", "unpack_nchw",
           "pack_oihw", "check_multiple"]


def check_multiple(what, value, block, key):
    if value % block:
        raise ValueError(f"{what} = {value} is not a multiple of {key} = {block}; pad the tensor "
                         f"to a multiple of the configuration's block")


def pack_matrix(a, rows, cols):
    """``a[M, K]`` as ``(M/rows, K/cols, rows, cols)`` blocks."""
    m, k = a.shape
    return np.ascontiguousarray(a.reshape(m // rows, rows, k // cols, cols).transpose(0, 2, 1, 3))


def unpack_matrix(blocks):
    """Inverse of :func:`pack_matrix`."""
    mb, kb, rows, cols = blocks.shape
    return blocks.transpose(0, 2, 1, 3).reshape(mb * rows, kb * cols)


def pack_weights(cfg, w):
    """``w[N, K]`` (output-channel major, as WGT rows ``[o][k]``) in WGT elements."""
    check_multiple("weight rows N", w.shape[0], cfg.block_out, "BLOCK_OUT")
    check_multiple("weight columns K", w.shape[1], cfg.block_in, "BLOCK_IN")
    return pack_matrix(w, cfg.block_out, cfg.block_in)


def pack_nchw(x, batch, block):
    """``x[N, C, H, W]`` as ``(N/batch, C/block, H, W, batch, block)``."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(
        x.reshape(n // batch, batch, c // block, block, h, w).transpose(0, 2, 4, 5, 1, 3))


def unpack_nchw(blocks):
    """Inverse of :func:`pack_nchw`."""
    nb, cb, h, w, batch, block = blocks.shape
    return blocks.transpose(0, 4, 1, 5, 2, 3).reshape(nb * batch, cb * block, h, w)


def pack_oihw(w, block_out, block_in):
    """``w[O, I, KH, KW]`` as ``(O/block_out, I/block_in, KH, KW, block_out, block_in)``."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(
        w.reshape(o // block_out, block_out, i // block_in, block_in, kh, kw)
        .transpose(0, 2, 4, 5, 1, 3))
