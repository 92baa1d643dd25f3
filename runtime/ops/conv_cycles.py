"""The planner's cycle estimate of a conv2d tiling: which stage binds, not only bytes moved.

:func:`estimate` walks the tasks of a tiling in the order :mod:`avta.runtime.ops.conv2d` emits
them and schedules the three stages the way the token protocol of
:mod:`avta.runtime.pipeline` lets them overlap (``threads`` input and accumulator buffers):

- load task ``j`` starts when the load stage is free and the compute of task ``j − threads``
  has released its input buffer;
- its GEMM starts when the compute stage is free and task ``j`` is loaded; the first task of an
  output tile first initializes the accumulators (reset GEMM or bias MOV) once the store of tile
  ``t − slots`` has released that buffer (``slots``: the tiling's accumulator buffers, one per
  thread or four); the last task ends with the requantization tail;
- with two threads whose accumulator buffers lie in different ACC banks (the planner puts them
  there when they fit) the tail's passes run beside the GEMMs of the next tile: each task takes
  those that fit beside its GEMM, or an even share of the rest if that is more, the last task
  all that are left (:func:`.conv_passes.passes_beside`); its GEMM is split into one part per
  pass, each part's micro-ops in proportion to its pass's cycles
  (:func:`.conv_passes.split_parts`), each part a GEMM with its own fill. A MOV start
  (``start``, :data:`STARTS`) runs beside the last part of the tile before, once the store
  that frees its buffer is done: the compute stage runs a GEMM beside an ALU instruction
  (docs/architecture.md, compute stage), so a pass and its part take the longer of the two;
  passes no part takes run alone;
- the store of tile ``t`` starts when the store stage is free and its last pass is done;
- with a residual add fused into the layer (``t.shortcut``, :mod:`.conv_residual`) the compute
  stage LOADs each tile's shortcut rows (ACC_8BIT) after the tile's last GEMM, before its
  passes: nothing runs beside a LOAD.

Instruction costs are the RTL's as measured on tsim, the figures fsim's cycle model uses too
(:mod:`avta.isa.costs`): a GEMM of N steps takes N + ``GEMM_DETACH`` of the compute stage's
time (what follows it starts while it drains, hw/core/stage_control.py), an ALU instruction
N + ``ALU_FILL``; a LOAD its start and first-beat latency plus, per DRAM row, its bus beats
(or one cycle per element when elements are narrower than the bus); a STORE its start plus, per
DRAM row, its beats and the row overhead; a load-stage LOAD that follows another without the
stage waiting saves its start and first-beat latency (read-ahead, ``isa.costs.load_ahead``),
and those of a task's input window (a LOAD per input block, and per output row when subsampled)
start no sooner than the one before releases the stage (:func:`_streamed_loads`).
The resident ACC rows' LOAD (bias, per-channel rows; one per ACC bank only with upstream's
tail) comes first, and the load stage's first LOADs wait behind it and fetch's first ring of
instructions on the one read engine. A requantization pass takes what the emitter counts when it
puts passes beside GEMMs (:func:`.conv_passes.tail_passes`: cycles per row and per output
block). Border padding, micro-op loads (but for those a split last tile adds,
:func:`_estimates`) and fetch are left out: the estimate ranks tilings, it does not predict a
run to the cycle.
"""

import functools
import math

import numpy as np

from avta.isa.costs import (ALU_FILL, GEMM_DETACH, fetch_ring_wait, load_ahead, load_cycles,
                            load_release_cycles, row_cycles, store_cycles)

from ..pipeline import load_window
from .conv_first import first_piece, piece_loads
from .conv_passes import tail_blocks, tail_weights
from .conv_walk import compiled_walk

__all__ = ["estimate", "lower_bound", "lower_bounds", "walk_tables", "last_splits",
           "TAIL_STEPS", "STARTS", "GEMM_STARTS", "start_cycles", "bias_step_loads",
           "split_axis", "splits_last", "last_split", "halves", "task_pieces",
           "tiling_load_window", "shortcut_load_cycles"]
#: ALU passes over an output tile after its GEMMs, by default: accumulator start (reset GEMM or
#: bias MOV), SHR, MIN and MAX.
TAIL_STEPS = 4


def _ceil(a, b):
    return -(-a // b)


class _Costs:
    """Stage cycles of one layer's tasks and tiles, cached by their sizes."""

    def __init__(self, cfg, shape, t, tail_steps):
        self.cfg, self.shape, self.t, self.tail = cfg, shape, t, tail_steps
        self.kk = shape.kh * shape.kw
        # Looked up once: the estimate asks for them per task, hundreds of thousands of times.
        self._inp_bytes, self._wgt_bytes = cfg.inp_elem_bytes, cfg.wgt_elem_bytes
        self._fill = GEMM_DETACH
        self._cache = {}
        self._uops = {}

    def input_load(self, th, tw, nci):
        """A task's input window: a LOAD per input block (and per output row when
        subsampled), one after another, so each after the first reads ahead
        (:func:`_streamed_loads`); the walk counts the window as one LOAD."""
        key = ("input", th, tw)
        if key not in self._cache:
            s, sh = self.shape.stride, self.shape
            if sh.subsampled:       # a LOAD an output row, a DRAM row a pixel
                self._cache[key] = (th, tw, 1)
            else:
                self._cache[key] = (1, (th - 1) * s + sh.kh, (tw - 1) * s + sh.kw)
        n, rows, x = self._cache[key]
        return _streamed_loads(self.cfg, nci * n, rows, x, self._inp_bytes)

    def resident_load(self, start):
        """The compute stage's LOADs of the resident ACC rows (bias, per-channel rows) with the
        accumulator start ``start``, before the first GEMM (:func:`_resident_loads`)."""
        return int(_resident_loads(self.cfg, self.t.bias_rows, self.t.acc_banks, start))

    def weight_load(self, nco, nci):
        if self.shape.depthwise:        # the diagonal blocks of the chunk: one DRAM row
            return load_cycles(self.cfg, 1, nco * self.kk, self._wgt_bytes)
        return load_cycles(self.cfg, nco, nci * self.kk, self._wgt_bytes)

    def uops(self, nco, nci):
        """Micro-ops of a task's GEMM kernel (steps per output pixel)."""
        key = (nco, nci)
        found = self._uops.get(key)
        if found is None:
            found = self._uops[key] = self.shape.kernel_blocks(nco, nci) * self.kk
        return found

    def gemm(self, th, tw, nco, nci):
        return th * tw * self.uops(nco, nci) + self._fill

    def alu_pass(self, th, tw, nco):
        return th * tw * nco + ALU_FILL

    def start(self, th, tw, nco, start):
        """A tile's accumulator start on its own (:func:`start_cycles`)."""
        return start_cycles(self.cfg, th * tw * nco, start)

    def shortcut_load(self, th, tw, nco):
        """A fused residual add's LOADs of the tile's shortcut rows (0 without one)."""
        if not self.t.shortcut:
            return 0
        return shortcut_load_cycles(self.cfg, self.shape, th, tw, nco, self.t.acc_pitch)

    def store(self, th, tw, nco):
        key = ("store", th, tw, nco)
        if key not in self._cache:
            self._cache[key] = _store_cycles(self.cfg, self.shape, th, tw, nco, self.t.acc_pitch)
        return self._cache[key]


def _streamed_loads(cfg, n, rows, x_size, elem_bytes):
    """Cycles of ``n`` load-stage LOADs of ``rows`` DRAM rows of ``x_size`` elements issued one
    after another: each after the first reads ahead (:func:`avta.isa.costs.load_ahead`), but
    starts no sooner than the one before releases the stage
    (:func:`avta.isa.costs.load_release_cycles`), which binds where rows are short: a stride-2
    1x1 layer's window is a LOAD of a pixel a row per output row (on default 16 cycles each
    in a row, not 22 − 8)."""
    one = load_cycles(cfg, rows, x_size, elem_bytes)
    saved = min(load_ahead(cfg), one - load_release_cycles(cfg, rows, x_size, elem_bytes))
    return n * one - (n - 1) * max(0, saved)


def shortcut_load_cycles(cfg, shape, th, tw, nco, acc_pitch):
    """The compute stage's LOADs (ACC_8BIT) of the shortcut rows of a ``th × tw`` tile of
    ``nco`` output blocks (a fused residual add, :mod:`.conv_residual`), as the emitter
    issues them: one LOAD for the tile when its rows are whole output rows, one per block
    otherwise."""
    elem = cfg.acc8_elem_bytes
    if tw == shape.ow and th * tw == acc_pitch:
        return load_cycles(cfg, nco, th * shape.ow, elem)
    return nco * load_cycles(cfg, th, tw, elem)


def _resident_loads(cfg, bias_rows, acc_banks, start):
    """What the load stage's first LOADs wait behind on the one read engine (hw/axi/vme.py;
    numbers, or arrays of candidates): the rest of fetch's first ring of instructions
    (:func:`avta.isa.costs.fetch_ring_wait`), then the LOADs of ``bias_rows`` resident ACC rows
    (bias, per-channel rows) before the first GEMM, which come first in the stream: into the
    first of ``acc_banks`` banks where the accumulators start at the bias (the other banks' rows
    are an ALU copy of them, conv_emit, which reads no DRAM), into each bank with upstream's
    tail (``start`` "reset")."""
    banks = np.asarray(acc_banks) if start == "reset" else np.minimum(np.asarray(acc_banks), 1)
    return fetch_ring_wait(cfg) + banks * _each(
        lambda rows: load_cycles(cfg, 1, rows, cfg.acc_elem_bytes) if rows else 0, bias_rows)


def bias_step_loads(cfg, shape, start):
    """Cycles of the LOADs of the bias step's operands (:mod:`.bias_digits`: the constant INP
    row and a WGT block of digits per output block) with the accumulator start ``"gemm"``,
    else 0: the first task's load issues them before its own."""
    if start != "gemm":
        return 0
    return (load_cycles(cfg, 1, 1, cfg.inp_elem_bytes)
            + load_cycles(cfg, 1, shape.cout // cfg.block_out, cfg.wgt_elem_bytes))


def _first_weight_load(cfg, shape, threads, th, tw, nco, nci):
    """Cycles of the first task's weight LOAD that its first GEMM waits for: the whole chunk's,
    or its first piece's (:func:`.conv_first.first_piece`)."""
    piece = first_piece(cfg, shape, threads, th, tw, nco, nci)
    if piece:
        return piece_loads(cfg, shape.kernel_blocks(nco, nci) * shape.kh * shape.kw, piece)[0]
    return _Costs(cfg, shape, None, TAIL_STEPS).weight_load(nco, nci)


def _store_cycles(cfg, shape, th, tw, nco, acc_pitch):
    """The STOREs of a ``th × tw`` tile of ``nco`` output blocks whose buffer has ``acc_pitch``
    rows a block: one DRAM row per block when its rows are whole output rows, one per pixel
    row otherwise."""
    if tw == shape.ow and th * tw == acc_pitch:
        return store_cycles(cfg, nco, th * shape.ow)
    return nco * store_cycles(cfg, th, tw)


def _each(f, *args):
    """``f`` of each element of integer arrays of one shape (or of numbers), called once per
    distinct tuple of arguments: the costs of a layer's candidate tilings take few values."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in args))
    if arrays[0].ndim == 0:
        return f(*(int(a) for a in arrays))
    columns = [a.ravel() for a in arrays]
    if not columns[0].size:
        return np.zeros(arrays[0].shape, dtype=np.int64)
    # One integer per tuple (mixed radix: sizes are small and not negative), whose distinct
    # values numpy finds far faster than distinct rows.
    lows = [int(c.min()) for c in columns]
    radices = [int(c.max()) - low + 1 for c, low in zip(columns, lows)]
    if math.prod(radices) >= 1 << 62:
        distinct, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    else:
        key = np.zeros(columns[0].size, dtype=np.int64)
        for c, low, radix in zip(columns, lows, radices):
            key = key * radix + (c - low)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        distinct = np.stack(columns, axis=1)[first]
    values = np.array([f(*map(int, row)) for row in distinct], dtype=np.int64)
    return values[inverse.ravel()].reshape(arrays[0].shape)


#: How a tile's accumulators start (:mod:`.conv2d`): ``"bias"`` an ALU MOV of the shifted bias,
#: ``"zero"`` an ALU MOV of 0 (no bias) once an earlier tile wrote the buffer (its first tile
#: resets), ``"reset"`` a reset GEMM (a bias added after the shift), ``"gemm"`` a reset GEMM
#: and one GEMM step of the bias (:mod:`.bias_digits`): the GEMM core, not the ALU, starts them.
STARTS = ("bias", "zero", "reset", "gemm")
#: The starts that are GEMMs: they run on the compute stage's GEMM core, never beside a GEMM.
GEMM_STARTS = ("reset", "gemm")


def start_cycles(cfg, rows, start):
    """Cycles of a tile's accumulator start over ``rows`` ACC rows when nothing runs beside it:
    one pass of a cycle a row and the ALU's fill (the reset GEMM's too, as the estimate has
    always counted it), or with ``"gemm"`` two GEMMs (the reset and the bias step), each a
    cycle a row and the GEMM's fill; the emitter puts the previous tile's next two pending
    passes beside them."""
    if start == "gemm":
        return 2 * (rows + GEMM_DETACH)
    return rows + ALU_FILL


def _starts_beside(t, start):
    """Whether a tile's accumulator start, an ALU MOV, runs beside the previous tile's last GEMM
    part, as the emitter puts it with two buffers in different ACC banks."""
    if start not in STARTS:
        raise ValueError(f"accumulator start {start!r} is not one of {STARTS}")
    return start not in GEMM_STARTS and t.threads > 1 and t.acc_banks > 1


def lower_bound(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias"):
    """A bound :func:`estimate` never goes below, in constant time: the compute stage's work
    (every GEMM and ALU instruction) after the first task's LOADs, then the last tile's STORE."""
    return int(lower_bounds(cfg, shape, t.th, t.tw, t.tco, t.tci, t.threads, t.acc_banks,
                            t.inp_resident, t.bias_rows, tail_steps=tail_steps, start=start))


def lower_bounds(cfg, shape, th, tw, tco, tci, threads, acc_banks, inp_resident, bias_rows, *,
                 tail_steps=TAIL_STEPS, start="bias"):
    """:func:`lower_bound` of the tilings of these sizes, ACC banks, resident inputs and
    resident ACC rows (numbers, or arrays of candidates: the planner bounds every candidate at
    once, elementwise)."""
    if start not in STARTS:
        raise ValueError(f"accumulator start {start!r} is not one of {STARTS}")
    weights = tail_weights(tail_steps)
    th, tw, tco, tci, acc_banks = (np.asarray(v, dtype=np.int64)
                                   for v in (th, tw, tco, tci, acc_banks))
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    n_h, n_w, n_co = _ceil(shape.oh, th), _ceil(shape.ow, tw), _ceil(cob, tco)
    tiles = (shape.n // cfg.batch) * n_co * n_h * n_w
    tasks = tiles * shape.input_chunks(cfg, tci)
    rows = (shape.n // cfg.batch) * cob * shape.oh * shape.ow      # ACC rows of the whole layer
    gemm = shape.gemm_steps(cfg)
    costs = _Costs(cfg, shape, None, tail_steps)
    th0, tw0 = np.minimum(th, shape.oh), np.minimum(tw, shape.ow)
    nco, nci = np.minimum(tco, cob), np.minimum(tci, cib)
    last_th, last_tw = shape.oh - (n_h - 1) * th, shape.ow - (n_w - 1) * tw
    # A split last tile stores its second half last; a single tile split loads its first half
    # first.
    split = _split_axes(len(weights), threads, acc_banks, inp_resident, last_th, last_tw)
    th0 = np.where((split == 0) & (tiles == 1), halves(th0)[0], th0)
    last_th = np.where(split == 0, halves(last_th)[1], last_th)
    tw0 = np.where((split == 1) & (tiles == 1), halves(tw0)[0], tw0)
    last_tw = np.where(split == 1, halves(last_tw)[1], last_tw)
    # The first task's weights, or the first piece of them (conv_first) when it has one.
    first_weights = _each(lambda *sizes: _first_weight_load(cfg, shape, threads, *sizes),
                          th0, tw0, nco, nci)
    first_load = _resident_loads(cfg, bias_rows, acc_banks, start) + \
        bias_step_loads(cfg, shape, start) + \
        _each(costs.input_load, th0, tw0, nci) + first_weights
    last_store = _each(lambda *sizes: _store_cycles(cfg, shape, *sizes), last_th, last_tw,
                       cob - (n_co - 1) * tco, th * tw)
    # With two threads the tail after the accumulator start may run beside the GEMMs, and a
    # MOV start beside them too (_starts_beside): then the compute stage takes at least the
    # longer of its GEMMs and its ALU instructions (each runs one at a time).
    compute = gemm + tasks * GEMM_DETACH
    every_pass = (1 + sum(weights)) * rows + tiles * (1 + len(weights)) * ALU_FILL
    first_start = costs.alu_pass(th0, tw0, nco)     # may run while the first task loads
    banked = (threads > 1) & (acc_banks > 1)
    if start == "gemm":
        # The GEMM core starts every tile (the first while the first task loads); the ALU runs
        # only the tail (beside the GEMMs when banked).
        starts = 2 * (rows + tiles * GEMM_DETACH) - 2 * (th0 * tw0 * nco + GEMM_DETACH)
        passes = sum(weights) * rows + tiles * len(weights) * ALU_FILL
        return first_load + np.where(banked, np.maximum(compute + starts, passes),
                                     compute + starts + passes) + last_store
    beside = first_load + np.maximum(compute, every_pass - first_start) + last_store
    apart = first_load + compute + np.where(banked, rows + tiles * ALU_FILL, every_pass) \
        - first_start + last_store
    return np.where(banked & (start != "reset"), beside, apart)


def split_axis(t, last_th, last_tw, passes):
    """The axis along which the layer's last tile may be computed as two parts (0: its rows,
    1: its columns, −1: not at all), so that the first part's requantization ``passes`` run
    beside the second part's GEMMs instead of after them all: with two threads and the buffers
    in two banks (the passes run beside GEMMs); along the rows only where the input windows are
    resident (both parts read the whole tile's window from its slot). Weights per task are
    loaded again by the second part, which the estimate counts (whether a split pays is its
    to say, :func:`last_split`)."""
    return int(_split_axes(passes, t.threads, t.acc_banks, t.inp_resident, last_th, last_tw))


def _split_axes(passes, threads, acc_banks, inp_resident, last_th, last_tw):
    """:func:`split_axis` of tilings given by their fields (numbers, or arrays of candidates,
    elementwise)."""
    may = (passes > 0) & (threads > 1) & (np.asarray(acc_banks) > 1)
    # Both parts of a tile whose window is resident read it from its one slot, a part's rows
    # at an offset: only a split along the rows keeps the window's row pitch.
    columns = ~np.asarray(inp_resident, dtype=bool) & (last_tw > 1)
    return np.where(may, np.where(last_th > 1, 0, np.where(columns, 1, -1)), -1)


def last_splits(cfg, shape, th, tw, threads, acc_banks, inp_resident, tail_steps):
    """:func:`split_axis` of the last tile of tilings of these sizes, ACC banks and resident
    inputs (arrays of candidates, elementwise)."""
    last_th = shape.oh - (_ceil(shape.oh, th) - 1) * th
    last_tw = shape.ow - (_ceil(shape.ow, tw) - 1) * tw
    return _split_axes(len(tail_weights(tail_steps)), threads, acc_banks, inp_resident,
                       last_th, last_tw)


def halves(n):
    """The sizes of a split tile's two halves along an axis of ``n``."""
    return (n + 1) // 2, n // 2


def estimate(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias", give_up=None,
             tables=None):
    """Estimated cycles of ``shape`` under tiling ``t`` (a :class:`Conv2dTiling`), or ``None``
    as soon as the estimate passes ``give_up`` (the planner's best so far). ``start``: how the
    accumulators start (:data:`STARTS`). Where the last tile may be split (:func:`split_axis`),
    the better of both (the emitter splits it when :func:`last_split` says so). ``tables``:
    ``t``'s row of :func:`walk_tables` when the caller made them for many tilings at once (the
    planner), else made here.

    The planner estimates thousands of tilings per layer, each a walk over thousands of tasks,
    so the walk is compiled (:func:`.conv_walk.walk`, numba): a task's sizes are full or the
    border's on each axis, so every cost is read from a small table (:func:`walk_tables`)."""
    results = [r for r, *_ in _estimates(cfg, shape, t, tail_steps, start, give_up, tables)
               if r >= 0]
    return min(results) if results else None


def splits_last(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias"):
    """The axis along which the emitter splits the last tile (:func:`split_axis`), where the
    estimate says that is faster, else −1."""
    return _choice(cfg, shape, t, tail_steps, start)[0]


def last_split(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias"):
    """``(axis, first)``: the axis along which the emitter splits the last tile
    (:func:`splits_last`) and the first part's rows or columns along it (0 when whole).

    The planner ranks tilings with the last tile split in halves (:func:`halves`); the tiling
    chosen, the parts are sized by the estimate: the second part's requantization and store
    are what is left after the layer's last GEMM, so a second part smaller than half often
    ends the layer sooner (its first part's passes still run beside the second's GEMMs)."""
    axis, part = _choice(cfg, shape, t, tail_steps, start)[:2]
    return axis, part


def task_pieces(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias"):
    """``(first, last)``: weight blocks of the first piece the emitter loads the first and the
    last task in (:func:`.conv_first.first_piece`; the last only when it loads its weights),
    where the estimate says that is faster, else 0."""
    return _choice(cfg, shape, t, tail_steps, start)[2:]


@functools.lru_cache(maxsize=256)
def _choice(cfg, shape, t, tail_steps, start):
    """``(axis, part, first, last)`` of the fastest walk: the last tile split along ``axis``
    (−1: whole) with ``part`` rows or columns in its first part (0: whole), the first and the
    last task in pieces (0: one); the first of equals in the order whole before split, halves
    before other parts, one piece before two. Remembered: the emitter asks for the split and
    the pieces apart, and the walks are the same (the arguments are immutable)."""
    walks = [(r[0], r[1], r[2], r[3]) for r in _estimates(cfg, shape, t, tail_steps, start, None)
             if r[0] >= 0]
    axis = _split(cfg, shape, t, tail_steps)
    half = halves(_last_sizes(shape, t)[axis])[0] if axis >= 0 else 0
    # (cycles, axis, other than halves, part, first piece, last piece): the order of equals.
    best = min((c, a, False, half if a >= 0 else 0, p1, p2) for c, a, p1, p2 in walks)
    for part in range(1, _last_sizes(shape, t)[axis]) if axis >= 0 else ():
        if part != half:
            # Only walks that end no later than the best so far matter: the others give up.
            best = min([best] + [(r[0], r[1], True, part, r[2], r[3]) for r in _estimates(
                cfg, shape, t, tail_steps, start, best[0], part=part, whole=False) if r[0] >= 0])
    _, axis, _, part, first, last = best
    return axis, part, first, last


def _last_sizes(shape, t):
    """The last tile's rows and columns under ``t``."""
    n_h, n_w = _ceil(shape.oh, t.th), _ceil(shape.ow, t.tw)
    return shape.oh - (n_h - 1) * t.th, shape.ow - (n_w - 1) * t.tw


def _split(cfg, shape, t, tail_steps):
    """:func:`split_axis` of ``shape``'s last tile under ``t``."""
    return split_axis(t, *_last_sizes(shape, t), len(tail_weights(tail_steps)))


def _estimates(cfg, shape, t, tail_steps, start, give_up, tables=None, *, part=None,
               whole=True):
    """``(cycles, axis, first, last)`` of the walks with the last tile whole (unless not
    ``whole``) and split along ``axis`` (where it may be, :func:`split_axis`; in halves, or
    ``part`` rows or columns first), each with the first and the last task in one piece and,
    where they may be (:func:`.conv_first.first_piece`; the last only after ``threads``
    tasks, so that one task's extra token is in flight at a time), in two (cycles −1: passed
    ``give_up``); ``tables``: ``t``'s row of :func:`walk_tables`, else made here."""
    beside = _starts_beside(t, start)
    weights = np.array(tail_weights(tail_steps), dtype=np.int64)
    blocks = np.array(tail_blocks(tail_steps), dtype=np.int64)
    if tables is None:
        tables = [column[0] for column in walk_tables(
            cfg, shape, t.th, t.tw, t.tco, t.tci, t.acc_pitch, _split(cfg, shape, t, tail_steps),
            shortcut=t.shortcut, part=part)]
    n_co, n_h, n_w, n_ci, sizes, input_load, weight_load, uops, store, split, shortcut = tables
    split = int(split)
    resident = int(_resident_loads(cfg, t.bias_rows, t.acc_banks, start)) + \
        bias_step_loads(cfg, shape, start)
    cib = shape.cin // cfg.block_in
    tiles = (shape.n // cfg.batch) * n_co * n_h * n_w
    # A split last tile's second part runs GEMM kernels of its own, one micro-op per kernel
    # block of each of its tasks: they join the micro-op LOAD at the layer's start, which the
    # load stage's LOADs wait behind on the one read engine (its ALU kernels, a micro-op each
    # and some shared with earlier tiles, are left out).
    part_uops = row_cycles(cfg, int((n_ci - 1) * uops[1, 0] + uops[1, 1]), cfg.uop_elem_bytes,
                           cfg.uop.write_rows)
    results = []
    axes = ((-1,) if whole else ()) + ((split,) if split >= 0 else ())
    for axis in axes:
        # The first task's sizes: the first tile's (the border's where an axis has one tile;
        # its first half when it is the only tile and split); the last task's: the last
        # tile's (its second half when split), its last input chunk.
        one = tiles == 1 and axis >= 0
        a = 2 if one and axis == 0 else (1 if n_h == 1 else 0)
        b = 2 if one and axis == 1 else (1 if n_w == 1 else 0)
        nco = int(sizes[2, 1 if n_co == 1 else 0])
        nci = nco if shape.depthwise else min(t.tci, cib)
        first = _pieces(cfg, shape, t.threads, int(sizes[0, a]), int(sizes[1, b]), nco, nci)
        last = (0, 0, 0)
        if (tiles + (axis >= 0)) * n_ci > t.threads:
            nco = int(sizes[2, 1])
            nci = nco if shape.depthwise else cib - (int(n_ci) - 1) * t.tci
            last = _pieces(cfg, shape, t.threads, int(sizes[0, 3 if axis == 0 else 1]),
                           int(sizes[1, 3 if axis == 1 else 1]), nco, nci)
        # Pieces first: they are usually the fastest, and a walk gives up once it passes the
        # fastest so far (when giving up at all: the caller wants the least only).
        for p1 in (first[0], 0) if first[0] else (0,):
            for p2 in (last[0], 0) if last[0] else (0,):
                one_piece = (p1 and first[1:]) or (0, 0)
                last_piece = (p2 and last[1:]) or (0, 0)
                results.append((int(compiled_walk()(
                    shape.n // cfg.batch, int(n_co), int(n_h), int(n_w), int(n_ci), t.threads,
                    t.slots, t.inp_resident, t.wgt_resident, t.reload_weights,
                    t.threads > 1 and t.acc_banks > 1, beside, start == "zero",
                    start == "gemm", weights, blocks,
                    shape.gemm_steps(cfg), GEMM_DETACH, ALU_FILL, sizes, input_load,
                    weight_load, uops, store, give_up is not None,
                    0 if give_up is None else give_up, axis,
                    resident + (part_uops if axis >= 0 else 0), p1, *one_piece, p2,
                    *last_piece, shortcut, load_ahead(cfg), tiling_load_window(cfg, t))), axis, p1,
                    p2))
                if give_up is not None and results[-1][0] >= 0:
                    give_up = min(give_up, results[-1][0])
    return results


def tiling_load_window(cfg, t):
    """The load stage's window of tiling ``t`` (:func:`avta.runtime.pipeline.load_window`):
    its tasks' LOADs fill resident slots of their own when the input windows and the weights
    are both resident."""
    return load_window(cfg, t.threads, bool(t.inp_resident and t.wgt_resident
                                            and not t.reload_weights))


def _pieces(cfg, shape, threads, th, tw, nco, nci):
    """``(piece, its LOAD's cycles, the rest's)`` of a task of these sizes
    (:func:`.conv_first.first_piece`; ``(0, 0, 0)`` when it stays whole)."""
    piece = first_piece(cfg, shape, threads, th, tw, nco, nci)
    if not piece:
        return 0, 0, 0
    return (piece, *piece_loads(cfg, shape.kernel_blocks(nco, nci) * shape.kh * shape.kw,
                                piece))


def walk_tables(cfg, shape, th, tw, tco, tci, acc_pitch, split, *, shortcut=False, part=None):
    """The tables :func:`_walk` reads, of tilings of these sizes, ACC rows a block and last
    tiles split along ``split`` (:func:`split_axis`; numbers, or 1-D arrays: the planner makes
    those of many candidates at once) in halves, or (one tiling) ``part`` rows or columns
    first: ``(n_co, n_h, n_w, n_ci, sizes, input_load,
    weight_load, uops, store, split, shortcut_load)``, each with one row per tiling — its
    tiles and chunks on each axis, and the costs of a task or tile by its sizes
    (:class:`_Costs`), each full (index 0) or the border's (1) on each axis, and 2 and 3 the
    halves of the border along the split axis (the border again on the other):
    ``sizes[axis, i]`` (th, tw, nco), ``input_load[h, w, co, ci]``, ``weight_load[co, ci]``,
    ``uops[co, ci]``, ``store[h, w, co]`` and ``shortcut_load[h, w, co]`` (a fused residual
    add's LOADs, :func:`shortcut_load_cycles`; zeros without ``shortcut``)."""
    th, tw, tco, tci, acc_pitch, split = (np.asarray(v, dtype=np.int64).reshape(-1)
                                          for v in (th, tw, tco, tci, acc_pitch, split))
    costs = _Costs(cfg, shape, None, TAIL_STEPS)
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    n_ci = np.broadcast_to(shape.input_chunks(cfg, tci), th.shape)
    n_co = _ceil(cob, tco)
    n_h, n_w = _ceil(shape.oh, th), _ceil(shape.ow, tw)
    last_th, last_tw = shape.oh - (n_h - 1) * th, shape.ow - (n_w - 1) * tw

    def with_halves(full, last, axis):
        first, second = halves(last) if part is None else (part, last - part)
        return np.stack([full, last, np.where(split == axis, first, last),
                         np.where(split == axis, second, last)], axis=1)

    ths, tws = with_halves(th, last_th, 0), with_halves(tw, last_tw, 1)
    ncos = np.stack([tco, cob - (n_co - 1) * tco], axis=1)
    ncis = np.stack([tci, cib - (n_ci - 1) * tci], axis=1)
    # A task's input blocks by (co, ci): a depthwise task's are its output blocks.
    nci_of = ncos[:, None, :] if shape.depthwise else ncis[:, :, None]
    nci_of = np.broadcast_to(nci_of, (th.size, 2, 2)).transpose(0, 2, 1)
    nco_of = np.broadcast_to(ncos[:, :, None], (th.size, 2, 2))
    input_load = _each(costs.input_load, ths[:, :, None, None, None],
                       tws[:, None, :, None, None], nci_of[:, None, None, :, :])
    weight_load = _each(costs.weight_load, nco_of, nci_of)
    uops = _each(costs.uops, nco_of, nci_of)
    store = _each(lambda *sizes: _store_cycles(cfg, shape, *sizes), ths[:, :, None, None],
                  tws[:, None, :, None], ncos[:, None, None, :], acc_pitch[:, None, None, None])
    shortcut_load = np.zeros_like(store)
    if shortcut:
        shortcut_load = _each(lambda *sizes: shortcut_load_cycles(cfg, shape, *sizes),
                              ths[:, :, None, None], tws[:, None, :, None],
                              ncos[:, None, None, :], acc_pitch[:, None, None, None])
    sizes = np.stack([ths, tws, np.concatenate([ncos, ncos], axis=1)], axis=1)
    return (n_co, n_h, n_w, n_ci, sizes, input_load, weight_load, uops, store, split,
            shortcut_load)
