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
  there when they fit) the tail's passes run beside the next task's GEMM, one pass per part of it
  (as many parts as it has micro-ops at most, each part a GEMM with its own fill), and a MOV
  start (``start``, :data:`STARTS`) beside the last part of the tile before, once the store that
  frees its buffer is done: the compute stage runs a GEMM beside an ALU
  instruction (docs/architecture.md, compute stage), so the GEMM and the passes take the longer
  of the two; passes left over wait for the next GEMM, or run alone after the last;
- the store of tile ``t`` starts when the store stage is free and its last pass is done.

Instruction costs are the RTL's as measured on tsim, the figures fsim's cycle model uses too
(:mod:`avta.isa.costs`): a GEMM of N steps takes N + ``gemm_fill(cfg)``, an ALU instruction
N + ``ALU_FILL``; a LOAD its start and first-beat latency plus, per DRAM row, its bus beats
(or one cycle per element when elements are narrower than the bus); a STORE its start plus, per
DRAM row, its beats and the row overhead. Border padding, micro-op loads and fetch are left out:
the estimate ranks tilings, it does not predict a run to the cycle.
"""

import functools
import math

import numpy as np

from avta.isa.costs import ALU_FILL, gemm_fill, load_cycles, store_cycles

__all__ = ["estimate", "lower_bound", "lower_bounds", "walk_tables", "TAIL_STEPS", "STARTS"]
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
        self._fill = gemm_fill(cfg)
        self._cache = {}
        self._uops = {}

    def input_load(self, th, tw, nci):
        key = ("input", th, tw)
        if key not in self._cache:
            s, sh = self.shape.stride, self.shape
            th_in, tw_in = (th - 1) * s + sh.kh, (tw - 1) * s + sh.kw
            self._cache[key] = load_cycles(self.cfg, th_in, tw_in, self._inp_bytes)
        return nci * self._cache[key]

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

    def store(self, th, tw, nco):
        key = ("store", th, tw, nco)
        if key not in self._cache:
            self._cache[key] = _store_cycles(self.cfg, self.shape, th, tw, nco, self.t.acc_pitch)
        return self._cache[key]


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
#: resets), ``"reset"`` a reset GEMM (a bias added after the shift).
STARTS = ("bias", "zero", "reset")


def _starts_beside(t, start):
    """Whether a tile's accumulator start, an ALU MOV, runs beside the previous tile's last GEMM
    part, as the emitter puts it with two buffers in different ACC banks."""
    if start not in STARTS:
        raise ValueError(f"accumulator start {start!r} is not one of {STARTS}")
    return start != "reset" and t.threads > 1 and t.acc_banks > 1


def lower_bound(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias"):
    """A bound :func:`estimate` never goes below, in constant time: the compute stage's work
    (every GEMM and ALU instruction) after the first task's LOADs, then the last tile's STORE."""
    return int(lower_bounds(cfg, shape, t.th, t.tw, t.tco, t.tci, t.threads, t.acc_banks,
                            tail_steps=tail_steps, start=start))


def lower_bounds(cfg, shape, th, tw, tco, tci, threads, acc_banks, *, tail_steps=TAIL_STEPS,
                 start="bias"):
    """:func:`lower_bound` of the tilings of these sizes and ACC banks (numbers, or arrays of
    candidates: the planner bounds every candidate at once, elementwise)."""
    if start not in STARTS:
        raise ValueError(f"accumulator start {start!r} is not one of {STARTS}")
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
    first_load = _each(costs.input_load, th0, tw0, nci) + _each(costs.weight_load, nco, nci)
    last_store = _each(lambda *sizes: _store_cycles(cfg, shape, *sizes),
                       shape.oh - (n_h - 1) * th, shape.ow - (n_w - 1) * tw,
                       cob - (n_co - 1) * tco, th * tw)
    # With two threads the tail after the accumulator start may run beside the GEMMs, and a
    # MOV start beside them too (_starts_beside): then the compute stage takes at least the
    # longer of its GEMMs and its ALU instructions (each runs one at a time).
    compute = gemm + tasks * gemm_fill(cfg)
    alu = rows + tiles * ALU_FILL            # one pass over every tile
    banked = (threads > 1) & (acc_banks > 1)
    beside = first_load + np.maximum(compute, tail_steps * alu) + last_store
    apart = first_load + compute + np.where(banked, 1, tail_steps) * alu \
        - costs.alu_pass(th0, tw0, nco) + last_store
    return np.where(banked & (start != "reset"), beside, apart)


def estimate(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias", give_up=None,
             tables=None):
    """Estimated cycles of ``shape`` under tiling ``t`` (a :class:`Conv2dTiling`), or ``None``
    as soon as the estimate passes ``give_up`` (the planner's best so far). ``start``: how the
    accumulators start (:data:`STARTS`). ``tables``: ``t``'s row of :func:`walk_tables` when the
    caller made them for many tilings at once (the planner), else made here.

    The planner estimates thousands of tilings per layer, each a walk over thousands of tasks,
    so the walk is compiled (:func:`_walk`, numba): a task's sizes are full or the border's on
    each axis, so every cost is read from a small table (:func:`walk_tables`)."""
    beside = _starts_beside(t, start)
    if tables is None:
        tables = [column[0] for column in walk_tables(cfg, shape, t.th, t.tw, t.tco, t.tci,
                                                      t.acc_pitch)]
    n_co, n_h, n_w, n_ci, sizes, input_load, weight_load, uops, store = tables
    result = _compiled_walk()(
        shape.n // cfg.batch, n_co, n_h, n_w, n_ci, t.threads, t.slots, t.inp_resident,
        t.wgt_resident, t.reload_weights, t.threads > 1 and t.acc_banks > 1, beside,
        start == "zero", tail_steps, shape.gemm_steps(cfg), gemm_fill(cfg), ALU_FILL, sizes,
        input_load, weight_load, uops, store, give_up is not None,
        0 if give_up is None else give_up)
    return None if result < 0 else int(result)


def walk_tables(cfg, shape, th, tw, tco, tci, acc_pitch):
    """The tables :func:`_walk` reads, of tilings of these sizes and ACC rows a block
    (numbers, or 1-D arrays: the planner makes those of many candidates at once): ``(n_co, n_h, n_w, n_ci, sizes,
    input_load, weight_load, uops, store)``, each with one row per tiling — its tiles and
    chunks on each axis, and the costs of a task or tile by its sizes (:class:`_Costs`), each
    full (index 0) or the border's (1) on each axis: ``sizes[axis, i]`` (th, tw, nco),
    ``input_load[h, w, co, ci]``, ``weight_load[co, ci]``, ``uops[co, ci]`` and
    ``store[h, w, co]``."""
    th, tw, tco, tci, acc_pitch = (np.asarray(v, dtype=np.int64).reshape(-1)
                                   for v in (th, tw, tco, tci, acc_pitch))
    costs = _Costs(cfg, shape, None, TAIL_STEPS)
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    n_ci = np.broadcast_to(shape.input_chunks(cfg, tci), th.shape)
    n_co = _ceil(cob, tco)
    n_h, n_w = _ceil(shape.oh, th), _ceil(shape.ow, tw)
    # Per axis the full size and the border's (the last tile's), index 0 and 1.
    ths = np.stack([th, shape.oh - (n_h - 1) * th], axis=1)
    tws = np.stack([tw, shape.ow - (n_w - 1) * tw], axis=1)
    ncos = np.stack([tco, cob - (n_co - 1) * tco], axis=1)
    ncis = np.stack([tci, cib - (n_ci - 1) * tci], axis=1)
    # A task's input blocks by (co, ci): a depthwise task's are its output blocks.
    nci_of = ncos[:, None, :] if shape.depthwise else ncis[:, :, None]
    nci_of = np.broadcast_to(nci_of, (th.size, 2, 2)).transpose(0, 2, 1)
    nco_of = np.broadcast_to(ncos[:, :, None], (th.size, 2, 2))
    input_load = _each(costs.input_load, ths[:, :, None, None, None], tws[:, None, :, None, None],
                       nci_of[:, None, None, :, :])
    weight_load = _each(costs.weight_load, nco_of, nci_of)
    uops = _each(costs.uops, nco_of, nci_of)
    store = _each(lambda *sizes: _store_cycles(cfg, shape, *sizes), ths[:, :, None, None],
                  tws[:, None, :, None], ncos[:, None, None, :], acc_pitch[:, None, None, None])
    sizes = np.stack([ths, tws, ncos], axis=1)
    return n_co, n_h, n_w, n_ci, sizes, input_load, weight_load, uops, store


@functools.cache
def _compiled_walk():
    """:func:`_walk` compiled by numba (on disk beside this file, so once per source), made on
    first use: importing numba takes a quarter of a second, and a run whose programs all come
    from the cache (:mod:`avta.runtime.build_cache`) plans nothing."""
    import numba
    return numba.njit(cache=True, nogil=True)(_walk)


def _walk(n_b, n_co, n_h, n_w, n_ci, threads, slots, inp_resident, wgt_resident,
          reload_weights, banked, beside, zero_start, tail_steps, gemm_left, fill, alu_fill,
          sizes, input_load, weight_load, uops, store, stops, give_up):
    """The walk of :func:`estimate` over every task in the emitter's order (the module
    docstring); -1 once it passes ``give_up`` (only when ``stops``). ``banked``: two threads
    with their accumulator buffers in different ACC banks (the tail's passes run beside the
    next GEMMs); ``beside``: a tile's MOV start runs beside the last part of the tile before
    (:func:`_starts_beside`); ``zero_start``: the start is ``"zero"``. Tables are indexed by 0
    (full) or 1 (border) per axis: ``sizes[axis, i]`` (th, tw, nco), ``input_load[h, w, co,
    ci]``, ``weight_load[co, ci]``, ``uops[co, ci]`` and ``store[h, w, co]``."""
    n_spatial = n_h * n_w
    n_tasks = n_b * n_co * n_spatial * n_ci
    load_free = compute_free = store_free = 0
    gemm_done = np.empty(n_tasks, np.int64)         # per task: when it released its input buffer
    store_done = np.empty(n_b * n_co * n_spatial, np.int64)     # per tile: when its store ended
    n_stores = 0
    held = np.full(threads, -1, np.int64)       # the weight chunk each input buffer holds
    resident = np.zeros(n_co * n_ci, np.bool_)
    windows = np.zeros(n_b * n_spatial * n_ci, np.bool_)
    pending = False             # the tail waiting for GEMMs: passes left, pass cycles, store
    p_left = p_pass = p_store = 0
    j = tile = 0
    # The table index of an axis's first tile: the border's when it is the only one.
    h0, w0, co0 = 1 if n_h == 1 else 0, 1 if n_w == 1 else 0, 1 if n_co == 1 else 0
    for nb in range(n_b):
        for cot in range(n_co):
            c = 1 if cot == n_co - 1 else 0
            nco = sizes[2, c]
            spatial = nb * n_spatial
            for hi in range(n_h):
                a = 1 if hi == n_h - 1 else 0
                th = sizes[0, a]
                for wi in range(n_w):
                    b = 1 if wi == n_w - 1 else 0
                    tw = sizes[1, b]
                    for cit in range(n_ci):
                        d = 1 if cit == n_ci - 1 else 0
                        last = cit == n_ci - 1
                        # Load stage.
                        load_start = load_free if j < threads else max(load_free,
                                                                       gemm_done[j - threads])
                        cycles = 0
                        window = spatial * n_ci + cit
                        if not inp_resident or not windows[window]:
                            windows[window] = True
                            cycles += input_load[a, b, c, d]
                        v, chunk = j % threads, cot * n_ci + cit
                        if wgt_resident:
                            if not resident[chunk]:
                                resident[chunk] = True
                                cycles += weight_load[c, d]
                        elif reload_weights or held[v] != chunk:
                            held[v] = chunk
                            cycles += weight_load[c, d]
                        load_free = load_start + cycles
                        # Compute stage.
                        if cit == 0 and (tile == 0 or not beside):
                            begin = compute_free if tile < slots else max(
                                compute_free, store_done[tile - slots])
                            compute_free = begin + th * tw * nco + alu_fill
                        begin = max(compute_free, load_free)
                        n_uops = uops[c, d]
                        gemm = th * tw * n_uops + fill
                        compute_free = begin + gemm
                        if beside and last and j + 1 < n_tasks:
                            # The next tile's MOV start beside the last part of this GEMM,
                            # the pending passes beside the parts before it (a pass starts
                            # when it and the part before it have ended, a part beside the
                            # pass before it); passes no part takes run before the MOV.
                            side = min(p_left, n_uops - 1) if pending else 0
                            pass_cycles = p_pass if pending else 0
                            part = (gemm + side * fill) // (side + 1)
                            step = max(pass_cycles, part)
                            tail = (side - 1) * step + pass_cycles if side != 0 else 0
                            done = begin + ((side - 1) * step + step if side != 0 else 0)
                            if pending:
                                done = max(done, begin + tail) + (p_left - side) * p_pass
                                store_free = max(store_free, done) + p_store
                                store_done[n_stores] = store_free
                                n_stores += 1
                                pending = False
                            # The next tile's sizes: the next along w, else h, co, batch.
                            if wi + 1 < n_w:
                                na, nw, nc = a, 1 if wi + 1 == n_w - 1 else 0, c
                            elif hi + 1 < n_h:
                                na, nw, nc = 1 if hi + 1 == n_h - 1 else 0, w0, c
                            elif cot + 1 < n_co:
                                na, nw, nc = h0, w0, 1 if cot + 1 == n_co - 1 else 0
                            else:
                                na, nw, nc = h0, w0, co0
                            mov = sizes[0, na] * sizes[1, nw] * sizes[2, nc] + alu_fill
                            if tile + 1 >= slots:
                                done = max(done, store_done[tile + 1 - slots])
                                compute_free = done + max(part, mov)
                            elif zero_start:    # the buffer's first tile: a reset GEMM
                                compute_free = done + mov + part
                            else:
                                compute_free = done + max(part, mov)
                        elif pending:
                            parts = min(p_left, n_uops)
                            part = (gemm + (parts - 1) * fill) // parts
                            step = max(p_pass, part)
                            if parts != 0:
                                tail = begin + (parts - 1) * step + p_pass
                                compute_free = begin + (parts - 1) * step + step
                            else:
                                tail = begin
                                compute_free = begin + part
                            p_left -= parts
                            if p_left == 0:
                                store_free = max(store_free, tail) + p_store
                                store_done[n_stores] = store_free
                                n_stores += 1
                                pending = False
                        gemm_done[j] = compute_free
                        gemm_left -= th * tw * n_uops
                        if last:
                            if pending:     # passes of the previous tile no GEMM took run alone
                                compute_free += p_left * p_pass
                                store_free = max(store_free, compute_free) + p_store
                                store_done[n_stores] = store_free
                                n_stores += 1
                            pending = True
                            p_left, p_pass, p_store = \
                                tail_steps - 1, th * tw * nco + alu_fill, store[a, b, c]
                            # No passes (no requantization) or no buffer in another ACC bank:
                            # stored now.
                            if p_left == 0 or not banked:
                                compute_free += p_left * p_pass
                                store_free = max(store_free, compute_free) + p_store
                                store_done[n_stores] = store_free
                                n_stores += 1
                                pending = False
                        if stops and max(compute_free + gemm_left, store_free) > give_up:
                            return -1
                        j += 1
                    tile += 1
                    spatial += 1
    if pending:
        compute_free += p_left * p_pass
        store_free = max(store_free, compute_free) + p_store
    return store_free
