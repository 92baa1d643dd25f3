"""DRAM buffers: a first-fit allocator over the device's byte-addressed memory.

Instructions address DRAM in *elements* of their memory type: byte address = base register +
``dram_base``·element bytes (docs/isa.md §3). A buffer that is read or written as memory type T must
therefore start at a multiple of T's element bytes; :meth:`Allocator.alloc` aligns every buffer to
the largest element of the configuration (all element sizes are powers of two, so one alignment
serves them all), and :meth:`Buffer.elem` refuses an address that is not aligned.
"""

import bisect
from dataclasses import dataclass

from avta.isa.enums import MemType
from avta.isa.memories import elem_bytes

__all__ = ["AllocError", "Allocator", "Buffer", "ALLOC_ALIGNMENT"]

#: The smallest alignment of any buffer, as upstream's runtime (``ALLOC_ALIGNMENT``); instruction
#: streams need 16 (an instruction), and every element size divides the configuration's maximum.
ALLOC_ALIGNMENT = 64


class AllocError(MemoryError):
    """DRAM is too full or too fragmented for a request, or a buffer was misused."""


@dataclass(frozen=True)
class Buffer:
    """A block of device DRAM: ``nbytes`` bytes from byte address ``addr``."""
    addr: int
    nbytes: int

    @property
    def end(self):
        return self.addr + self.nbytes

    def elem(self, cfg, mem, offset=0):
        """The ``dram_base`` of element ``offset`` of this buffer seen as memory type ``mem``.

        This assumes the base register of ``mem`` is 0 (the runtime never sets it).
        """
        size = elem_bytes(cfg, mem)
        if self.addr % size:
            raise AllocError(f"buffer at 0x{self.addr:x} is not aligned to the {size}-byte "
                             f"{MemType(mem).name} element; allocate it with align={size}")
        if not 0 <= offset * size < self.nbytes:
            raise AllocError(f"{MemType(mem).name} element {offset} lies outside the "
                             f"{self.nbytes}-byte buffer at 0x{self.addr:x} "
                             f"({self.nbytes // size} elements)")
        return self.addr // size + offset

    def elems(self, cfg, mem):
        """How many whole elements of memory type ``mem`` the buffer holds."""
        return self.nbytes // elem_bytes(cfg, mem)


class Allocator:
    """First-fit allocation of byte ranges in ``[base, base + size)``, with coalescing frees.

    Parameters
    ----------
    size : int
        Bytes of DRAM managed.
    base : int
        First managed byte address.
    align : int
        Minimum alignment of every allocation (a power of two).
    """

    def __init__(self, size, *, base=0, align=ALLOC_ALIGNMENT):
        if size <= 0:
            raise ValueError(f"DRAM size must be positive, got {size}")
        if align <= 0 or align & (align - 1):
            raise ValueError(f"alignment must be a power of two, got {align}")
        self._base = base
        self._size = size
        self._align = align
        self._free = [(base, base + size)]      # sorted, disjoint, never adjacent
        self._used = {}                          # addr -> nbytes

    @property
    def size(self):
        return self._size

    @property
    def free_bytes(self):
        return sum(end - start for start, end in self._free)

    @property
    def largest_free(self):
        return max((end - start for start, end in self._free), default=0)

    def alloc(self, nbytes, *, align=None):
        """A new :class:`Buffer` of ``nbytes`` (> 0) aligned to ``max(align, self.align)``."""
        if nbytes <= 0:
            raise AllocError(f"cannot allocate {nbytes} bytes: a buffer holds at least one byte")
        align = max(align or 1, self._align)
        if align & (align - 1):
            raise AllocError(f"alignment must be a power of two, got {align}")
        for i, (start, end) in enumerate(self._free):
            addr = -(-start // align) * align
            if addr + nbytes <= end:
                pieces = [(s, e) for s, e in ((start, addr), (addr + nbytes, end)) if e > s]
                self._free[i:i + 1] = pieces
                self._used[addr] = nbytes
                return Buffer(addr, nbytes)
        raise AllocError(
            f"cannot allocate {nbytes} bytes aligned to {align}: {self.free_bytes} of "
            f"{self._size} bytes are free, the largest free block is {self.largest_free} bytes; "
            f"free buffers you no longer need or make the device's DRAM larger")

    def free(self, buffer):
        """Return ``buffer`` (a :class:`Buffer` or its address) to the free list."""
        addr = buffer.addr if isinstance(buffer, Buffer) else buffer
        if addr not in self._used:
            raise AllocError(f"0x{addr:x} is not the address of a live buffer (double free?)")
        end = addr + self._used.pop(addr)
        i = bisect.bisect(self._free, (addr, end))
        # Merge with the free neighbours on each side so the list stays coalesced.
        if i < len(self._free) and self._free[i][0] == end:
            end = self._free.pop(i)[1]
        if i > 0 and self._free[i - 1][1] == addr:
            i -= 1
            addr = self._free.pop(i)[0]
        self._free.insert(i, (addr, end))

    def live(self):
        """Every live buffer, by address."""
        return [Buffer(a, n) for a, n in sorted(self._used.items())]
