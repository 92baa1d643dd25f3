"""Random well-formed VTA programs for the fsim-versus-RTL differential fuzzer (``avta fuzz``).

A program is a run of *tiles*, buffered as the runtime's operators are (two virtual threads,
:mod:`avta.runtime.pipeline`): the load stage fills one part of INP and WGT while compute works
on the other, and compute writes one part of ACC (and its OUT mirror) while the store stage
drains the other. Each tile takes one or two load tasks. Every instruction goes through the
runtime's :class:`~avta.runtime.stream.StreamBuilder`, so encoding, micro-op loads and tokens are
the runtime's; this module adds random but legal content:

* LOADs of INP, WGT, ACC and ACC_8BIT of random shapes, strides, pads and pad values, anywhere in
  their part (often flush with its end), and ACC/ACC_8BIT loads that read back what STOREs of
  earlier tiles wrote (ordered by the S→C token that frees the tile's ACC part);
* GEMMs with and without reset and ALU ops (every op, with an immediate over the whole signed
  field or with two operands) on kernels of 1-8 micro-ops and 0-2 loops whose rows overlap, so
  steps read what earlier steps wrote (the RTL must forward, docs/isa.md §3.3, §3.4);
* STOREs of random 2-D shapes to fresh DRAM, never an element twice (docs/isa.md §3 rule (d));
* the *corners* of :mod:`.corners`, each drawn per program with its weight: high and
  page-crossing addresses, non-zero base registers, big tensors, long and zero-trip kernels,
  tall STOREs, high micro-op rows, loop factors at their maximum, token bursts, a full
  instruction queue, a stream that ends where DRAM ends, wrapping indices, and error paths
  (:mod:`.errors`) whose expected end both targets must give.

Rule (e) holds because the generator tracks the rows the program itself has written: the RTL
keeps its scratchpads from one program to the next, so nothing may depend on an earlier program.
Every program is checked with :func:`~avta.runtime.wellformed.check_wellformed`; a violation is
a bug of this generator (:class:`GeneratorError`), not of a machine.
"""

import random
from dataclasses import dataclass

import numpy as np

from avta.isa.config import INSN_QUEUE_DEPTH
from avta.isa.encoding import INSN_BYTES, codec
from avta.isa.enums import AluOp, MemType, PadValue, Stage
from avta.isa.formats import IMM_BITS, PAD_BITS
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.legality import alu_ops
from avta.isa.memories import (BASE_KEYS, DRAM_PAGE_BYTES, LOADABLE, base_alignment, elem_bytes,
                               memories, memory, stage_types)
from avta.runtime.dram import Allocator
from avta.runtime.pipeline import Pipeline
from avta.runtime.program import Program
from avta.runtime.stream import StreamBuilder, StreamError
from avta.runtime.uop_kernel import Loop, UopKernel
from avta.runtime.wellformed import check_wellformed

from .corners import draw_corners
from .errors import ERROR_KINDS, plant_error

__all__ = ["RandomProgram", "GeneratorError", "random_program"]

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE

#: Bytes of DRAM given to each input tensor (INP, WGT, ACC, ACC_8BIT) and to the output region;
#: at least _MIN_ELEMS elements each, so a 4 KiB weight element still allows 2-D loads.
_TENSOR_BYTES, _MIN_ELEMS, _MAX_ELEMS = 4096, 8, 512
#: Caps that keep one program well under a second on the RTL (the corners raise them).
_MAX_LOAD_ROWS, _MAX_STEPS, _LONG_STEPS = 128, 256, 4096
#: Where the data starts with the "high addresses" corner, and without it when base registers are
#: set (a base below the data needs room).
_HIGH_ORIGIN, _LOW_ORIGIN = (24 << 10, 1 << 20), (4 << 10, 24 << 10)
_IMM_MIN, _IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1
#: The tensors a program loads from DRAM (micro-ops come from the stream builder).
_LOADED = tuple(t for t in LOADABLE if t != MemType.UOP)


class GeneratorError(AssertionError):
    """A generated program is not well-formed: a bug in this module, with the violations."""


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


def random_program(cfg, seed, *, max_insns=None, check=True, corners=None):
    """A random well-formed program for ``cfg``, the same for the same ``(cfg, seed)``.

    ``max_insns`` caps the instruction count (FINISH included); by default a program has about
    20-150 instructions (more with the "full queue" corner). ``check`` runs the independent
    well-formedness checker on the result. ``corners`` overrides the corners drawn from the
    seed (:func:`~.corners.draw_corners`).
    """
    corners = draw_corners(seed) if corners is None else frozenset(corners)
    if max_insns is not None and max_insns <= 2 * INSN_QUEUE_DEPTH:
        corners -= {"full queue"}       # a full queue takes more instructions than allowed
    shape = random.Random(f"avta-fuzz-shape:{seed}")
    threads = 1 if shape.random() < 0.2 or "wrap" in corners else 2
    tiles = shape.randint(2, 12)
    lean = False
    while True:
        gen = _Generator(cfg, seed, threads=threads, tiles=tiles, lean=lean, corners=corners)
        program = gen.build()
        if max_insns is None or len(program) <= max_insns:
            break
        if lean and tiles == 1:
            raise ValueError(f"max_insns = {max_insns} is too small: the smallest program the "
                             f"generator makes on {cfg.name!r} has {len(program)} instructions")
        lean, tiles = tiles == 1, max(1, tiles * 2 // 3)
    if check:
        found = check_wellformed(program, wrap="wrap" in corners)
        if found:
            raise GeneratorError(f"seed {seed} on {cfg.name!r} made an ill-formed program: "
                                 + "; ".join(map(str, found[:5])))
    return gen.image(program)


class _Generator:
    """The state of building one program: data buffers, rows written so far, DRAM cursor."""

    def __init__(self, cfg, seed, *, threads, tiles, lean, corners=frozenset()):
        self.cfg, self.seed, self.threads, self.lean = cfg, seed, threads, lean
        self.corners = corners
        self.rng = random.Random(f"avta-fuzz:{seed}:{threads}:{tiles}:{lean}")
        big = "big tensors" in corners
        self.tensor_bytes = self.rng.choice((8, 16, 32, 64)) << 10 if big else _TENSOR_BYTES
        self.max_elems = 1 << 14 if big else _MAX_ELEMS
        self.queue_filled = "full queue" not in corners     # at most one full queue
        uop_start = 0
        if "high micro-ops" in corners:
            uop_start = self.rng.randint(cfg.uop_depth // 2, cfg.uop_depth - 1)
        # Unmerged micro-op loads put LOAD UOPs between GEMMs and ALUs; merged ones (the
        # runtime's default) make one long LOAD UOP.
        self.b = StreamBuilder(cfg, merge_uop_loads=self.rng.random() < 0.5, uop_start=uop_start)
        self.pipe = Pipeline(self.b, threads=threads)
        self.tasks = []
        for tile in range(tiles):
            n = 1 if lean or self.rng.random() < 0.75 else 2
            self.tasks += [(tile, k == 0, k == n - 1) for k in range(n)]
        depth = {"inp": cfg.inp_depth, "wgt": cfg.wgt_depth, "acc": cfg.acc_depth}
        self.valid = {name: np.zeros(d, dtype=bool) for name, d in depth.items()}
        self.parts = {name: self._split(d) for name, d in depth.items()}
        self.factor_max = {"acc": (1 << cfg.acc_factor_bits) - 1,
                           "inp": (1 << cfg.inp_factor_bits) - 1,
                           "wgt": (1 << cfg.wgt_factor_bits) - 1}
        self._layout_inputs()

    def _split(self, depth):
        """The row ranges of the ``threads`` buffers of a scratchpad: halves at a random split,
        so both ends of the scratchpad and rows in between serve as buffer edges."""
        if self.threads == 1 or depth < 2:
            return [(0, depth)] * 2
        cut = self.rng.randint(max(1, depth // 4), max(1, 3 * depth // 4))
        return [(0, cut), (cut, depth)]

    # -- DRAM ----------------------------------------------------------------------------------

    def _layout_inputs(self):
        cfg = self.cfg
        self.alloc = Allocator(1 << 30)
        self.align = max(elem_bytes(cfg, m) for m in MemType)
        data = np.random.default_rng(random.Random(f"avta-fuzz-data:{self.seed}").getrandbits(64))
        self.src, self.chunks = {}, []
        for mem in _LOADED:
            size = elem_bytes(cfg, mem)
            n = min(self.max_elems, max(_MIN_ELEMS, self.tensor_bytes // size))
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
        self.out_cap = min(_MAX_ELEMS * 4, max(64, _TENSOR_BYTES // out_size))
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

    # -- the schedule ----------------------------------------------------------------------------

    def build(self):
        """Emit every task as conv2d does: load tasks run ``threads − 1`` ahead of compute, and
        each tile's STOREs follow its last compute, so the stages of neighbouring tiles overlap."""
        pipe, loaded = self.pipe, 0
        for j, (tile, first, last) in enumerate(self.tasks):
            if "token bursts" in self.corners and self.rng.random() < 0.4:
                self.token_burst()
            while loaded < min(len(self.tasks), j + self.threads):
                self.load_task(pipe.begin_load())
                pipe.end_load()
                loaded += 1
            if first:
                acc_part = pipe.begin_tile()
            self.compute(tile, pipe.begin_compute(), acc_part)
            pipe.end_compute()
            if last:
                pipe.end_tile()
                self.store_tile(pipe.begin_store(), final=j == len(self.tasks) - 1)
                pipe.end_store()
                self.out_after_tile.append(self.out_next)
        return self.b.finish()

    def token_burst(self):
        """Push several tokens on one counter before the other stage pops them all: the
        counter climbs to 3-6, or to its maximum on a narrow one (``TOKEN_BITS``).

        Only where no token is outstanding in either direction between the two stages: the
        burst's pops then take exactly its pushes, and a token back (popped by the producer
        before it goes on) keeps the producer from running further ahead of the consumer than
        it could before, so every later counter stays within its bound (rule (b))."""
        rng, b = self.rng, self.b
        idle = [(frm, to) for frm, to in ((L, C), (C, L), (C, S), (S, C)) if self._quiet(frm, to)]
        if not idle:
            return
        frm, to = rng.choice(idle)
        most = (1 << self.cfg.token_bits) - 1
        pushed = 0
        for _ in range(rng.randint(min(3, most), min(6, most))):
            try:
                b.dep_push(frm, to)
            except StreamError:         # the counter could overflow: rule (b)
                break
            pushed += 1
        for _ in range(pushed):
            b.dep_pop(frm, to)
        if pushed:
            b.dep_push(to, frm)
            b.dep_pop(to, frm)

    def _quiet(self, frm, to):
        """No token outstanding or about to be popped between ``frm`` and ``to``, either way:
        an extra push and its pop there pair with each other and with nothing else."""
        b = self.b
        return not any(b.ledger.outstanding(*q) or b.pending_pop(*q)
                       for q in ((frm, to), (to, frm)))

    def fill_queue(self, acc_part):
        """A GEMM of thousands of steps, then a stage that waits for it and more no-ops than
        its instruction queue holds: fetch must stall on the full queue and resume. Only where
        the wait's token pairs with nothing else (:meth:`_quiet`)."""
        stages = [stage for stage in (L, S) if self._quiet(C, stage)]
        if not stages:
            return
        rng, (lo, hi) = self.rng, self.parts["acc"][acc_part]
        row = rng.randrange(lo, hi)
        outer = rng.randint(64, 128)
        self.b.gemm(UopKernel([(row, 0, 0)], [Loop(outer), Loop(rng.randint(64, 128))]),
                    reset=True)
        self.valid["acc"][row] = True
        stage = stages[0]       # the load stage is quiet less often: take it when it is
        try:
            self.b.dep_push(C, stage)
        except StreamError:
            return
        self.b.dep_pop(C, stage)
        for _ in range(INSN_QUEUE_DEPTH + rng.randint(1, 40)):
            self.b.nop(stage)
        self.queue_filled = True

    def load_task(self, part):
        """LOADs of INP/WGT into buffer ``part``; none at all sometimes (a load-stage no-op)."""
        rng = self.rng
        n = 1 if self.lean else (0 if rng.random() < 0.1 else rng.randint(1, 3))
        for _ in range(n):
            mem = rng.choice(stage_types(Stage.LOAD))
            self.load(mem, self.parts[memory(self.cfg, mem).scratchpad.name][part], self.src[mem])

    def compute(self, tile, part, acc_part):
        """Compute of one load task into the ACC buffer ``acc_part`` of ``tile``."""
        rng = self.rng
        lo, hi = self.parts["acc"][acc_part]
        written = int(self.valid["acc"][lo:hi].sum())
        n = 1 if self.lean else rng.randint(0 if written else 1, 5)
        if written < min(4, hi - lo):
            self.init_acc(acc_part)
        if not self.queue_filled and rng.random() < 0.3:
            self.fill_queue(acc_part)
        for _ in range(n):
            r = rng.random()
            done = False
            if "zero-trip" in self.corners and rng.random() < 0.15:
                self.zero_trip()
            if r < 0.35:
                done = self.gemm(part, acc_part, reset=rng.random() < 0.2)
            elif r < 0.8:
                done = self.alu(acc_part)
            elif r < 0.9:
                done = self.readback(tile, acc_part)
            if not done:
                self.init_acc(acc_part)

    def zero_trip(self):
        """A GEMM or ALU that runs no step: iter_out, iter_in or its micro-op range is 0, and
        every other field random (none of them may matter, docs/isa.md §3.3)."""
        rng, cfg = self.rng, self.cfg
        cls = rng.choice((GemmInsn, AluInsn))
        widths = codec(cfg).field_widths(cls)
        fields = {name: rng.randrange(1 << widths[name])
                  for name in ("iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                               "src_factor_out", "src_factor_in")}
        fields["iter_out"] %= 64
        fields["iter_in"] %= 64
        which = rng.choice(("iter_out", "iter_in", "uops"))
        begin = rng.randrange(cfg.uop_depth)
        end = begin if which == "uops" else min(cfg.uop_depth, begin + rng.randint(1, 8))
        if which != "uops":
            fields[which] = 0
        if cls is GemmInsn:
            fields |= {name: rng.randrange(1 << widths[name])
                       for name in ("wgt_factor_out", "wgt_factor_in")}
            insn = GemmInsn(reset=rng.randint(0, 1), uop_bgn=begin, uop_end=end, **fields)
        else:
            op = rng.choice(alu_ops(cfg))
            insn = AluInsn(uop_bgn=begin, uop_end=end, alu_opcode=op, use_imm=rng.randint(0, 1),
                           imm=self.imm(op), **fields)
        self.b.raw(insn)

    def store_tile(self, acc_part, *, final):
        """STOREs of written OUT rows of buffer ``acc_part``; none sometimes (a store no-op),
        but the last tile always stores, so every program leaves output behind."""
        rng = self.rng
        n = 1 if self.lean else (0 if rng.random() < 0.1 else rng.randint(1, 3))
        if final and self.out_next == 0:
            n = max(n, 1)
        for _ in range(n):
            self.store(acc_part)

    # -- instructions ------------------------------------------------------------------------------

    def load(self, mem, part, source):
        """A random 2-D LOAD of ``mem`` into rows of ``part`` from ``source`` (dram element,
        count); marks the rows written."""
        rng, (lo, hi), (base, n) = self.rng, part, source
        big = "big tensors" in self.corners and rng.random() < 0.5
        cap = hi - lo if big else min(hi - lo, _MAX_LOAD_ROWS)
        pad_max = (1 << PAD_BITS) - 1
        for _ in range(50):
            if big:     # many rows, long rows, strides far beyond the row
                y = rng.choice((1, 2, rng.randint(3, 16), rng.randint(17, 64)))
                x = rng.choice((rng.randint(1, 16), rng.randint(17, 128), rng.randint(129, 512)))
                stride = x if y == 1 or rng.random() < 0.3 else x + rng.choice(
                    (rng.randint(1, 32), rng.randint(86, 2048)))
            else:
                y = rng.choice((1, 1, 1, 2, 3, 4, rng.randint(5, 8)))
                x = rng.choice((1, 2, 3, 4, rng.randint(5, 16), rng.randint(17, 64)))
                stride = x if y == 1 or rng.random() < 0.4 else x + rng.choice(
                    (1, 2, 3, rng.randint(4, 32)))
            if (y - 1) * stride + x > n:
                continue
            pads = [0] * 4
            if rng.random() < 0.5:
                pads = [rng.choice((0, 0, 1, 2, rng.randint(0, pad_max))) for _ in range(4)]
            rows = (pads[2] + x + pads[3]) * (pads[0] + y + pads[1])
            if rows <= cap:
                break
        else:
            y = x = stride = 1
            pads, rows = [0] * 4, 1
        name = memory(self.cfg, mem).scratchpad.name
        depth = len(self.valid[name])
        wrap = "wrap" in self.corners and hi - lo == depth and rows > 1 and rng.random() < 0.3
        if wrap:        # the rows run past the end and go on from row 0 (docs/isa.md §3)
            sram = rng.randint(depth - rows + 1, depth - 1)
        else:
            sram = hi - rows if rng.random() < 0.25 else rng.randint(lo, hi - rows)
        dram = base + rng.randint(0, n - ((y - 1) * stride + x))
        self.b.load(mem, sram=sram, dram=dram, x_size=x, y_size=y, x_stride=stride,
                    y_pad=tuple(pads[:2]), x_pad=tuple(pads[2:]),
                    pad_value=rng.choice(list(PadValue)), wrap=wrap)
        self.valid[name][(sram + np.arange(rows)) % depth] = True

    def init_acc(self, acc_part):
        """Write some ACC rows of the buffer without reading any: a LOAD or a GEMM reset."""
        r = self.rng.random()
        if r < 0.6:
            mem = MemType.ACC if r < 0.35 else MemType.ACC_8BIT
            self.load(mem, self.parts["acc"][acc_part], self.src[mem])
        else:
            self.gemm(None, acc_part, reset=True)

    def readback(self, tile, acc_part):
        """LOAD ACC or ACC_8BIT of output that STOREs already wrote: those of the tiles at least
        ``threads`` back, which this tile's S→C pop waits for (docs/isa.md §3 rule (a) on DRAM)."""
        if tile < self.threads or not self.out_after_tile[tile - self.threads]:
            return False
        ready = self.out_after_tile[tile - self.threads] * self.cfg.out_elem_bytes
        mem = MemType.ACC_8BIT if self.rng.random() < 0.7 else MemType.ACC
        size = elem_bytes(self.cfg, mem)
        if ready < size:
            return False
        self.load(mem, self.parts["acc"][acc_part],
                  (self.out_buf.addr // size, ready // size))
        return True

    def gemm(self, part, acc_part, *, reset):
        """A GEMM into buffer ``acc_part``, reading INP/WGT buffer ``part`` (any rows when it
        resets, since then it reads none)."""
        acc, cfg = self.valid["acc"], self.cfg
        whole = {name: (0, len(self.valid[name])) for name in ("inp", "wgt")}
        dims = [(self.parts["acc"][acc_part], None if reset else acc, self.factor_max["acc"],
                 cfg.acc_depth)]
        for name in ("inp", "wgt"):
            rows = whole[name] if part is None else self.parts[name][part]
            dims.append((rows, None if reset else self.valid[name], self.factor_max[name],
                         len(self.valid[name])))
        kernel = self.kernel(dims)
        if kernel is None:
            return False
        dst, src, wgt = kernel.max_indices()
        wrap = dst >= cfg.acc_depth or src >= cfg.inp_depth or wgt >= cfg.wgt_depth
        self.b.gemm(kernel, reset=reset, wrap=wrap)
        acc[kernel.indices()[0] % cfg.acc_depth] = True
        return True

    def alu(self, acc_part):
        """An ALU op into buffer ``acc_part``, reading written ACC rows anywhere."""
        rng, acc, depth = self.rng, self.valid["acc"], self.cfg.acc_depth
        op = rng.choice(alu_ops(self.cfg))
        use_imm = rng.random() < 0.5
        reads_dst = not use_imm and op != AluOp.MOV
        fmax = self.factor_max["acc"]
        dims = [(self.parts["acc"][acc_part], acc if reads_dst else None, fmax, depth),
                ((0, depth), acc, fmax, depth)]
        kernel = self.kernel(dims, near=True)
        if kernel is None:
            return False
        wrap = max(kernel.max_indices()[:2]) >= depth
        self.b.alu(kernel, op, imm=self.imm(op) if use_imm else None, wrap=wrap)
        acc[kernel.indices()[0] % depth] = True
        return True

    def imm(self, op):
        """An immediate: small mostly, also the extremes of the signed field; for SHR shifts
        both ways, some beyond ±32 (only the low 6 bits count, docs/isa.md §3.4)."""
        rng, r = self.rng, self.rng.random()
        if op == AluOp.SHR and r < 0.8:
            return rng.randint(-31, 31) if r < 0.6 else rng.randint(-64, 64)
        if r < 0.5:
            return rng.randint(-128, 127)
        if r < 0.7:
            return rng.randint(-2048, 2047)
        if r < 0.85:
            return rng.randint(_IMM_MIN, _IMM_MAX)
        return rng.choice((_IMM_MIN, _IMM_MAX, -1, 0, 1))

    def store(self, acc_part):
        """A random 2-D STORE of written OUT rows of buffer ``acc_part`` to fresh DRAM."""
        rng, (lo, hi), out = self.rng, self.parts["acc"][acc_part], self.valid["acc"]
        room = self.out_cap - self.out_next
        tall = "tall stores" in self.corners and rng.random() < 0.5
        for attempt in range(30):
            y = rng.choice((1, 1, 2, 3, 4)) if attempt < 25 else 1
            if tall and attempt < 25:
                y = rng.randint(5, 16)
            x = rng.choice((1, 2, 3, 4, rng.randint(5, 32))) if attempt < 25 else 1
            stride = x if y == 1 or rng.random() < 0.4 else x + rng.randint(1, 4)
            rows, span = x * y, (y - 1) * stride + x
            if rows > hi - lo or span > room:
                continue
            sram = self._base(lo, hi - rows + 1, out)
            if sram is not None and out[sram:sram + rows].all():
                break
        else:
            return
        dram = self.out_base + self.out_next
        self.b.store(sram=sram, dram=dram, x_size=x, y_size=y, x_stride=stride)
        self.out_next += span + rng.choice((0, 0, 1, 2))

    # -- kernels ---------------------------------------------------------------------------------

    def kernel(self, dims, *, near=False):
        """A random :class:`UopKernel` whose index ``k`` stays in row range ``dims[k][0]`` and,
        where ``dims[k][1]`` (a written-rows mask) is given, reads only written rows; factor
        ``k`` at most ``dims[k][2]``; ``dims[k][3]`` is the scratchpad's depth. ``near`` puts
        the source rows close to the destination rows, so steps read results of earlier steps.
        With the "long kernels" corner the loops run up to 255 times; with "wrap", an index
        whose range is the whole scratchpad may run past its end and wrap. None when nothing
        fits after some tries."""
        rng = self.rng
        long = "long kernels" in self.corners and rng.random() < 0.4
        wrap = "wrap" in self.corners and rng.random() < 0.3
        for _ in range(30):
            n = rng.choice((1, 1, 1, 2, 3, 4, rng.randint(5, 8)))
            if long:
                extents = [rng.randint(17, 255)] + [rng.randint(1, 16)] * (rng.random() < 0.5)
                rng.shuffle(extents)
            else:
                extents = [rng.choice((1, 2, 3, 3, rng.randint(4, 8), rng.randint(9, 16)))
                           for _ in range(rng.choice((0, 1, 2)))]
            if n * int(np.prod(extents)) > (_LONG_STEPS if long else _MAX_STEPS):
                continue
            cols = []
            for k, ((lo, hi), valid, fmax, depth) in enumerate(dims):
                spread = min(hi - lo, rng.choice((1, 2, 4, 8)))
                offsets = [rng.randrange(spread) for _ in range(n)]
                if wrap and hi - lo == depth:
                    factors = [rng.choice((0, 1, rng.randint(0, fmax))) for _ in extents]
                    cols.append((rng.randrange(depth), offsets, factors))
                    continue
                factors = [self._factor(e, hi - lo, fmax) for e in extents]
                span = max(offsets) + sum((e - 1) * f for e, f in zip(extents, factors))
                if span >= hi - lo:
                    break
                base = None
                if near and k == 1 and rng.random() < 0.6:
                    base = min(max(cols[0][0] + rng.randint(-3, 3), lo), hi - span - 1)
                    if valid is not None and not valid[base]:
                        base = None
                if base is None:
                    base = self._base(lo, hi - span, valid)
                if base is None:
                    break
                cols.append((base, offsets, factors))
            else:
                depths = [d[3] for d in dims] + [1] * (3 - len(dims))
                cols += [(0, [0] * n, [0] * len(extents))] * (3 - len(cols))
                uops = [tuple((c[0] + c[1][i]) % d for c, d in zip(cols, depths))
                        for i in range(n)]
                loops = [Loop(e, *(c[2][j] for c in cols)) for j, e in enumerate(extents)]
                kernel = UopKernel(uops, loops)
                rows = kernel.indices()
                if all(valid is None or valid[rows[k] % depth].all()
                       for k, (_, valid, _, depth) in enumerate(dims)):
                    return kernel
        return None

    def _factor(self, extent, size, fmax):
        """A loop factor: zero, small, or big enough to stride across the buffer; with extent 1
        it moves no index but still fills its field, at its maximum with the "factor max"
        corner (or at any extent whose rows still fit)."""
        rng, r = self.rng, self.rng.random()
        if "factor max" in self.corners and r < 0.3 and (extent - 1) * fmax < size:
            return fmax
        if r < 0.25:
            f = 0
        elif r < 0.55:
            f = 1
        elif r < 0.85 or extent == 1:
            f = rng.randint(2, 4)
        else:
            f = rng.randint(5, max(5, size // (2 * (extent - 1))))
        return min(f, fmax, (size - 1) // max(1, extent - 1))

    def _base(self, lo, top, valid):
        """A first row in ``[lo, top)``: flush with the end a quarter of the time; a written
        row when ``valid`` (a mask) is given; None when there is none."""
        if top <= lo:
            return None
        rng = self.rng
        if valid is None:
            return top - 1 if rng.random() < 0.25 else rng.randrange(lo, top)
        rows = np.flatnonzero(valid[lo:top])
        if not rows.size:
            return None
        return lo + int(rows[-1] if rng.random() < 0.25 else rows[rng.randrange(rows.size)])


def _relocate(insn, offset):
    """A memory instruction with its DRAM address counted from its base register: ``offset``
    elements of each memory type lie between the base and the origin the program was built at.
    No-ops (x_size 0) keep address 0."""
    if not isinstance(insn, MemoryInsn) or not insn.x_size:
        return insn
    return insn.replace(dram_base=insn.dram_base + offset[MemType(insn.memory_type)])
