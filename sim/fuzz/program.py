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
* STOREs of random 2-D shapes to fresh DRAM, never an element twice (docs/isa.md §3 rule (d)).

Rule (e) holds because the generator tracks the rows the program itself has written: the RTL
keeps its scratchpads from one program to the next, so nothing may depend on an earlier program.
Every program is checked with :func:`~avta.runtime.wellformed.check_wellformed`; a violation is
a bug of this generator (:class:`GeneratorError`), not of a machine.
"""

import random
from dataclasses import dataclass

import numpy as np

from avta.isa.enums import AluOp, MemType, PadValue, Stage
from avta.isa.formats import IMM_BITS, PAD_BITS
from avta.isa.memories import LOADABLE, elem_bytes, memory, stage_types
from avta.runtime.dram import Allocator
from avta.runtime.pipeline import Pipeline
from avta.runtime.program import Program
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import Loop, UopKernel
from avta.runtime.wellformed import check_wellformed

__all__ = ["RandomProgram", "GeneratorError", "random_program"]

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE

#: Bytes of DRAM given to each input tensor (INP, WGT, ACC, ACC_8BIT) and to the output region;
#: at least _MIN_ELEMS elements each, so a 4 KiB weight element still allows 2-D loads.
_TENSOR_BYTES, _MIN_ELEMS, _MAX_ELEMS = 4096, 8, 512
#: Caps that keep one program well under a second on the RTL.
_MAX_LOAD_ROWS, _MAX_STEPS = 128, 256
#: The image ends on a 4 KiB boundary: AXI bursts never cross one (docs/architecture.md, VME), so a
#: beat that carries a wanted byte lies wholly inside the image.
_IMAGE_ALIGN = 4096
_IMM_MIN, _IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1
#: The tensors a program loads from DRAM (micro-ops come from the stream builder).
_LOADED = tuple(t for t in LOADABLE if t != MemType.UOP)


class GeneratorError(AssertionError):
    """A generated program is not well-formed: a bug in this module, with the violations."""


@dataclass(frozen=True)
class RandomProgram:
    """One random program and the DRAM image that runs it with every base register 0.

    Attributes
    ----------
    cfg : Config
    seed : int
    image : bytes
        The whole DRAM from address 0: input tensors, the output region (zero), micro-ops and
        instructions; its length (a multiple of 4 KiB) is the DRAM size to run it with.
    insn_addr, insn_count : int
        Where the instructions are (16-byte aligned) and how many.
    program : Program
        The runtime's program (micro-op LOADs relative to ``uop_addr``; see :attr:`insns`).
    uop_addr : int
        Byte address of the micro-op buffer.
    out_addr, out_nbytes : int
        The output region: every STORE writes inside it, nothing else writes DRAM.
    threads : int
        1 (single-buffered) or 2 (load, compute and store of neighbouring tiles overlap).
    """
    cfg: object
    seed: int
    image: bytes
    insn_addr: int
    insn_count: int
    program: Program
    uop_addr: int
    out_addr: int
    out_nbytes: int
    threads: int

    @property
    def dram_size(self):
        return len(self.image)

    def dram(self):
        """A fresh writable copy of the image (a run stores into DRAM in place)."""
        return bytearray(self.image)

    @property
    def insns(self):
        """The instructions exactly as they are in the image (micro-op LOADs linked)."""
        return self.program.link(self.uop_addr // self.cfg.uop_elem_bytes)

    def output(self, dram):
        """The output region's bytes of a final DRAM image."""
        return bytes(dram[self.out_addr:self.out_addr + self.out_nbytes])


def random_program(cfg, seed, *, max_insns=None, check=True):
    """A random well-formed program for ``cfg``, the same for the same ``(cfg, seed)``.

    ``max_insns`` caps the instruction count (FINISH included); by default a program has about
    20-150 instructions. ``check`` runs the independent well-formedness checker on the result.
    """
    shape = random.Random(f"avta-fuzz-shape:{seed}")
    threads = 1 if shape.random() < 0.2 else 2
    tiles = shape.randint(2, 12)
    lean = False
    while True:
        gen = _Generator(cfg, seed, threads=threads, tiles=tiles, lean=lean)
        program = gen.build()
        if max_insns is None or len(program) <= max_insns:
            break
        if lean and tiles == 1:
            raise ValueError(f"max_insns = {max_insns} is too small: the smallest program the "
                             f"generator makes on {cfg.name!r} has {len(program)} instructions")
        lean, tiles = tiles == 1, max(1, tiles * 2 // 3)
    if check:
        found = check_wellformed(program)
        if found:
            raise GeneratorError(f"seed {seed} on {cfg.name!r} made an ill-formed program: "
                                 + "; ".join(map(str, found[:5])))
    return gen.image(program)


class _Generator:
    """The state of building one program: data buffers, rows written so far, DRAM cursor."""

    def __init__(self, cfg, seed, *, threads, tiles, lean):
        self.cfg, self.seed, self.threads, self.lean = cfg, seed, threads, lean
        self.rng = random.Random(f"avta-fuzz:{seed}:{threads}:{tiles}:{lean}")
        # Unmerged micro-op loads put LOAD UOPs between GEMMs and ALUs; merged ones (the
        # runtime's default) make one long LOAD UOP.
        self.b = StreamBuilder(cfg, merge_uop_loads=self.rng.random() < 0.5)
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
            n = min(_MAX_ELEMS, max(_MIN_ELEMS, _TENSOR_BYTES // size))
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
        self.out_buf = self.alloc.alloc(self.out_cap * out_size, align=self.align)
        self.out_base = self.out_buf.elem(cfg, MemType.OUT)
        self.out_next = 0                   # elements of the output region used so far
        self.out_after_tile = []            # out_next once each tile's STOREs are emitted

    def image(self, program):
        """The :class:`RandomProgram` of ``program`` laid out after the data."""
        cfg = self.cfg
        chunks = list(self.chunks)
        uop_addr = self.out_buf.end
        if program.uops:
            buf = self.alloc.alloc(len(program.uops) * cfg.uop_elem_bytes,
                                   align=cfg.uop_elem_bytes)
            uop_addr = buf.addr
            chunks.append((buf.addr, program.uop_bytes()))
        stream = program.encode(uop_addr // cfg.uop_elem_bytes)
        insn_buf = self.alloc.alloc(len(stream), align=16)
        chunks.append((insn_buf.addr, stream))
        image = bytearray(-(-insn_buf.end // _IMAGE_ALIGN) * _IMAGE_ALIGN)
        for addr, raw in chunks:
            image[addr:addr + len(raw)] = raw
        return RandomProgram(cfg=cfg, seed=self.seed, image=bytes(image),
                             insn_addr=insn_buf.addr, insn_count=len(program), program=program,
                             uop_addr=uop_addr, out_addr=self.out_buf.addr,
                             out_nbytes=self.out_next * cfg.out_elem_bytes,
                             threads=self.threads)

    # -- the schedule ----------------------------------------------------------------------------

    def build(self):
        """Emit every task as conv2d does: load tasks run ``threads − 1`` ahead of compute, and
        each tile's STOREs follow its last compute, so the stages of neighbouring tiles overlap."""
        pipe, loaded = self.pipe, 0
        for j, (tile, first, last) in enumerate(self.tasks):
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
        for _ in range(n):
            r = rng.random()
            done = False
            if r < 0.35:
                done = self.gemm(part, acc_part, reset=rng.random() < 0.2)
            elif r < 0.8:
                done = self.alu(acc_part)
            elif r < 0.9:
                done = self.readback(tile, acc_part)
            if not done:
                self.init_acc(acc_part)

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
        cap = min(hi - lo, _MAX_LOAD_ROWS)
        pad_max = (1 << PAD_BITS) - 1
        for _ in range(50):
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
        sram = hi - rows if rng.random() < 0.25 else rng.randint(lo, hi - rows)
        dram = base + rng.randint(0, n - ((y - 1) * stride + x))
        self.b.load(mem, sram=sram, dram=dram, x_size=x, y_size=y, x_stride=stride,
                    y_pad=tuple(pads[:2]), x_pad=tuple(pads[2:]),
                    pad_value=rng.choice(list(PadValue)))
        self.valid[memory(self.cfg, mem).scratchpad.name][sram:sram + rows] = True

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
        acc = self.valid["acc"]
        whole = {name: (0, len(self.valid[name])) for name in ("inp", "wgt")}
        dims = [(self.parts["acc"][acc_part], None if reset else acc, self.factor_max["acc"])]
        for name in ("inp", "wgt"):
            rows = whole[name] if part is None else self.parts[name][part]
            dims.append((rows, None if reset else self.valid[name], self.factor_max[name]))
        kernel = self.kernel(dims)
        if kernel is None:
            return False
        self.b.gemm(kernel, reset=reset)
        acc[kernel.indices()[0]] = True
        return True

    def alu(self, acc_part):
        """An ALU op into buffer ``acc_part``, reading written ACC rows anywhere."""
        rng, acc = self.rng, self.valid["acc"]
        op = rng.choice(list(AluOp))
        use_imm = rng.random() < 0.5
        reads_dst = not use_imm and op != AluOp.MOV
        fmax = self.factor_max["acc"]
        dims = [(self.parts["acc"][acc_part], acc if reads_dst else None, fmax),
                ((0, len(acc)), acc, fmax)]
        kernel = self.kernel(dims, near=True)
        if kernel is None:
            return False
        self.b.alu(kernel, op, imm=self.imm(op) if use_imm else None)
        acc[kernel.indices()[0]] = True
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
        for attempt in range(30):
            y = rng.choice((1, 1, 2, 3, 4)) if attempt < 25 else 1
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
        ``k`` at most ``dims[k][2]``. ``near`` puts the source rows close to the destination
        rows, so steps read results of earlier steps. None when nothing fits after some tries."""
        rng = self.rng
        for _ in range(30):
            n = rng.choice((1, 1, 1, 2, 3, 4, rng.randint(5, 8)))
            extents = [rng.choice((1, 2, 3, 3, rng.randint(4, 8), rng.randint(9, 16)))
                       for _ in range(rng.choice((0, 1, 2)))]
            if n * int(np.prod(extents)) > _MAX_STEPS:
                continue
            cols = []
            for k, ((lo, hi), valid, fmax) in enumerate(dims):
                spread = min(hi - lo, rng.choice((1, 2, 4, 8)))
                offsets = [rng.randrange(spread) for _ in range(n)]
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
                cols += [(0, [0] * n, [0] * len(extents))] * (3 - len(cols))
                uops = [tuple(c[0] + c[1][i] for c in cols) for i in range(n)]
                loops = [Loop(e, *(c[2][j] for c in cols)) for j, e in enumerate(extents)]
                kernel = UopKernel(uops, loops)
                rows = kernel.indices()
                if all(valid is None or valid[rows[k]].all()
                       for k, (_, valid, _) in enumerate(dims)):
                    return kernel
        return None

    def _factor(self, extent, size, fmax):
        """A loop factor: zero, small, or big enough to stride across the buffer; with extent 1
        it moves no index but still fills its field."""
        rng, r = self.rng, self.rng.random()
        if r < 0.25:
            f = 0
        elif r < 0.55:
            f = 1
        elif r < 0.85 or extent == 1:
            f = rng.randint(2, 4)
        else:
            f = rng.randint(5, max(5, size // (2 * (extent - 1))))
        return min(f, fmax)

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
