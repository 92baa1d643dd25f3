"""The compiled data interpreter's second pass (:mod:`.compiled_exact`): the data work of a whole
stream in one numba call, instruction by instruction in the order the scheduler ran them.

What each instruction does is docs/isa.md §3, as the Python machine does it (:mod:`.memops`,
:mod:`.gemm`, :mod:`.alu`), but step by step in the order of the ISA's loop nest, which is what
the Python machine's vector forms are proven equal to: LOAD (elements copied as bytes, ACC_8BIT
sign-extended, padding rows), GEMM (reset, or ACC[dst] += INP[src]·WGT[wgt]ᵀ wrapping in int32),
the ALU operations f(ACC[dst], ACC[src]) or f(ACC[src], imm), and STORE of OUT rows; every ACC
row written is mirrored into OUT (its lanes' low bytes). Nothing here checks anything: the first
pass (:mod:`.compiled_checks`) has made sure no index or address is out of range or wraps.

Imported by :mod:`.compiled_exact` only when the interpreter is loaded.
"""

import numpy as np

from avta.isa.enums import AluOp, MemType, Opcode

from .compiled_checks import jit, load_rows_raw, uop_field
from .compiled_table import (ALU_OPCODE, DRAM_BASE, DST_FACTOR_IN, DST_FACTOR_OUT, IMM,
                             ITER_IN, ITER_OUT, MEMORY_TYPE, OPCODE, PAD_VALUE, RESET, SRAM_BASE,
                             SRC_FACTOR_IN, SRC_FACTOR_OUT, UOP_BGN, UOP_END, USE_IMM,
                             WGT_FACTOR_IN, WGT_FACTOR_OUT, X_PAD_0, X_PAD_1, X_SIZE, X_STRIDE,
                             Y_PAD_0, Y_PAD_1, Y_SIZE)

__all__ = ["execute_stream"]

_LOAD, _STORE, _GEMM, _ALU = int(Opcode.LOAD), int(Opcode.STORE), int(Opcode.GEMM), int(Opcode.ALU)
_UOP, _WGT, _INP, _OUT, _ACC_8BIT = (int(MemType.UOP), int(MemType.WGT), int(MemType.INP),
                                     int(MemType.OUT), int(MemType.ACC_8BIT))
_MIN, _MAX, _ADD, _SHR, _MUL, _CLP, _MOV, _SCL = (
    int(AluOp.MIN), int(AluOp.MAX), int(AluOp.ADD), int(AluOp.SHR), int(AluOp.MUL),
    int(AluOp.CLP), int(AluOp.MOV), int(AluOp.SCL))
#: SHR's amount is B[5:0], signed; a right shift stops at the lane's 31 (alu.py).
_SHIFT_BITS, _LANE_TOP = 6, 31


@jit
def _wrap(x):
    """The int32 that int64 ``x`` wraps to."""
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


@jit
def _sext(x, bits):
    """The low ``bits`` bits of ``x``, sign-extended."""
    sign = np.int64(1) << (bits - 1)
    return ((x & ((sign << 1) - 1)) ^ sign) - sign


@jit
def alu_lane(op, a, b, scale_bits):
    """f(A, B) of docs/isa.md §3.4 on one lane (int32 values as int64), wrapped to int32."""
    if op == _MIN:
        r = min(a, b)
    elif op == _MAX:
        r = max(a, b)
    elif op == _ADD:
        r = a + b
    elif op == _SHR:
        s = _sext(b, _SHIFT_BITS)
        r = a >> min(s, _LANE_TOP) if s >= 0 else a << -s
    elif op == _MUL:
        r = _sext(a, 8) * _sext(b, 8)
    elif op == _CLP:
        r = max(min(a, b), _wrap(-b))
    elif op == _MOV:
        r = b
    else:                                                   # SCL
        r = (a * _sext(b, scale_bits)) >> (scale_bits - 1)
    return _wrap(r)


@jit
def _mirror(acc, out_raw, row):
    """OUT[row] = the low byte of each lane of ACC[row] (docs/isa.md §3: OUT mirrors ACC)."""
    for j in range(out_raw.shape[1]):
        out_raw[row, j] = acc[row, j] & 0xFF


@jit
def _load(t, i, dram, base_of, elem_of, pad_rows, uop_raw, inp_raw, wgt_raw, acc_raw, acc,
          out_raw):
    mtype = t[MEMORY_TYPE, i]
    pad_row = pad_rows[mtype, t[PAD_VALUE, i]]
    base, elem = base_of[mtype], elem_of[mtype]
    if mtype == _UOP:
        load_rows_raw(uop_raw, t, i, dram, base, elem, pad_row)
        return
    if mtype == _INP:
        load_rows_raw(inp_raw, t, i, dram, base, elem, pad_row)
        return
    if mtype == _WGT:
        load_rows_raw(wgt_raw, t, i, dram, base, elem, pad_row)
        return
    width = t[X_PAD_0, i] + t[X_SIZE, i] + t[X_PAD_1, i]
    count = width * (t[Y_PAD_0, i] + t[Y_SIZE, i] + t[Y_PAD_1, i])
    sram = t[SRAM_BASE, i]
    if mtype != _ACC_8BIT:
        load_rows_raw(acc_raw, t, i, dram, base, elem, pad_row)
    else:
        # One int8 per lane, sign-extended into the int32 lane (memories.py).
        for cell in range(count):
            r, c = cell // width - t[Y_PAD_0, i], cell % width - t[X_PAD_0, i]
            row = sram + cell
            if 0 <= r < t[Y_SIZE, i] and 0 <= c < t[X_SIZE, i]:
                addr = base + (t[DRAM_BASE, i] + r * t[X_STRIDE, i] + c) * elem
                for j in range(elem):
                    acc[row, j] = _sext(np.int64(dram[addr + j]), 8)
            else:
                for k in range(acc_raw.shape[1]):
                    acc_raw[row, k] = pad_row[k]
    for cell in range(count):
        _mirror(acc, out_raw, sram + cell)


@jit
def _store(t, i, dram, base_of, elem_of, out_raw):
    base, elem = base_of[_OUT], elem_of[_OUT]
    x_size, sram = t[X_SIZE, i], t[SRAM_BASE, i]
    for y in range(t[Y_SIZE, i]):
        for x in range(x_size):
            row = sram + y * x_size + x
            addr = base + (t[DRAM_BASE, i] + y * t[X_STRIDE, i] + x) * elem
            for k in range(out_raw.shape[1]):
                dram[addr + k] = out_raw[row, k]


@jit
def _gemm(t, i, words, shift, mask, inp, wgt, acc3, acc, out_raw):
    batch, block_out, block_in = acc3.shape[1], acc3.shape[2], inp.shape[2]
    reset = t[RESET, i] != 0
    for i_o in range(t[ITER_OUT, i]):
        for i_i in range(t[ITER_IN, i]):
            for u in range(t[UOP_BGN, i], t[UOP_END, i]):
                d = uop_field(words, u, shift, mask, 0) + i_o * t[DST_FACTOR_OUT, i] + \
                    i_i * t[DST_FACTOR_IN, i]
                if reset:
                    acc3[d] = 0
                else:
                    s = uop_field(words, u, shift, mask, 1) + i_o * t[SRC_FACTOR_OUT, i] + \
                        i_i * t[SRC_FACTOR_IN, i]
                    g = uop_field(words, u, shift, mask, 2) + i_o * t[WGT_FACTOR_OUT, i] + \
                        i_i * t[WGT_FACTOR_IN, i]
                    for b in range(batch):
                        for o in range(block_out):
                            total = np.int32(0)
                            for k in range(block_in):
                                total += np.int32(inp[s, b, k]) * np.int32(wgt[g, o, k])
                            acc3[d, b, o] = _wrap(np.int64(acc3[d, b, o]) + total)
                _mirror(acc, out_raw, d)


@jit
def _alu_row(op, acc, out_raw, d, s, use_imm, imm, scale_bits):
    """ACC[d] = f(ACC[d], ACC[src]), or f(ACC[src], imm) with an immediate, and its OUT mirror:
    one loop per common operation, which the compiler vectorizes, and :func:`alu_lane` for
    the others."""
    lanes = acc.shape[1]
    if use_imm and op == _SHR:
        shift = _sext(imm, _SHIFT_BITS)
        if shift >= 0:
            shift = min(shift, _LANE_TOP)
            for j in range(lanes):
                v = np.int64(acc[s, j]) >> shift
                acc[d, j] = v
                out_raw[d, j] = v & 0xFF
            return
    if use_imm and (op == _MIN or op == _MAX or op == _ADD):
        for j in range(lanes):
            a = np.int64(acc[s, j])
            v = min(a, imm) if op == _MIN else max(a, imm) if op == _MAX else _wrap(a + imm)
            acc[d, j] = v
            out_raw[d, j] = v & 0xFF
        return
    if not use_imm and (op == _MIN or op == _MAX or op == _ADD):
        for j in range(lanes):
            a, b = np.int64(acc[d, j]), np.int64(acc[s, j])
            v = min(a, b) if op == _MIN else max(a, b) if op == _MAX else _wrap(a + b)
            acc[d, j] = v
            out_raw[d, j] = v & 0xFF
        return
    for j in range(lanes):
        a = np.int64(acc[s, j]) if use_imm else np.int64(acc[d, j])
        b = imm if use_imm else np.int64(acc[s, j])
        v = alu_lane(op, a, b, scale_bits)
        acc[d, j] = v
        out_raw[d, j] = v & 0xFF


@jit
def _alu(t, i, words, shift, mask, acc, out_raw, scale_bits, imm_shift):
    op = t[ALU_OPCODE, i]
    use_imm = t[USE_IMM, i] != 0
    # docs/isa.md §3.4: SCL's immediate is the multiplier's top bits.
    imm = _wrap(t[IMM, i] << imm_shift if op == _SCL else t[IMM, i])
    for i_o in range(t[ITER_OUT, i]):
        for i_i in range(t[ITER_IN, i]):
            for u in range(t[UOP_BGN, i], t[UOP_END, i]):
                d = uop_field(words, u, shift, mask, 0) + i_o * t[DST_FACTOR_OUT, i] + \
                    i_i * t[DST_FACTOR_IN, i]
                s = uop_field(words, u, shift, mask, 1) + i_o * t[SRC_FACTOR_OUT, i] + \
                    i_i * t[SRC_FACTOR_IN, i]
                _alu_row(op, acc, out_raw, d, s, use_imm, imm, scale_bits)


@jit
def execute_stream(order, t, dram, base_of, elem_of, pad_rows, uop_raw, words, shift, mask,
                   inp_raw, wgt_raw, acc_raw, out_raw, inp, wgt, acc3, acc, scale_bits,
                   imm_shift):
    """Run the data work of instructions ``order`` (indices into ``t``, :mod:`.compiled_table`)
    in that order. The scratchpads are given as their bytes (``*_raw``), ``words`` (the micro-op
    words), ``inp`` ``(depth, batch, block_in)`` and ``wgt`` ``(depth, block_out, block_in)``
    int8, ``acc3`` ``(depth, batch, block_out)`` and ``acc`` ``(depth, lanes)`` int32, views of
    the same memory."""
    for i in order:
        op = t[OPCODE, i]
        if op == _LOAD:
            if t[X_SIZE, i] > 0:
                _load(t, i, dram, base_of, elem_of, pad_rows, uop_raw, inp_raw, wgt_raw, acc_raw,
                      acc, out_raw)
        elif op == _STORE:
            if t[X_SIZE, i] > 0:
                _store(t, i, dram, base_of, elem_of, out_raw)
        elif op == _GEMM:
            _gemm(t, i, words, shift, mask, inp, wgt, acc3, acc, out_raw)
        elif op == _ALU:
            _alu(t, i, words, shift, mask, acc, out_raw, scale_bits, imm_shift)
