"""LOAD (docs/isa.md §3.1) and STORE (§3.2), vectorized over the whole 2-D window.

Both check every DRAM element (error 9) and, in strict mode, every scratchpad row (error 10)
before they change anything, so an instruction that fails has no effect.
"""

import numpy as np

from avta.isa.enums import ErrorCode, MemType, Opcode, PadValue

from .errors import MachineError

__all__ = ["execute_load", "execute_store", "load_target", "LoadTarget", "bytes_moved"]


class LoadTarget:
    """Where a LOAD of one memory type goes: scratchpad, DRAM element size, base register,
    byte counter, and the int type of a lane (for the pad values of §3.1)."""

    def __init__(self, memory, elem_bytes, base, counter, lane):
        self.memory = memory
        self.elem_bytes = elem_bytes
        self.base = base
        self.counter = counter
        self.lane = lane     # numpy dtype of one lane; None for UOP (padding is always zero)


def load_target(cfg, memory_type):
    """The :class:`LoadTarget` of a legal LOAD ``memory_type``."""
    if memory_type == MemType.UOP:
        return LoadTarget("uop", cfg.uop_elem_bytes, "UOP", "UOP_LD", None)
    if memory_type == MemType.INP:
        return LoadTarget("inp", cfg.inp_elem_bytes, "INP", "INP_LD", np.dtype(np.int8))
    if memory_type == MemType.WGT:
        return LoadTarget("wgt", cfg.wgt_elem_bytes, "WGT", "WGT_LD", np.dtype(np.int8))
    if memory_type == MemType.ACC:
        return LoadTarget("acc", cfg.acc_elem_bytes, "ACC", "ACC_LD", np.dtype("<i4"))
    if memory_type == MemType.ACC_8BIT:
        # docs/isa.md §1: BATCH·BLOCK_OUT int8 lanes in DRAM, addressed through ACC_BASE.
        return LoadTarget("acc", cfg.acc8_elem_bytes, "ACC", "ACC_LD", np.dtype("<i4"))
    raise ValueError(f"memory type {memory_type} cannot be loaded")


def _pad_row(target, pad_value, row_bytes):
    """The bytes of one padding row (§3.1): zero, or every lane at its type's min or max."""
    if target.lane is None or pad_value == PadValue.ZERO:
        return np.zeros(row_bytes, dtype=np.uint8)
    info = np.iinfo(target.lane)
    lane = info.min if pad_value == PadValue.MIN else info.max
    return np.full(row_bytes // target.lane.itemsize, lane, dtype=target.lane).view(np.uint8)


def _rows(base, count, depth, strict, what):
    """Scratchpad rows ``base … base+count-1``: wrapped modulo ``depth``, or error 10 (strict)."""
    rows = base + np.arange(count, dtype=np.int64)
    if strict and count and base + count > depth:
        raise MachineError(ErrorCode.SRAM_OUT_OF_RANGE,
                           f"{what} rows {base}..{base + count - 1} run past the end of the "
                           f"{depth}-row scratchpad")
    return rows % depth


def execute_load(cfg, insn, pads, dram, *, strict, trace_rows=None):
    """Run a LOAD with ``x_size`` > 0; ``trace_rows(memory, rows, data)`` sees every row."""
    target = load_target(cfg, insn.memory_type)
    depth = pads.depth(target.memory)
    row_bytes = pads.raw(target.memory).shape[1]
    width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    height = insn.y_pad_0 + insn.y_size + insn.y_pad_1

    y = np.arange(insn.y_size, dtype=np.int64)[:, None]
    x = np.arange(insn.x_size, dtype=np.int64)[None, :]
    elements = (insn.dram_base + y * insn.x_stride + x).reshape(-1)
    addr = dram.addresses(target.base, elements, target.elem_bytes,
                          f"LOAD {target.memory.upper()}")
    rows = _rows(insn.sram_base, width * height, depth, strict, f"LOAD {target.memory.upper()}")

    data = dram.read(addr, target.elem_bytes)
    if insn.memory_type == MemType.ACC_8BIT:
        data = data.view(np.int8).astype("<i4").view(np.uint8)   # sign-extend each lane
    block = np.empty((height, width, row_bytes), dtype=np.uint8)
    block[...] = _pad_row(target, insn.pad_value, row_bytes)
    block[insn.y_pad_0:insn.y_pad_0 + insn.y_size, insn.x_pad_0:insn.x_pad_0 + insn.x_size] = \
        data.reshape(insn.y_size, insn.x_size, row_bytes)
    block = block.reshape(-1, row_bytes)
    if rows.shape[0] > depth:
        # Non-strict wrap of a LOAD taller than the scratchpad: the last write of each row wins.
        rows, block = rows[-depth:], block[-depth:]
    pads.write_rows(target.memory, rows, block)
    if trace_rows is not None:
        trace_rows(target.memory, rows, block)


def execute_store(cfg, insn, pads, dram, *, strict, trace_dram=None):
    """Run a STORE with ``x_size`` > 0; ``trace_dram(addresses, data)`` sees every element."""
    depth = pads.depth("out")
    y = np.arange(insn.y_size, dtype=np.int64)[:, None]
    x = np.arange(insn.x_size, dtype=np.int64)[None, :]
    elements = (insn.dram_base + y * insn.x_stride + x).reshape(-1)
    addr = dram.addresses("OUT", elements, cfg.out_elem_bytes, "STORE OUT")
    rows = (insn.sram_base + y * insn.x_size + x).reshape(-1)
    if strict and int(rows[-1]) >= depth:
        raise MachineError(ErrorCode.SRAM_OUT_OF_RANGE,
                           f"STORE reads OUT rows {insn.sram_base}..{int(rows[-1])}, past the "
                           f"end of the {depth}-row scratchpad")
    data = pads.raw("out")[rows % depth]
    dram.write(addr, data)
    if trace_dram is not None:
        trace_dram(addr, data)


def bytes_moved(cfg, insn):
    """``(counter, bytes)`` of a LOAD or STORE (docs/architecture.md, exact counters): x_size·y_size·
    element bytes, without padding."""
    if insn.opcode == Opcode.STORE:
        return "OUT_ST", insn.x_size * insn.y_size * cfg.out_elem_bytes
    target = load_target(cfg, insn.memory_type)
    return target.counter, insn.x_size * insn.y_size * target.elem_bytes
