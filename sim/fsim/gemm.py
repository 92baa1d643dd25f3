"""GEMM (docs/isa.md §3.3), one vectorized pass per instruction.

A GEMM step adds INP[inp]·WGT[wgt]ᵀ to ACC[acc] and never reads ACC for anything else, and
wrapping int32 addition is associative and commutative, so every step seeing all earlier steps
is the same as adding all contributions at once: sort the steps by ACC row, compute the products
in chunks, and sum each row's group (``np.add.reduceat``). A reset GEMM writes zeros.
"""

import numpy as np

from .loops import LoopNest

__all__ = ["execute_gemm"]

#: Steps whose products are computed together; bounds the temporary arrays to a few MiB.
_CHUNK = 8192


def execute_gemm(cfg, insn, pads, codec, *, strict, trace_rows=None, data=True):
    """Run a GEMM; ``trace_rows(memory, rows, data)`` sees every ACC row written, step by step.
    ``data=False`` (fsim's timing-only mode) makes only the checks: the same errors, no ACC
    row computed."""
    nest = LoopNest(insn, pads, codec, strict=strict)
    if nest.steps == 0:
        return
    fields = [(0, insn.dst_factor_out, insn.dst_factor_in, "acc", "GEMM ACC")]
    if not insn.reset:
        fields += [(1, insn.src_factor_out, insn.src_factor_in, "inp", "GEMM INP"),
                   (2, insn.wgt_factor_out, insn.wgt_factor_in, "wgt", "GEMM WGT")]
    # Every index is checked before anything changes, then the steps run segment by segment in
    # their order (sums of products: the segments add up to the whole, wrapping alike). The
    # checks are a function of the micro-ops and the fields: once between micro-op LOADs (a
    # check that fails raises, and is not remembered).
    if strict:
        pads.memo(("gemm checked", *_loop_fields(insn), insn.wgt_factor_out, insn.wgt_factor_in,
                   insn.reset), ("uop",), lambda: _check(nest, fields, pads))
    if not data:
        return
    if not insn.reset and trace_rows is None and _as_matrix_product(insn, pads, nest):
        return
    for start, stop in nest.segments():
        acc_idx, *operands = (nest.index(field, f_out, f_in, start, stop) % pads.depth(pad)
                              for field, f_out, f_in, pad, _ in fields)
        if insn.reset:
            _reset(pads, acc_idx, trace_rows)
        else:
            _accumulate(pads, acc_idx, *operands, trace_rows)


def _check(nest, fields, pads):
    for field, f_out, f_in, pad, what in fields:
        nest.check_index(field, f_out, f_in, pads.depth(pad), True, what)
    return True


def _loop_fields(insn):
    """The fields that place a GEMM's steps (not the weights'): its kernel and loops."""
    return (insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in, insn.dst_factor_out,
            insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in)


def _reset(pads, acc_idx, trace_rows):
    rows = np.unique(acc_idx)
    pads.write_acc(rows, np.zeros((rows.size, *pads.acc.shape[1:]), dtype=pads.acc.dtype))
    if trace_rows is not None:
        zero = np.zeros((acc_idx.size, pads.raw("acc").shape[1]), dtype=np.uint8)
        trace_rows("acc", acc_idx, zero)


def _accumulate(pads, acc_idx, inp_idx, wgt_idx, trace_rows):
    order = np.argsort(acc_idx, kind="stable")
    contributions = _products(pads, inp_idx[order], wgt_idx[order])
    sorted_rows = acc_idx[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    rows = sorted_rows[starts]
    before = pads.acc[rows]
    # int32 addition wraps, as the accumulator does (docs/isa.md §3.3).
    pads.write_acc(rows, before + np.add.reduceat(contributions, starts, axis=0))
    if trace_rows is not None:
        values = _step_values(before, starts, contributions)
        in_order = np.empty_like(values)
        in_order[order] = values
        trace_rows("acc", acc_idx, in_order.view(np.uint8).reshape(acc_idx.size, -1))


def _products(pads, inp_idx, wgt_idx):
    """Per-step INP[inp]·WGT[wgt]ᵀ as int32, shape (steps, batch, block_out).

    float32 matrix products are exact here: a step sums BLOCK_IN ≤ 128 products of int8s, at
    most 2^21 in magnitude, well inside float32's 24-bit integer range, and they use BLAS.
    """
    inp = pads.as_float("inp")          # (depth, batch, block_in)
    wgt = pads.as_float("wgt")          # (depth, block_out, block_in)
    out = np.empty((inp_idx.size,) + pads.acc.shape[1:], dtype=np.int32)
    for start in range(0, inp_idx.size, _CHUNK):
        part = slice(start, start + _CHUNK)
        out[part] = np.matmul(inp[inp_idx[part]], wgt[wgt_idx[part]].transpose(0, 2, 1))
    return out


def _step_values(before, starts, contributions):
    """The value each step (in ACC-row-sorted order) leaves in its row, for the trace: the
    row's value before the GEMM plus this and the earlier contributions to the same row."""
    running = np.cumsum(contributions, axis=0, dtype=np.int64)
    group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, running.shape[0]]))
    group_base = np.zeros_like(before, dtype=np.int64)
    group_base[1:] = running[starts[1:] - 1]
    # int64 → int32 keeps the low 32 bits: the wrapping sum.
    return (before[group] + (running - group_base[group])).astype(np.int32)


#: Elements of the input matrix a product form builds at once (bounds fsim's memory).
_MATRIX_ELEMENTS = 1 << 18
#: float32 sums of int8 products are exact while they stay within 2^24: 2^10 products of at
#: most 2^14 each; a longer dot product is computed in float64 (exact to 2^53).
_FLOAT32_TERMS = 1 << 10


#: A kernel whose micro-ops pair R src rows with D dst rows runs as a matrix product while
#: R·D is at most this many times its micro-ops: the pairs it lacks cost products by zero
#: weights (a 3x3 convolution's kernel at a tile's edge pairs 3 src rows with 4 dst rows in 9
#: micro-ops), and a sparser one is cheaper step by step.
_PAIRS_PER_UOP = 2


def _product_form(insn, nest):
    """``(src rows, dst rows, weight table)`` when the micro-ops pair R distinct src rows with
    D distinct dst rows, each pair at most once and R·D at most :data:`_PAIRS_PER_UOP` times
    the micro-ops, and the weights do not move with the loops (``table[r, d]`` the pair's
    weight row, −1 for a pair no micro-op has); None otherwise."""
    if insn.wgt_factor_out or insn.wgt_factor_in:
        return None
    dst, src, wgt = nest.uop_field(0), nest.uop_field(1), nest.uop_field(2)
    src_rows, r = np.unique(src, return_inverse=True)
    dst_rows, d = np.unique(dst, return_inverse=True)
    if src_rows.size * dst_rows.size > _PAIRS_PER_UOP * src.size:
        return None
    table = np.full((src_rows.size, dst_rows.size), -1, dtype=np.int64)
    table[r, d] = wgt
    if np.count_nonzero(table >= 0) != src.size:      # a pair twice
        return None
    return src_rows, dst_rows, table


def _weights(pads, table, dtype):
    """The weight matrix of a kernel's pairs ``table``: (R·block_in, D·block_out)."""
    wgt = pads.as_float("wgt")
    r, d = table.shape
    blocks = wgt[table]                                     # (R, D, block_out, block_in)
    blocks[table < 0] = 0                   # a pair no micro-op has adds nothing
    weights = blocks.transpose(0, 3, 1, 2).reshape(r * wgt.shape[2], d * wgt.shape[1])
    return weights.astype(dtype, copy=False)


def _as_matrix_product(insn, pads, nest):
    """Run a GEMM of :func:`_product_form` as matrix products, P loop positions at a time;
    False (nothing done) when it has not that form. Indices were checked by the caller.

    The form is a function of the kernel's micro-ops, and its weight matrix of those and the
    weights: both are made once between the LOADs that change them (:meth:`Scratchpads.memo`),
    as a convolution runs one kernel over many tiles."""
    if insn.wgt_factor_out or insn.wgt_factor_in:
        return False
    kernel = (insn.uop_bgn, insn.uop_end)
    form = pads.memo(("gemm form", *kernel), ("uop",), lambda: _product_form(insn, nest))
    if form is None:
        return False
    src_rows, dst_rows, table = form
    inp = pads.as_float("inp")
    acc_depth, inp_depth = pads.depth("acc"), pads.depth("inp")
    r, d = table.shape
    batch, block_in = inp.shape[1:]
    block_out = pads.acc.shape[2]
    dtype = np.float32 if r * block_in <= _FLOAT32_TERMS else np.float64
    weights = pads.memo(("gemm weights", *kernel), ("uop", "wgt"),
                        lambda: _weights(pads, table, dtype))
    positions = insn.iter_out * insn.iter_in
    per_block = max(1, _MATRIX_ELEMENTS // (max(r * block_in, d * block_out) * batch))

    def blocks():
        return [_block(insn, form, first, min(positions, first + per_block), inp_depth,
                       acc_depth) for first in range(0, positions, per_block)]

    # Where the blocks read and write is a function of the kernel and its loops: kept between
    # micro-op LOADs when small (a convolution runs one kernel over every tile alike).
    plan = pads.memo(("gemm plan", *_loop_fields(insn)), ("uop",), blocks) \
        if positions * (r + d) <= _PLAN_ELEMENTS else blocks()
    for rows_in, rows, d_major, ascending in plan:
        inputs = inp[rows_in].transpose(0, 2, 1, 3).reshape(-1, r * block_in)
        sums = (inputs.astype(dtype, copy=False) @ weights).astype(np.int64)
        # (P·B, D·BO) -> one (B, BO) block per ACC row, in the order of ``rows``.
        sums = sums.reshape(-1, batch, d, block_out)
        sums = sums.transpose(2, 0, 1, 3) if d_major else sums.transpose(0, 2, 1, 3)
        _add_rows(pads, rows, sums.reshape(-1, batch, block_out), ascending)
    return True


#: Row numbers a GEMM's plan may hold to be kept (:meth:`Scratchpads.memo`).
_PLAN_ELEMENTS = 1 << 16


def _block(insn, form, first, stop, inp_depth, acc_depth):
    """Loop positions ``first`` to ``stop`` of a product-form GEMM: ``(INP rows (P, R), ACC
    rows, D-major, ascending)``. The ACC rows are P-major then D; or D-major when that puts
    them in ascending order (a tile's output blocks lie one after another, each the tile's
    pixels), which :func:`_add_rows` takes without sorting."""
    src_rows, dst_rows, _ = form
    i_o, i_i = np.divmod(np.arange(first, stop, dtype=np.int64), insn.iter_in)
    src_at = i_o * insn.src_factor_out + i_i * insn.src_factor_in
    dst_at = i_o * insn.dst_factor_out + i_i * insn.dst_factor_in
    rows_in = (src_at[:, None] + src_rows) % inp_depth                          # (P, R)
    rows = (dst_at[:, None] + dst_rows) % acc_depth                            # (P, D)
    if _ascending(rows.reshape(-1)):
        return rows_in, rows.reshape(-1), False, True
    if dst_rows.size > 1 and _ascending(rows.T.reshape(-1)):
        return rows_in, rows.T.reshape(-1), True, True
    return rows_in, rows.reshape(-1), False, False


def _ascending(rows):
    """Whether ``rows`` rise strictly (so none repeats)."""
    return rows.size == 1 or bool((rows[1:] > rows[:-1]).all())


def _add_rows(pads, rows, sums, ascending=None):
    """ACC[rows] += sums (int64, wrapped to int32), rows that repeat summed first;
    ``ascending``: whether ``rows`` rise strictly, when the caller knows."""
    if ascending if ascending is not None else _ascending(rows):
        unique, total = rows, sums            # no row repeats: as they are
    else:
        order = np.argsort(rows, kind="stable")
        sorted_rows = rows[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_rows[1:] != sorted_rows[:-1])))
        unique = sorted_rows[starts]
        total = sums[order] if starts.size == rows.size else \
            np.add.reduceat(sums[order], starts, axis=0)
    if unique[-1] - unique[0] + 1 == unique.size:
        # A tile's accumulators are one range of rows: slices, not gathers and scatters.
        unique = slice(int(unique[0]), int(unique[-1]) + 1)
    # int32 addition wraps, as the accumulator does (docs/isa.md §3.3).
    pads.write_acc(unique, (pads.acc[unique] + total).astype(np.int32))
