"""DRAM as fsim sees it: a byte buffer, the *_BASE registers and element addressing (docs/isa.md §3).

Byte address of element ``n`` of a memory type = (that type's base register + n · element bytes)
mod 2^32. An element must lie wholly inside the buffer; any access outside it is error 9
(DRAM_OUT_OF_RANGE), detected before the instruction changes anything.
"""

import numpy as np

from avta.isa.enums import ErrorCode
from avta.runtime.host import check_bases

from .errors import MachineError

__all__ = ["Dram", "as_byte_array"]


_ADDR_MOD = 1 << 32     # addresses are 32 bits (the AXI address width)
#: Elements whose addresses are computed at once when a window is scanned.
_SCAN_ELEMENTS = 1 << 18


def as_byte_array(dram):
    """A writable 1-D uint8 numpy view of ``dram`` (a bytearray, memoryview or uint8 array)."""
    if isinstance(dram, np.ndarray):
        if dram.dtype != np.uint8:
            raise TypeError(f"DRAM must be a uint8 array, got dtype {dram.dtype}")
        if dram.ndim != 1:
            raise TypeError(f"DRAM must be a 1-D uint8 array, got shape {dram.shape}")
        view = dram
    elif isinstance(dram, (bytearray, memoryview)):
        view = np.frombuffer(dram, dtype=np.uint8)
    else:
        raise TypeError(f"DRAM must be a bytearray or a numpy uint8 array (the run writes to it "
                        f"in place), got {type(dram).__name__}")
    if not view.flags.writeable:
        raise TypeError("DRAM must be writable: the run stores into it in place")
    return view


class Dram:
    """The DRAM byte buffer of one run with its base registers."""

    def __init__(self, data, bases=None):
        self.data = as_byte_array(data)
        self.bases = check_bases(bases)

    @property
    def size(self):
        return self.data.shape[0]

    def addresses(self, base_name, elements, elem_bytes, what):
        """Byte addresses (int64 array) of ``elements`` (int64 array of element numbers).

        Raises error 9 naming ``what`` when any element falls partly outside the buffer.
        """
        addr = (self.bases[base_name] + elements * elem_bytes) % _ADDR_MOD
        if addr.size and int(addr.max()) + elem_bytes > self.size:
            bad = int(np.flatnonzero(addr + elem_bytes > self.size)[0])
            raise MachineError(
                ErrorCode.DRAM_OUT_OF_RANGE,
                f"{what} element {int(elements[bad])} is at byte address 0x{int(addr[bad]):x} "
                f"({elem_bytes} bytes, {base_name}_BASE 0x{self.bases[base_name]:x}), outside "
                f"the {self.size}-byte DRAM")
        return addr

    def check_window(self, base_name, first, y_size, x_size, x_stride, elem_bytes, what):
        """Error 9 (as :meth:`addresses` words it) unless every element ``first + y·x_stride +
        x`` (y < y_size, x < x_size) lies inside DRAM; nothing is allocated per element. When
        the window may fall outside or wrap around 2^32, it is scanned a few rows at a time to
        name the first bad element."""
        if not (y_size and x_size):
            return
        if self.window_inside(self.bases[base_name], first, y_size, x_size, x_stride,
                              elem_bytes):
            return
        step = max(1, _SCAN_ELEMENTS // x_size)
        x = np.arange(x_size, dtype=np.int64)[None, :]
        for y0 in range(0, y_size, step):
            y = np.arange(y0, min(y_size, y0 + step), dtype=np.int64)[:, None]
            self.addresses(base_name, (first + y * x_stride + x).reshape(-1), elem_bytes, what)

    def window_inside(self, base, first, y_size, x_size, x_stride, elem_bytes):
        """Whether a window of ``y_size`` > 0 rows of ``x_size`` > 0 elements (as
        :meth:`check_window`'s) lies inside DRAM without wrapping around 2^32: its highest byte
        is inside (integers, or int64 arrays of many windows). When not, the window may still
        be inside, wrapped; :meth:`check_window` then scans it."""
        last = first + (y_size - 1) * x_stride + x_size - 1
        return base + last * elem_bytes + elem_bytes <= min(self.size, _ADDR_MOD)

    def read(self, addr, elem_bytes):
        """The ``(n, elem_bytes)`` bytes of the elements at byte addresses ``addr``."""
        return self.data[addr[:, None] + np.arange(elem_bytes)]

    def write(self, addr, rows):
        """Write ``rows`` ``(n, elem_bytes)`` to the elements at byte addresses ``addr``."""
        self.data[addr[:, None] + np.arange(rows.shape[1])] = rows

    def fetch(self, insn_addr, count, insn_bytes):
        """The instruction stream's bytes, and the index of the first instruction outside DRAM
        (``None`` when every instruction lies inside)."""
        first_bad = None
        inside = count
        if insn_addr + count * insn_bytes > self.size:
            inside = max(0, (self.size - insn_addr) // insn_bytes)
            first_bad = inside
        return bytes(self.data[insn_addr:insn_addr + inside * insn_bytes]), first_bad
