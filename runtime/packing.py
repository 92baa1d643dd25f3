"""Host tensors to and from VTA's blocked DRAM layouts (docs/isa.md §3 row layouts).

A DRAM element is a byte copy of a scratchpad row: INP ``[b][k]`` int8, WGT ``[o][k]`` int8,
ACC ``[b][o]`` int32, OUT ``[b][o]`` int8. Tensors are blocked so that one element is one row:

* feature maps (upstream's NCHWnc): ``x[N, C, H, W]`` → ``(N/BATCH, C/BLOCK, H, W, BATCH,
  BLOCK)`` with BLOCK = BLOCK_IN for GEMM inputs (INP elements) and BLOCK_OUT for outputs (OUT
  elements) and for the inputs of the ACC-only operators (ACC_8BIT elements);
* kernels (OIHWoi): ``w[O, I, KH, KW]`` → ``(O/BLOCK_OUT, I/BLOCK_IN, KH, KW, BLOCK_OUT,
  BLOCK_IN)`` (WGT elements, output-channel major);
* depthwise kernels on the GEMM core: ``w[C, 1, KH, KW]`` → ``(C/BLOCK, KH, KW, BLOCK,
  BLOCK)``, the diagonal blocks of the dense kernel that has ``w[c, 0]`` at ``[c, c]`` and zeros
  elsewhere (:func:`pack_diagonal`): output block ``j`` reads input block ``j`` only, so the
  zero blocks off the diagonal are never stored.

A tensor whose channels are not a whole number of blocks — an RGB image's 3 channels, and so the
3 input channels of a network's first convolution (its stem) — is padded with zero channels first
(:func:`pad_channels`, on the input's C and on the kernel's I alike): a zero input channel times
any weight, and any input times a zero weight, adds nothing to a sum, so the padded convolution
computes exactly the same outputs.
"""

import numpy as np

__all__ = ["pack_nchw", "unpack_nchw", "pack_oihw", "pack_diagonal", "pad_channels"]


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


def pack_diagonal(w, block):
    """Depthwise ``w[C, 1, KH, KW]`` as ``(C/block, KH, KW, block, block)``: per channel block
    and kernel position the ``block × block`` WGT element ``[o][i]`` holding channel
    ``o``'s weight where ``o = i`` and 0 elsewhere."""
    c, one, kh, kw = w.shape
    if one != 1 or c % block:
        raise ValueError(f"depthwise weights must be [C, 1, KH, KW] with C a multiple of "
                         f"{block}; got {list(w.shape)}")
    taps = np.asarray(w, np.int8)[:, 0].reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1)
    out = np.zeros((c // block, kh, kw, block, block), np.int8)
    lane = np.arange(block)
    out[..., lane, lane] = taps
    return out


def pad_channels(x, multiple, axis=1):
    """``x`` with zeros appended along ``axis`` (by default the channels: NCHW's C, OIHW's I) up
    to a multiple of ``multiple``; ``x`` itself when it is one already."""
    x = np.asarray(x)
    extra = -x.shape[axis] % multiple
    if not extra:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return np.pad(x, widths)
