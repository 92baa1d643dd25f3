"""ALU (docs/isa.md §3.4): the operations, and execution in hazard-free chunks of steps.

Every step must see all earlier steps, through dst and through src, at any distance. Each step
reads ACC[src] (every form does) and reads or writes ACC[dst], so a run of consecutive steps can
be computed as one vector operation exactly when no step in it touches a row that an earlier
step of the same run wrote. :func:`hazard_free_chunks` splits the steps into the longest such
runs; a program with no hazards (the common requantization tail) is one chunk.
"""

import numpy as np

from avta.isa.enums import AluOp
from avta.isa.formats import IMM_BITS

from .loops import LoopNest

__all__ = ["alu_op", "alu_imm", "execute_alu", "hazard_free_chunks", "last_writer_before",
           "scale_widths"]

_ACC_LANE_BITS = 32             # docs/isa.md §1: LOG_ACC_WIDTH is 5 (int32)
_SHIFT_BITS = 6                 # SHR uses B[5:0] as a signed amount (docs/isa.md §3.4)


def scale_widths(cfg):
    """``(W, shift)`` of SCL on ``cfg`` (docs/isa.md §3.4): the width of its multiplier (it
    multiplies by sext(B[W−1:0]) / 2^(W−1), rounding down) and how far an immediate is shifted
    up to be the multiplier's top :data:`~avta.isa.formats.IMM_BITS` bits, sext(imm) ·
    2^(W−16). A configuration without SCL never runs it: ``(IMM_BITS, 0)`` there."""
    scale_bits = cfg.scale_bits or IMM_BITS
    return scale_bits, scale_bits - IMM_BITS


def _sext(value, bits):
    """Sign-extend the low ``bits`` bits of an int32 array, as int32."""
    mask = (1 << bits) - 1
    sign = 1 << (bits - 1)
    return ((value & mask) ^ sign) - sign


def alu_op(op, a, b, *, scale_bits=16):
    """f(A, B) of docs/isa.md §3.4, lane by lane on int32 arrays of one shape, wrapping; SCL's
    multiplier is ``scale_bits`` (W) wide."""
    if op == AluOp.MIN:
        return np.minimum(a, b)
    if op == AluOp.MAX:
        return np.maximum(a, b)
    if op == AluOp.ADD:
        return a + b
    if op == AluOp.SHR:
        s = _sext(b, _SHIFT_BITS)
        right = a >> np.clip(s, 0, _ACC_LANE_BITS - 1)
        # A left shift by up to 32 is computed in int64 and wrapped back to 32 bits.
        left = (a.astype(np.int64) << np.clip(-s, 0, None).astype(np.int64)).astype(np.int32)
        return np.where(s >= 0, right, left)
    if op == AluOp.MUL:
        return _sext(a, 8) * _sext(b, 8)
    if op == AluOp.CLP:
        return np.maximum(np.minimum(a, b), -b)
    if op == AluOp.MOV:
        return b.copy()
    if op == AluOp.SCL:
        # |A·m| <= 2^54: exact in int64, and >> floors.
        product = a.astype(np.int64) * _sext(b.astype(np.int64), scale_bits)
        return (product >> (scale_bits - 1)).astype(np.int32)
    raise ValueError(f"ALU opcode {op} is undefined")


def alu_imm(op, a, imm, *, scale_bits=16):
    """:func:`alu_op` with B every lane ``imm`` (an integer): MIN, MAX, ADD and SHR by the
    scalar, without a row of it (a requantization tail's every instruction); the others
    through :func:`alu_op`."""
    if op in (AluOp.MIN, AluOp.MAX, AluOp.ADD):
        b = np.int32(np.int64(imm).astype(np.int32))        # B = imm as an int32 lane
        return np.minimum(a, b) if op == AluOp.MIN else \
            np.maximum(a, b) if op == AluOp.MAX else a + b
    if op == AluOp.SHR:
        s = int(_sext(np.int64(imm), _SHIFT_BITS))
        if s >= 0:
            return a >> np.int32(min(s, _ACC_LANE_BITS - 1))
        return (a.astype(np.int64) << np.int64(-s)).astype(np.int32)
    return alu_op(op, a, np.full_like(a, imm), scale_bits=scale_bits)


def last_writer_before(rows, dst):
    """For each step s, the last step t < s with dst[t] == rows[s], or -1."""
    n = dst.size
    keys = np.sort(dst * n + np.arange(n, dtype=np.int64))
    query = rows * n + np.arange(n, dtype=np.int64)
    pos = np.searchsorted(keys, query, side="left") - 1
    found = keys[np.maximum(pos, 0)]
    return np.where((pos >= 0) & (found // n == rows), found % n, -1)


def hazard_free_chunks(dst, src):
    """``[(start, end), …]`` covering every step, each the longest hazard-free run from start.

    A step s conflicts with a run starting at a when a step t with a <= t < s wrote the row s
    reads (src, or dst for A) or writes (dst): read-after-write or write-after-write.
    Write-after-read inside a run is harmless: the vector form reads before it writes.
    """
    n = dst.size
    hazard = np.maximum(last_writer_before(dst, dst), last_writer_before(src, dst))
    if n == 0 or int(hazard.max()) < 0:
        return [(0, n)]
    chunks = []
    start = 0
    window = 64
    while start < n:
        end = start + 1
        while end < n:
            hits = np.flatnonzero(hazard[end:end + window] >= start)
            if hits.size:
                end += int(hits[0])
                break
            end += window
            window *= 4
        end = min(end, n)
        chunks.append((start, end))
        # The next run is probably about as long as this one.
        window = max(16, 2 * (end - start))
        start = end
    return chunks


def execute_alu(cfg, insn, pads, codec, *, strict, trace_rows=None, data=True):
    """Run an ALU instruction; ``trace_rows(memory, rows, data)`` sees every ACC row written.
    ``data=False`` (fsim's timing-only mode) makes only the checks: the same errors, no ACC
    row computed."""
    nest = LoopNest(insn, pads, codec, strict=strict)
    if nest.steps == 0:
        return
    depth = pads.depth("acc")
    nest.check_index(0, insn.dst_factor_out, insn.dst_factor_in, depth, strict, "ALU dst")
    nest.check_index(1, insn.src_factor_out, insn.src_factor_in, depth, strict, "ALU src")
    if not data:
        return
    scale_bits, imm_shift = scale_widths(cfg)
    if nest.steps <= MEMO_STEPS and trace_rows is None:
        # The kernel's chunks are a function of its micro-ops and loop fields: made once
        # between micro-op LOADs, as a requantization tail runs one kernel per tile.
        key = ("alu chunks", insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in,
               insn.dst_factor_out, insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in)
        chunks = pads.memo(key, ("uop",), lambda: _chunks(insn, nest, 0, nest.steps, depth))
        _run_chunks(insn, pads, chunks, None, scale_bits, imm_shift)
        return
    # Segment by segment in step order: a segment sees every write of the ones before it.
    for first, last in nest.segments():
        _run_chunks(insn, pads, _chunks(insn, nest, first, last, depth), trace_rows, scale_bits,
                    imm_shift)


#: ALU kernels of at most this many steps keep their chunks (:meth:`Scratchpads.memo`).
MEMO_STEPS = 1 << 16


def _chunks(insn, nest, first, last, depth):
    """``[(dst rows, src rows), …]`` of steps ``first`` to ``last``: the hazard-free chunks in
    order, each side a slice where its rows are one ascending range (a tile's rows usually are)
    and an index array otherwise."""
    dst = nest.index(0, insn.dst_factor_out, insn.dst_factor_in, first, last) % depth
    src = nest.index(1, insn.src_factor_out, insn.src_factor_in, first, last) % depth
    return [(_as_range(dst[start:end]), _as_range(src[start:end]))
            for start, end in hazard_free_chunks(dst, src)]


def _as_range(rows):
    """``rows`` as a slice when they are consecutive ascending rows, else as they are."""
    if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size \
            and (rows.size == 1 or bool((np.diff(rows) == 1).all())):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def _run_chunks(insn, pads, chunks, trace_rows, scale_bits, imm_shift):
    for d, s in chunks:
        operand = pads.acc[s]
        if insn.use_imm:
            # docs/isa.md §3.4: with an immediate the result is f(ACC[src], sext(imm)).
            # SCL's immediate is the multiplier's top 16 bits (sext(imm) · 2^(W−16)).
            imm = insn.imm << imm_shift if insn.alu_opcode == AluOp.SCL else insn.imm
            result = alu_imm(insn.alu_opcode, operand, imm, scale_bits=scale_bits)
        else:
            result = alu_op(insn.alu_opcode, pads.acc[d], operand, scale_bits=scale_bits)
        pads.write_acc(d, result)
        if trace_rows is not None:
            rows = np.arange(d.start, d.stop) if isinstance(d, slice) else d
            trace_rows("acc", rows, result.view(np.uint8).reshape(rows.size, -1))
