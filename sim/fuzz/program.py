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

This module holds the schedule of tiles; :mod:`.layout` places the data and the stream in DRAM
and :mod:`.generators` makes the instructions.
"""

import random

import numpy as np

from avta.isa.config import INSN_QUEUE_DEPTH
from avta.isa.enums import Stage
from avta.isa.memories import memory, stage_types
from avta.runtime.pipeline import Pipeline
from avta.runtime.stream import StreamBuilder, StreamError
from avta.runtime.uop_kernel import Loop, UopKernel
from avta.runtime.wellformed import check_wellformed

from .corners import draw_corners
from .generators import InstructionGenerators
from .layout import MAX_ELEMS, TENSOR_BYTES, ImageLayout, RandomProgram

__all__ = ["RandomProgram", "GeneratorError", "random_program"]

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


class GeneratorError(AssertionError):
    """A generated program is not well-formed: a bug in this module, with the violations."""


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


class _Generator(ImageLayout, InstructionGenerators):
    """The state of building one program: data buffers, rows written so far, DRAM cursor; the
    schedule of tiles here, the layout in :class:`.layout.ImageLayout`, the instructions in
    :class:`.generators.InstructionGenerators`."""

    def __init__(self, cfg, seed, *, threads, tiles, lean, corners=frozenset()):
        self.cfg, self.seed, self.threads, self.lean = cfg, seed, threads, lean
        self.corners = corners
        self.rng = random.Random(f"avta-fuzz:{seed}:{threads}:{tiles}:{lean}")
        big = "big tensors" in corners
        self.tensor_bytes = self.rng.choice((8, 16, 32, 64)) << 10 if big else TENSOR_BYTES
        self.max_elems = 1 << 14 if big else MAX_ELEMS
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

    def store_tile(self, acc_part, *, final):
        """STOREs of written OUT rows of buffer ``acc_part``; none sometimes (a store no-op),
        but the last tile always stores, so every program leaves output behind."""
        rng = self.rng
        n = 1 if self.lean else (0 if rng.random() < 0.1 else rng.randint(1, 3))
        if final and self.out_next == 0:
            n = max(n, 1)
        for _ in range(n):
            self.store(acc_part)
