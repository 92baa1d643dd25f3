"""Where a random program lies in DRAM (:mod:`.program` builds it, :mod:`.generators` fills it).

The input tensors (INP, WGT, ACC, ACC_8BIT) and the output region are allocated first, at
addresses relative to an *origin*; once the program is built its micro-ops and instructions go
after them, the origin is placed (0, or above 4 KiB with the "high addresses" and "base
registers" corners), the ``*_BASE`` registers are set below it, and the instructions' DRAM
addresses are made relative to them. :class:`RandomProgram` is the result.
"""

import random
from dataclasses import dataclass

import numpy as np

from avta.isa.encoding import INSN_BYTES, codec
from avta.isa.enums import MemType
from avta.isa.insn import MemoryInsn
from avta.isa.memories import (BASE_KEYS, DRAM_PAGE_BYTES, LOADABLE, base_alignment, elem_bytes,
                               memories, memory)
from avta.runtime.dram import Allocator
from avta.runtime.program import Program

from .errors import ERROR_KINDS, plant_error

__all__ = ["RandomProgram", "ImageLayout", "TENSOR_BYTES", "MAX_ELEMS"]

#: Bytes of DRAM given to each input tensor (INP, WGT, ACC, ACC_8BIT) and to the output region;
#: at least MIN_ELEMS elements each, so a 4 KiB weight element still allows 2-D loads.
TENSOR_BYTES, MIN_ELEMS, MAX_ELEMS = 4096, 8, 512
#: Where the data starts with the "high addresses" corner, and without it when base registers are
#: set (a base below the data needs room).
_HIGH_ORIGIN, _LOW_ORIGIN = (24 << 10, 1 << 20), (4 << 10, 24 << 10)
#: The tensors a program loads from DRAM (micro-ops come from the stream builder).
_LOADED = tuple(t for t in LOADABLE if t != MemType.UOP)


@dataclass(frozen=True)
class RandomProgram:
    """One random program and the DRAM image that runs it with base registers ``bases``.

    Attributes
    ----------
    cfg : Config
    seed : int
    image : bytes
        DRAM from address 0 up to the end of the instruction stream: input tensors, the output
        region (zero), micro-ops and instructions. Its length is rarely a whole number of 4 KiB
        pages; the DRAM to run it in is rounded up (:attr:`dram_size`, docs/isa.md §3).
    insn_addr, insn_count : int
        Where the instructions are (16-byte aligned) and how many the host asks to run (more
        than the stream holds when fetch is meant to run past the end of DRAM).
    insns : tuple
        The instructions exactly as they are in the image: micro-op LOADs linked, addresses
        relative to the base registers, an error planted when ``expect`` says so.
    program : Program
        The runtime's program the image was made from (before any planted error).
    bases : dict
        ``*_BASE`` register values by key (:data:`avta.isa.memories.BASE_KEYS`).
    uop_addr : int
        Byte address of the micro-op buffer.
    out_addr, out_nbytes : int
        The output region: every STORE writes inside it, nothing else writes DRAM.
    threads : int
        1 (single-buffered) or 2 (load, compute and store of neighbouring tiles overlap).
    corners : frozenset
        The corners (:data:`avta.sim.fuzz.corners.CORNERS`) the program was built with.
    strict : bool
        Whether fsim runs it in strict mode (off when indices wrap on purpose).
    expect : tuple or None
        ``(status, error_code, error_insn)`` every target must end with, when an error or a
        deadlock is planted (``error`` names which, :data:`avta.sim.fuzz.errors.ERROR_KINDS`).
    """
    cfg: object
    seed: int
    image: bytes
    insn_addr: int
    insn_count: int
    insns: tuple
    program: Program
    bases: dict
    uop_addr: int
    out_addr: int
    out_nbytes: int
    threads: int
    corners: frozenset = frozenset()
    strict: bool = True
    expect: tuple = None
    error: str = None

    @property
    def dram_size(self):
        """The image's length rounded up to a whole number of 4 KiB pages."""
        return -(-len(self.image) // DRAM_PAGE_BYTES) * DRAM_PAGE_BYTES

    def dram(self):
        """A fresh writable DRAM of :attr:`dram_size` bytes holding the image (a run stores
        into DRAM in place)."""
        dram = bytearray(self.dram_size)
        dram[:len(self.image)] = self.image
        return dram

    def address(self, insn):
        """The byte address of DRAM element 0 of memory instruction ``insn``'s type."""
        return self.bases.get(memory(self.cfg, insn.memory_type).base, 0)

    def output(self, dram):
        """The output region's bytes of a final DRAM image."""
        return bytes(dram[self.out_addr:self.out_addr + self.out_nbytes])


class ImageLayout:
    """The DRAM side of building one program (a part of :class:`.program._Generator`): the input
    tensors and output region (:meth:`_layout_inputs`), then the image (:meth:`image`).

    Uses the generator's ``cfg``, ``seed``, ``corners``, ``tensor_bytes`` and ``max_elems``; sets
    ``src`` (memory type → first DRAM element and element count of its input tensor), ``chunks``
    (the data's (address, bytes)), ``alloc``, ``align`` and the output region's ``out_*``.
    """

    def _layout_inputs(self):
        cfg = self.cfg
        self.alloc = Allocator(1 << 30)
        self.align = max(elem_bytes(cfg, m) for m in MemType)
        data = np.random.default_rng(random.Random(f"avta-fuzz-data:{self.seed}").getrandbits(64))
        self.src, self.chunks = {}, []
        for mem in _LOADED:
            size = elem_bytes(cfg, mem)
            n = min(self.max_elems, max(MIN_ELEMS, self.tensor_bytes // size))
            buf = self.alloc.alloc(n * size, align=self.align)
            self.src[mem] = (buf.elem(cfg, mem), n)
            if mem == MemType.ACC:
                lanes = n * size // 4
                # Mostly small sums, some anywhere in int32: overflow, clipping and big shifts.
                wide = data.integers(-2**31, 2**31, lanes, dtype=np.int64)
                small = data.integers(-300, 301, lanes)
                pick = data.random(lanes)
                values = np.where(pick < 0.6, small, np.where(pick < 0.8, wide >> 16, wide))
                raw = values.astype(np.int32).tobytes()
            else:
                raw = data.integers(-128, 128, n * size, dtype=np.int8).tobytes()
            self.chunks.append((buf.addr, raw))
        out_size = cfg.out_elem_bytes
        self.out_cap = min(MAX_ELEMS * 4, max(64, TENSOR_BYTES // out_size))
        if "tall stores" in self.corners:
            self.out_cap *= 4
        self.out_buf = self.alloc.alloc(self.out_cap * out_size, align=self.align)
        self.out_base = self.out_buf.elem(cfg, MemType.OUT)
        self.out_next = 0                   # elements of the output region used so far
        self.out_after_tile = []            # out_next once each tile's STOREs are emitted

    def image(self, program):
        """The :class:`RandomProgram` of ``program`` laid out after the data.

        The buffers were allocated at addresses relative to an *origin*: 0, or with the "high
        addresses" and "base registers" corners somewhere above 4 KiB. With base registers, each
        ``*_BASE`` lies a random whole number of elements below the origin, so every address in
        an instruction counts from it (docs/isa.md §3)."""
        cfg, rng = self.cfg, random.Random(f"avta-fuzz-layout:{self.seed}")
        error = rng.choice(sorted(ERROR_KINDS)) if "error" in self.corners else None
        with_bases = "base registers" in self.corners
        origin = 0
        if "high addresses" in self.corners or with_bases:
            low, high = _HIGH_ORIGIN if "high addresses" in self.corners else _LOW_ORIGIN
            # Base registers need only their own alignment, which may be less than an element;
            # without them every element address is a multiple of its size.
            step = max(base_alignment(cfg, key) for key in BASE_KEYS) if with_bases \
                else self.align
            origin = rng.randrange(low, high) // step * step
        bases, offset = {}, {}
        for key in BASE_KEYS:
            size = max(info.elem_bytes for info in memories(cfg).values() if info.base == key)
            below = rng.randint(0, origin // size) if with_bases and rng.random() < 0.8 else 0
            bases[key] = origin - below * size if with_bases else 0
        for mem, info in memories(cfg).items():
            offset[mem] = (origin - bases[info.base]) // info.elem_bytes

        chunks = list(self.chunks)
        uop_addr = top = self.out_buf.end         # top: the end of the data
        if program.uops:
            buf = self.alloc.alloc(len(program.uops) * cfg.uop_elem_bytes,
                                   align=cfg.uop_elem_bytes)
            uop_addr, top = buf.addr, max(top, buf.end)
            chunks.append((buf.addr, program.uop_bytes()))
        insns = program.link(uop_addr // cfg.uop_elem_bytes)
        insns = [_relocate(insn, offset) for insn in insns]
        nbytes = len(insns) * INSN_BYTES
        insn_addr = -(-(origin + top) // INSN_BYTES) * INSN_BYTES
        if "stream at DRAM end" in self.corners or error == "fetch past DRAM":
            # The last instruction ends where DRAM (a whole number of pages) ends.
            end = -(-(insn_addr + nbytes) // DRAM_PAGE_BYTES) * DRAM_PAGE_BYTES
            insn_addr = end - nbytes
        dram_size = -(-(insn_addr + nbytes) // DRAM_PAGE_BYTES) * DRAM_PAGE_BYTES
        insn_count, expect = len(insns), None
        if error is not None:
            insns, insn_count, expect = plant_error(
                error, rng, cfg, insns, dram_size=dram_size,
                address=lambda insn: bases[memory(cfg, insn.memory_type).base])
        image = bytearray(insn_addr + nbytes)
        for addr, raw in chunks:
            image[origin + addr:origin + addr + len(raw)] = raw
        image[insn_addr:] = codec(cfg).encode_program(insns)
        return RandomProgram(cfg=cfg, seed=self.seed, image=bytes(image), insn_addr=insn_addr,
                             insn_count=insn_count, insns=tuple(insns), program=program,
                             bases=bases, uop_addr=origin + uop_addr,
                             out_addr=origin + self.out_buf.addr,
                             out_nbytes=self.out_next * cfg.out_elem_bytes,
                             threads=self.threads, corners=self.corners,
                             strict="wrap" not in self.corners, expect=expect, error=error)


def _relocate(insn, offset):
    """A memory instruction with its DRAM address counted from its base register: ``offset``
    elements of each memory type lie between the base and the origin the program was built at.
    No-ops (x_size 0) keep address 0."""
    if not isinstance(insn, MemoryInsn) or not insn.x_size:
        return insn
    return insn.replace(dram_base=insn.dram_base + offset[MemType(insn.memory_type)])
