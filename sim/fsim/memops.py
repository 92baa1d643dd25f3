"""LOAD (docs/isa.md §3.1) and STORE (§3.2), vectorized over the whole 2-D window.

Both check every DRAM element (error 9) and, in strict mode, every scratchpad row (error 10)
before they change anything, so an instruction that fails has no effect.
"""

import numpy as np

from avta.isa.enums import ErrorCode, MemType, Opcode
from avta.isa.memories import memory

from .errors import MachineError

__all__ = ["execute_load", "execute_store", "bytes_moved"]


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
    target = memory(cfg, insn.memory_type)
    pad = target.scratchpad
    depth, row_bytes = pad.depth, pad.row_bytes
    width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    height = insn.y_pad_0 + insn.y_size + insn.y_pad_1

    y = np.arange(insn.y_size, dtype=np.int64)[:, None]
    x = np.arange(insn.x_size, dtype=np.int64)[None, :]
    elements = (insn.dram_base + y * insn.x_stride + x).reshape(-1)
    addr = dram.addresses(target.base, elements, target.elem_bytes, f"LOAD {target.name}")
    rows = _rows(insn.sram_base, width * height, depth, strict, f"LOAD {target.name}")

    data = dram.read(addr, target.elem_bytes)
    if target.element != pad.row:     # ACC_8BIT: sign-extend each int8 lane into the ACC row
        data = data.view(target.element.dtype).astype(pad.row.dtype).view(np.uint8)
    block = np.empty((height, width, row_bytes), dtype=np.uint8)
    block[...] = np.frombuffer(target.pad_row(insn.pad_value), dtype=np.uint8)
    block[insn.y_pad_0:insn.y_pad_0 + insn.y_size, insn.x_pad_0:insn.x_pad_0 + insn.x_size] = \
        data.reshape(insn.y_size, insn.x_size, row_bytes)
    block = block.reshape(-1, row_bytes)
    if rows.shape[0] > depth:
        # Non-strict wrap of a LOAD taller than the scratchpad: the last write of each row wins.
        rows, block = rows[-depth:], block[-depth:]
    pads.write_rows(pad.name, rows, block)
    if trace_rows is not None:
        trace_rows(pad.name, rows, block)


def execute_store(cfg, insn, pads, dram, *, strict, trace_dram=None):
    """Run a STORE with ``x_size`` > 0; ``trace_dram(addresses, data)`` sees every element."""
    depth = pads.depth("out")
    y = np.arange(insn.y_size, dtype=np.int64)[:, None]
    x = np.arange(insn.x_size, dtype=np.int64)[None, :]
    elements = (insn.dram_base + y * insn.x_stride + x).reshape(-1)
    out = memory(cfg, MemType.OUT)
    addr = dram.addresses(out.base, elements, out.elem_bytes, "STORE OUT")
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
    target = memory(cfg, MemType.OUT if insn.opcode == Opcode.STORE else insn.memory_type)
    return target.counter, insn.x_size * insn.y_size * target.elem_bytes
