"""LOAD (docs/isa.md §3.1) and STORE (§3.2), vectorized over segments of the 2-D window.

Both check every DRAM element (error 9) and, in strict mode, every scratchpad row (error 10)
before they change anything, so an instruction that fails has no effect; then they move
:data:`SEGMENT_ROWS` rows at a time, so memory stays bounded whatever the sizes.
"""

import numpy as np

from avta.isa.enums import ErrorCode, MemType, Opcode
from avta.isa.memories import memory

from .errors import MachineError

__all__ = ["execute_load", "execute_store", "bytes_moved", "load_rows", "rows_fit", "SEGMENT_ROWS"]

#: Rows (or elements) a LOAD or STORE computes at once: memory stays bounded whatever its sizes.
SEGMENT_ROWS = 1 << 16


#: "LOAD INP", … by memory type, for error messages (an enum's name is slow to ask, and fsim
#: runs hundreds of LOADs a layer).
_LOAD_NAMES = {}


def load_rows(x_size, y_size, x_pad_0, x_pad_1, y_pad_0, y_pad_1):
    """Scratchpad rows a LOAD writes, its padded window (integers, or arrays of many LOADs)."""
    return (x_pad_0 + x_size + x_pad_1) * (y_pad_0 + y_size + y_pad_1)


def rows_fit(base, count, depth):
    """Whether rows ``base … base+count-1`` lie inside a ``depth``-row scratchpad (integers, or
    arrays of many instructions)."""
    return base + count <= depth


def _check_rows(base, count, depth, strict, what):
    """Error 10 (strict mode) when rows ``base … base+count-1`` run past the scratchpad."""
    if strict and count and not rows_fit(base, count, depth):
        raise MachineError(ErrorCode.SRAM_OUT_OF_RANGE,
                           f"{what} rows {base}..{base + count - 1} run past the end of the "
                           f"{depth}-row scratchpad")


def execute_load(cfg, insn, pads, dram, *, strict, trace_rows=None, data=True):
    """Run a LOAD with ``x_size`` > 0; ``trace_rows(memory, rows, data)`` sees every row;
    ``data=False`` (fsim's timing-only mode) makes only the checks, with the same errors.

    Every DRAM element and (strict) scratchpad row is checked first; then the rows are written
    a segment at a time in order, so memory stays bounded whatever the sizes. Without strict
    mode a LOAD taller than the scratchpad wraps, and only its last ``depth`` rows survive: only
    those are computed."""
    target = memory(cfg, insn.memory_type)
    pad = target.scratchpad
    what = _LOAD_NAMES.get(target.type) or _LOAD_NAMES.setdefault(target.type,
                                                                f"LOAD {target.name}")
    width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    count = load_rows(insn.x_size, insn.y_size, insn.x_pad_0, insn.x_pad_1, insn.y_pad_0,
                      insn.y_pad_1)
    dram.check_window(target.base, insn.dram_base, insn.y_size, insn.x_size, insn.x_stride,
                      target.elem_bytes, what)
    _check_rows(insn.sram_base, count, pad.depth, strict, what)
    if not data:
        return
    if trace_rows is None and _load_window(insn, target, pad, pads, dram, count):
        return
    pad_row = np.frombuffer(target.pad_row(insn.pad_value), dtype=np.uint8)
    for start in range(max(0, count - pad.depth), count, SEGMENT_ROWS):
        cell = np.arange(start, min(count, start + SEGMENT_ROWS), dtype=np.int64)
        r, c = np.divmod(cell, width)
        r, c = r - insn.y_pad_0, c - insn.x_pad_0
        inside = (r >= 0) & (r < insn.y_size) & (c >= 0) & (c < insn.x_size)
        block = np.empty((cell.size, pad.row_bytes), dtype=np.uint8)
        block[...] = pad_row
        elements = insn.dram_base + r[inside] * insn.x_stride + c[inside]
        data = dram.read(dram.addresses(target.base, elements, target.elem_bytes, what),
                         target.elem_bytes)
        if target.element != pad.row:     # ACC_8BIT: sign-extend each int8 lane into the row
            data = data.view(target.element.dtype).astype(pad.row.dtype).view(np.uint8)
        block[inside] = data
        rows = (insn.sram_base + cell) % pad.depth
        pads.write_rows(pad.name, rows, block)
        if trace_rows is not None:
            trace_rows(pad.name, rows, block)


def _load_window(insn, target, pad, pads, dram, count):
    """The common LOAD at once, as one strided copy of its DRAM window: rows that do not wrap
    the scratchpad, a window that does not wrap 2^32 (both checked by the caller first), and
    elements that are scratchpad rows as they are (not ACC_8BIT). False, having done nothing,
    for any other LOAD."""
    base = dram.bases[target.base]
    size = target.elem_bytes            # also the row's bytes: not ACC_8BIT
    if (target.type == MemType.ACC_8BIT or insn.sram_base + count > pad.depth
            or count > SEGMENT_ROWS or not dram.data.flags.c_contiguous
            or not dram.window_inside(base, insn.dram_base, insn.y_size, insn.x_size,
                                      insn.x_stride, size)):
        return False
    # A view of the window's bytes in place (inside DRAM: checked above).
    window = np.ndarray((insn.y_size, insn.x_size, size), np.uint8, dram.data,
                        base + insn.dram_base * size, (insn.x_stride * size, size, 1))
    rows = slice(insn.sram_base, insn.sram_base + count)
    if count == insn.x_size * insn.y_size:          # no padding
        pads.write_rows(pad.name, rows, window.reshape(count, size))
        return True
    block = np.empty((insn.y_pad_0 + insn.y_size + insn.y_pad_1,
                      insn.x_pad_0 + insn.x_size + insn.x_pad_1, size), np.uint8)
    block[...] = pads.memo(("pad row", target.type, insn.pad_value), (), lambda: np.frombuffer(
        target.pad_row(insn.pad_value), dtype=np.uint8))
    block[insn.y_pad_0:insn.y_pad_0 + insn.y_size,
          insn.x_pad_0:insn.x_pad_0 + insn.x_size] = window
    pads.write_rows(pad.name, rows, block.reshape(count, size))
    return True


def execute_store(cfg, insn, pads, dram, *, strict, trace_dram=None, data=True):
    """Run a STORE with ``x_size`` > 0; ``trace_dram(addresses, data)`` sees every element;
    ``data=False`` (fsim's timing-only mode) makes only the checks, with the same errors.

    Checked first, then written a segment of rows at a time, in order (a later write of the
    same element wins, as in the RTL)."""
    out = memory(cfg, MemType.OUT)
    depth = out.scratchpad.depth
    count = insn.x_size * insn.y_size
    dram.check_window(out.base, insn.dram_base, insn.y_size, insn.x_size, insn.x_stride,
                      out.elem_bytes, "STORE OUT")
    _check_rows(insn.sram_base, count, depth, strict, "STORE OUT")
    if not data:
        return
    for start in range(0, count, SEGMENT_ROWS):
        cell = np.arange(start, min(count, start + SEGMENT_ROWS), dtype=np.int64)
        y, x = np.divmod(cell, insn.x_size)
        addr = dram.addresses(out.base, insn.dram_base + y * insn.x_stride + x, out.elem_bytes,
                              "STORE OUT")
        data = pads.raw("out")[(insn.sram_base + cell) % depth]
        dram.write(addr, data)
        if trace_dram is not None:
            trace_dram(addr, data)


def bytes_moved(cfg, insn):
    """``(counter, bytes)`` of a LOAD or STORE (docs/architecture.md, exact counters): x_size·y_size·
    element bytes, without padding."""
    target = memory(cfg, MemType.OUT if insn.opcode == Opcode.STORE else insn.memory_type)
    return target.counter, insn.x_size * insn.y_size * target.elem_bytes
