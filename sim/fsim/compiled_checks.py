"""The compiled runs' first pass (:mod:`.prepare`, for the timing-only :mod:`.compiled` and the
bit-exact :mod:`.compiled_exact`): whether they can run a stream whole, and the ``meets`` column
the compiled scheduler needs.

It changes nothing but a copy of the micro-op scratchpad: it runs the micro-op LOADs on it in
stream order (the compute stage's order; only that stage reads or writes micro-ops) and, for
every instruction, tests what the Python machine checks as it runs (docs/isa.md §3: DRAM
windows, error 9; scratchpad rows and GEMM/ALU indices, error 10). It is stricter than the
machine: it also refuses anything that would *wrap* (a scratchpad index past the end in
non-strict mode, a DRAM window across 2^32), and in a bit-exact run a micro-op LOAD whose DRAM
bytes a STORE of the stream may write (the copy reads DRAM as it was at launch, as a timing-only
run's micro-op LOADs do: its STOREs write nothing). A stream it refuses goes to the Python
machine, the reference, which says what went wrong or wraps; so the bit-exact second pass
(:mod:`.compiled_data`) can run its instructions without a check, and a stream is either run
whole by the compiled passes or not touched by them.

``meets`` is :func:`~.timing.banks_meet` of each GEMM after an ALU instruction in the compute
stage: the ALU's ACC row bounds as the RTL computes them (one micro-op, dst and src ranges that
do not wrap) against the GEMM's smallest and largest dst row (:func:`~.timing.acc_row_bounds`),
with the micro-ops of the time; 1 for every other instruction.

Imported by :func:`.prepare.load` only when a compiled run needs it (importing numba takes a
quarter of a second, and most runs never need it).
"""

import numba
import numpy as np

from avta.isa.enums import MemType, Opcode

from .compiled_table import (ALU_OPCODE, DRAM_BASE, DST_FACTOR_IN, DST_FACTOR_OUT, IMM,
                             ITER_IN, ITER_OUT, MEMORY_TYPE, OPCODE, PAD_VALUE, RESET, SRAM_BASE,
                             SRC_FACTOR_IN, SRC_FACTOR_OUT, UOP_BGN, UOP_END, WGT_FACTOR_IN,
                             WGT_FACTOR_OUT, X_PAD_0, X_PAD_1, X_SIZE, X_STRIDE, Y_PAD_0, Y_PAD_1,
                             Y_SIZE)

__all__ = ["check_stream", "fill_table", "load_rows_raw", "uop_field"]

_LOAD, _STORE, _GEMM, _ALU = int(Opcode.LOAD), int(Opcode.STORE), int(Opcode.GEMM), int(Opcode.ALU)
_UOP, _WGT, _INP, _ACC, _OUT, _ACC_8BIT = (int(MemType.UOP), int(MemType.WGT), int(MemType.INP),
                                           int(MemType.ACC), int(MemType.OUT),
                                           int(MemType.ACC_8BIT))
#: Addresses are 32 bits (the AXI address width, dram.py).
_ADDR_LIMIT = 1 << 32
#: Highest ALU opcode docs/isa.md §3.4 defines (SCL).
_ALU_OPS = 8

jit = numba.njit(cache=True, nogil=True)


@jit
def fill_table(words, word, shift, mask, imm_sign, table):
    """Fill ``table`` (:mod:`.compiled_table`) from the stream's words (``(n, words)``
    unsigned), at the places of :func:`~.compiled_table.placement`."""
    for i in range(words.shape[0]):
        op = (words[i, word[0, OPCODE]] >> shift[0, OPCODE]) & mask[0, OPCODE]
        view = 1 if op == _ALU else 0
        for f in range(table.shape[0]):
            table[f, i] = np.int64((words[i, word[view, f]] >> shift[view, f]) & mask[view, f])
        table[IMM, i] = (table[IMM, i] ^ imm_sign) - imm_sign


@jit
def uop_field(words, u, shift, mask, field):
    """Field ``field`` (0 dst, 1 src, 2 wgt) of micro-op ``u``."""
    return (np.int64(words[u]) >> shift[field]) & mask[field]


@jit
def _window(t, i, mtype, base_of, elem_of):
    """``(first byte, end byte)`` of the DRAM window of LOAD or STORE ``i`` of memory type
    ``mtype``, with ``y_size`` and ``x_size`` > 0 (:meth:`.dram.Dram.window_inside`)."""
    elem = elem_of[mtype]
    last = t[DRAM_BASE, i] + (t[Y_SIZE, i] - 1) * t[X_STRIDE, i] + t[X_SIZE, i] - 1
    return base_of[mtype] + t[DRAM_BASE, i] * elem, base_of[mtype] + last * elem + elem


@jit
def _rows(t, i):
    """Scratchpad rows LOAD ``i`` writes (its padded window; memops.load_rows)."""
    return (t[X_PAD_0, i] + t[X_SIZE, i] + t[X_PAD_1, i]) * \
        (t[Y_PAD_0, i] + t[Y_SIZE, i] + t[Y_PAD_1, i])


@jit
def load_rows_raw(raw, t, i, dram, base, elem, pad_row):
    """LOAD ``i`` into ``raw`` (a scratchpad's ``(depth, row_bytes)`` bytes), its elements
    copied as they are (every type but ACC_8BIT) and padding rows ``pad_row``; nothing wraps
    (:func:`check_stream`)."""
    width = t[X_PAD_0, i] + t[X_SIZE, i] + t[X_PAD_1, i]
    y_size, x_size, y_pad, x_pad = t[Y_SIZE, i], t[X_SIZE, i], t[Y_PAD_0, i], t[X_PAD_0, i]
    row_bytes = raw.shape[1]
    sram = t[SRAM_BASE, i]
    for cell in range(_rows(t, i)):
        r = cell // width - y_pad
        c = cell % width - x_pad
        row = sram + cell
        if 0 <= r < y_size and 0 <= c < x_size:
            addr = base + (t[DRAM_BASE, i] + r * t[X_STRIDE, i] + c) * elem
            for k in range(row_bytes):
                raw[row, k] = dram[addr + k]
        else:
            for k in range(row_bytes):
                raw[row, k] = pad_row[k]


@jit
def _bounded(t, i, words, shift, mask, field, f_out, f_in):
    """``(lo, hi)``: the smallest and largest row field ``field`` (0 dst, 1 src, 2 wgt) of
    GEMM or ALU ``i`` reaches over its steps (indices never shrink: factors are not negative)."""
    lo, hi = np.int64(1) << 62, np.int64(-1)
    for u in range(t[UOP_BGN, i], t[UOP_END, i]):
        v = uop_field(words, u, shift, mask, field)
        lo, hi = min(lo, v), max(hi, v)
    return lo, hi + (t[ITER_OUT, i] - 1) * t[f_out, i] + (t[ITER_IN, i] - 1) * t[f_in, i]


@jit
def _kernel_ok(t, i, words, shift, mask, uop_depth, depth_of):
    """Whether GEMM or ALU ``i`` with steps reads and writes only rows inside the scratchpads
    (the micro-ops included), without wrapping, and names an ALU operation that exists."""
    if t[UOP_END, i] > uop_depth:
        return False
    acc_depth = depth_of[_ACC]
    if _bounded(t, i, words, shift, mask, 0, DST_FACTOR_OUT, DST_FACTOR_IN)[1] >= acc_depth:
        return False
    src_hi = _bounded(t, i, words, shift, mask, 1, SRC_FACTOR_OUT, SRC_FACTOR_IN)[1]
    if t[OPCODE, i] == _ALU:
        return t[ALU_OPCODE, i] < _ALU_OPS and src_hi < acc_depth
    if t[RESET, i]:
        return True
    wgt_hi = _bounded(t, i, words, shift, mask, 2, WGT_FACTOR_OUT, WGT_FACTOR_IN)[1]
    return src_hi < depth_of[_INP] and wgt_hi < depth_of[_WGT]


@jit
def check_stream(t, dram, base_of, elem_of, depth_of, pad_rows, uop_raw, words, shift, mask,
                 bank_rows, stores_write, meets):
    """-1 when the compiled passes can run stream ``t`` (:mod:`.compiled_table`) whole, else
    the index of the first instruction they leave to Python (the module docstring); fills
    ``meets``. ``uop_raw`` is a copy of the micro-op scratchpad (``words`` the same memory as
    micro-op words), ``pad_rows[mtype, pad_value]`` each LOAD's padding row; ``stores_write``
    whether the STOREs write DRAM (not in a timing-only run)."""
    n = t.shape[1]
    dram_end = min(dram.shape[0], _ADDR_LIMIT)
    # The DRAM bytes the STOREs may write: the micro-op LOADs must not read them.
    store_lo, store_hi = dram_end, np.int64(0)
    for i in range(n if stores_write else 0):
        if t[OPCODE, i] == _STORE and t[X_SIZE, i] > 0 and t[Y_SIZE, i] > 0:
            lo, hi = _window(t, i, _OUT, base_of, elem_of)
            store_lo, store_hi = min(store_lo, lo), max(store_hi, hi)
    uop_depth = depth_of[_UOP]
    alu_lo0, alu_hi0, alu_lo1, alu_hi1, alu_bounded = 0, 0, 0, 0, False
    for i in range(n):
        meets[i] = 1
        op = t[OPCODE, i]
        if op == _LOAD or op == _STORE:
            if t[X_SIZE, i] == 0:
                continue
            mtype = _OUT if op == _STORE else t[MEMORY_TYPE, i]
            if mtype > _ACC_8BIT or (op == _LOAD and mtype == _OUT):
                return i
            inside = True
            lo, hi = np.int64(0), np.int64(0)
            if t[Y_SIZE, i] > 0:
                lo, hi = _window(t, i, mtype, base_of, elem_of)
                inside = hi <= dram_end
            rows = t[X_SIZE, i] * t[Y_SIZE, i] if op == _STORE else _rows(t, i)
            if not inside or (rows > 0 and t[SRAM_BASE, i] + rows > depth_of[mtype]):
                return i
            if op == _LOAD and mtype == _UOP:
                if hi > lo and lo < store_hi and store_lo < hi:
                    return i
                load_rows_raw(uop_raw, t, i, dram, base_of[mtype], elem_of[mtype],
                              pad_rows[mtype, t[PAD_VALUE, i]])
            continue
        if op != _GEMM and op != _ALU:
            continue
        steps = t[ITER_OUT, i] * t[ITER_IN, i] * max(0, t[UOP_END, i] - t[UOP_BGN, i])
        if steps > 0 and not _kernel_ok(t, i, words, shift, mask, uop_depth, depth_of):
            return i
        # timing.acc_row_bounds, with the micro-ops of the time (no bounds without steps).
        lo0, hi0 = _bounded(t, i, words, shift, mask, 0, DST_FACTOR_OUT, DST_FACTOR_IN)
        if op == _ALU:
            alu_bounded = steps > 0 and t[UOP_END, i] - t[UOP_BGN, i] == 1
            if alu_bounded:
                lo1, hi1 = _bounded(t, i, words, shift, mask, 1, SRC_FACTOR_OUT,
                                    SRC_FACTOR_IN)
                alu_lo0, alu_hi0, alu_lo1, alu_hi1 = lo0, hi0, lo1, hi1
        elif steps > 0 and alu_bounded:
            # timing.banks_meet: the GEMM's dst rows against the ALU's dst and src rows.
            g_lo, g_hi = lo0 // bank_rows, hi0 // bank_rows
            meet = (alu_lo0 // bank_rows <= g_hi and g_lo <= alu_hi0 // bank_rows) or \
                (alu_lo1 // bank_rows <= g_hi and g_lo <= alu_hi1 // bank_rows)
            meets[i] = 1 if meet else 0
    return -1
