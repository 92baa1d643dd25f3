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
  all that are left (:func:`passes_beside`); its GEMM is split into one part per pass, each
  part's micro-ops in proportion to its pass's cycles (:func:`split_parts`), each part a GEMM
  with its own fill. A MOV start (``start``, :data:`STARTS`) runs beside the last part of the
  tile before, once the store that frees its buffer is done: the compute stage runs a GEMM
  beside an ALU instruction (docs/architecture.md, compute stage), so a pass and its part take
  the longer of the two; passes no part takes run alone;
- the store of tile ``t`` starts when the store stage is free and its last pass is done.

Instruction costs are the RTL's as measured on tsim, the figures fsim's cycle model uses too
(:mod:`avta.isa.costs`): a GEMM of N steps takes N + ``gemm_fill(cfg)``, an ALU instruction
N + ``ALU_FILL``; a LOAD its start and first-beat latency plus, per DRAM row, its bus beats
(or one cycle per element when elements are narrower than the bus); a STORE its start plus, per
DRAM row, its beats and the row overhead. The resident ACC rows' LOADs (bias, per-channel rows)
come first, and the load stage's first LOADs wait behind them on the one read engine. Border
padding, micro-op loads and fetch are left out: the estimate ranks tilings, it does not predict
a run to the cycle.
"""

import functools

import numpy as np

from avta.isa.costs import ALU_FILL, gemm_fill, load_cycles, store_cycles

__all__ = ["estimate", "lower_bound", "TAIL_STEPS", "STARTS", "tail_weights", "passes_beside",
           "split_parts", "split_axis", "splits_last", "halves"]
#: ALU passes over an output tile after its GEMMs, by default: accumulator start (reset GEMM or
#: bias MOV), SHR, MIN and MAX.
TAIL_STEPS = 4


def tail_weights(tail_steps):
    """The passes of a requantization tail after the accumulator start, as a tuple of cycles per
    ACC row (1 with an immediate, :func:`~avta.isa.costs.two_operand_step` with two operands):
    ``tail_steps`` is that tuple, or an int, the start and ``tail_steps − 1`` one-cycle
    passes."""
    if isinstance(tail_steps, tuple):
        if not all(isinstance(w, int) and not isinstance(w, bool) and w >= 1
                   for w in tail_steps):
            raise ValueError(f"tail passes {tail_steps!r} must be cycles per row, integers >= 1")
        return tail_steps
    if isinstance(tail_steps, bool) or not isinstance(tail_steps, int) or tail_steps < 1:
        raise ValueError(f"tail_steps {tail_steps!r} must be an integer >= 1 (the start and "
                         f"the passes after it) or a tuple of the passes' cycles per row")
    return (1,) * (tail_steps - 1)


def passes_beside(costs, gemm, tasks_left):
    """How many of the pending passes (``costs``, cycles each, in order) run beside a GEMM of
    ``gemm`` cycles with ``tasks_left`` GEMMs of its tile left, this one included: all of them
    on the last; otherwise those that fit beside it, or an even share of all of them if that is
    more (one pass at least): the passes then spread over the tile's GEMMs instead of outlasting
    the first."""
    n = len(costs)
    if tasks_left <= 1:
        return n
    total = 0
    for c in costs:
        total += c
    taken = cycles = 0
    while taken < n:
        c = cycles + costs[taken]
        if taken and c > gemm and c * tasks_left > total:
            break
        taken, cycles = taken + 1, c
    return taken


def split_parts(n, costs):
    """``[(start, stop), ...]``: ``n`` micro-ops split into one range per pass of ``costs``
    (at most ``n`` of them), each range's share of the micro-ops its pass's share of the cycles
    (rounded, one micro-op at least), so that a GEMM part lasts about as long as the pass beside
    it."""
    parts = len(costs)
    if not 1 <= parts <= n:
        raise ValueError(f"{parts} parts of a GEMM of {n} micro-ops")
    total, cum, bounds = sum(costs), 0, [0]
    for k in range(parts - 1):
        cum += costs[k]
        bounds.append(min(n - (parts - 1 - k), max(bounds[-1] + 1,
                                                     (2 * n * cum + total) // (2 * total))))
    bounds.append(n)
    return list(zip(bounds, bounds[1:]))


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
            if sh.subsampled:       # a LOAD an output row, a DRAM row a pixel
                self._cache[key] = th * load_cycles(self.cfg, tw, 1, self._inp_bytes)
            else:
                th_in, tw_in = (th - 1) * s + sh.kh, (tw - 1) * s + sh.kw
                self._cache[key] = load_cycles(self.cfg, th_in, tw_in, self._inp_bytes)
        return nci * self._cache[key]

    def resident_load(self):
        """The compute stage's LOADs of the resident ACC rows (bias, per-channel rows) into each
        bank the buffers use, before the first GEMM. They share the one read engine with the
        load stage (hw/axi/vme.py), and come first in the stream, so the load stage's first
        LOADs wait behind them."""
        t = self.t
        if not t.bias_rows:
            return 0
        return t.acc_banks * load_cycles(self.cfg, 1, t.bias_rows, self.cfg.acc_elem_bytes)

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
            sh, t = self.shape, self.t
            if tw == sh.ow and th * tw == t.acc_pitch:
                cycles = store_cycles(self.cfg, nco, th * sh.ow)
            else:
                cycles = nco * store_cycles(self.cfg, th, tw)
            self._cache[key] = cycles
        return self._cache[key]


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
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    tiles = (shape.n // cfg.batch) * _ceil(cob, t.tco) * _ceil(shape.oh, t.th) * \
        _ceil(shape.ow, t.tw)
    tasks = tiles * shape.input_chunks(cfg, t.tci)
    rows = (shape.n // cfg.batch) * cob * shape.oh * shape.ow      # ACC rows of the whole layer
    gemm = shape.gemm_steps(cfg)
    costs = _Costs(cfg, shape, t, tail_steps)
    th, tw = min(t.th, shape.oh), min(t.tw, shape.ow)
    nco, nci = min(t.tco, cob), min(t.tci, cib)
    last_th, last_tw = shape.oh - (_ceil(shape.oh, t.th) - 1) * t.th, \
        shape.ow - (_ceil(shape.ow, t.tw) - 1) * t.tw
    # A split last tile stores its second half last; a single tile split loads its first half
    # first.
    split = split_axis(t, last_th, last_tw, len(tail_weights(tail_steps)))
    if split == 0:
        th = halves(th)[0] if tiles == 1 else th
        last_th = halves(last_th)[1]
    elif split == 1:
        tw = halves(tw)[0] if tiles == 1 else tw
        last_tw = halves(last_tw)[1]
    first_load = costs.resident_load() + costs.input_load(th, tw, nci) + \
        costs.weight_load(nco, nci)
    last_store = costs.store(last_th, last_tw, cob - (_ceil(cob, t.tco) - 1) * t.tco)
    # With two threads the tail after the accumulator start may run beside the GEMMs, and a
    # MOV start beside them too: then the compute stage takes at least the longer of its GEMMs
    # and its ALU instructions (each runs one at a time).
    compute = gemm + tasks * gemm_fill(cfg)
    weights = tail_weights(tail_steps)
    first_start = costs.alu_pass(th, tw, nco)   # may run while the first task loads
    if _starts_beside(t, start):
        alu = (1 + sum(weights)) * rows + tiles * (1 + len(weights)) * ALU_FILL
        return first_load + max(compute, alu - first_start) + last_store
    if t.threads > 1 and t.acc_banks > 1:
        compute += rows + tiles * ALU_FILL
    else:
        compute += (1 + sum(weights)) * rows + tiles * (1 + len(weights)) * ALU_FILL
    return first_load + compute - first_start + last_store


def split_axis(t, last_th, last_tw, passes):
    """The axis along which the layer's last tile may be computed as two (0: its rows, 1: its
    columns, −1: not at all), so that the first half's requantization ``passes`` run beside the
    second half's GEMMs instead of after them all: with two threads and the buffers in two
    banks (the passes run beside GEMMs), resident weights (the halves load none again) and
    input windows loaded per task (a resident window's slot is the whole tile's)."""
    if not (passes and t.threads > 1 and t.acc_banks > 1 and t.wgt_resident
            and not t.inp_resident):
        return -1
    return 0 if last_th > 1 else 1 if last_tw > 1 else -1


def halves(n):
    """The sizes of a split tile's two halves along an axis of ``n``."""
    return (n + 1) // 2, n // 2


def estimate(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias", give_up=None):
    """Estimated cycles of ``shape`` under tiling ``t`` (a :class:`Conv2dTiling`), or ``None``
    as soon as the estimate passes ``give_up`` (the planner's best so far). ``start``: how the
    accumulators start (:data:`STARTS`). Where the last tile may be split (:func:`split_axis`),
    the better of both (the emitter splits it when :func:`splits_last` says so).

    The planner estimates thousands of tilings per layer, each a walk over thousands of tasks,
    so the walk is compiled (:func:`_walk`, numba): a task's sizes are full or the border's on
    each axis, so every cost is read from a small table made here with :class:`_Costs`."""
    results = [r for r in _estimates(cfg, shape, t, tail_steps, start, give_up) if r >= 0]
    return min(results) if results else None


def splits_last(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias"):
    """The axis along which the emitter splits the last tile (:func:`split_axis`), where the
    estimate says that is faster, else −1."""
    whole, split = _estimates(cfg, shape, t, tail_steps, start, None)
    return -1 if split < 0 or split >= whole else _split(cfg, shape, t, tail_steps)


def _split(cfg, shape, t, tail_steps):
    """:func:`split_axis` of ``shape``'s last tile under ``t``."""
    n_h, n_w = _ceil(shape.oh, t.th), _ceil(shape.ow, t.tw)
    return split_axis(t, shape.oh - (n_h - 1) * t.th, shape.ow - (n_w - 1) * t.tw,
                      len(tail_weights(tail_steps)))


def _estimates(cfg, shape, t, tail_steps, start, give_up):
    """The walk's results without and with the last tile split (−1: passed ``give_up``, or
    not split)."""
    beside = _starts_beside(t, start)
    costs = _Costs(cfg, shape, t, tail_steps)
    weights = np.array(tail_weights(tail_steps), dtype=np.int64)
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    n_ci = shape.input_chunks(cfg, t.tci)
    n_co = _ceil(cob, t.tco)
    n_h, n_w = _ceil(shape.oh, t.th), _ceil(shape.ow, t.tw)
    # Per axis the full size and the border's (the last tile's), index 0 and 1; 2 and 3 the
    # halves of the border where the last tile is split along that axis.
    ths = (t.th, shape.oh - (n_h - 1) * t.th)
    tws = (t.tw, shape.ow - (n_w - 1) * t.tw)
    ncos = (t.tco, cob - (n_co - 1) * t.tco)
    ncis = (t.tci, cib - (n_ci - 1) * t.tci)
    split = split_axis(t, ths[1], tws[1], len(weights))
    ths += halves(ths[1]) if split == 0 else (ths[1], ths[1])
    tws += halves(tws[1]) if split == 1 else (tws[1], tws[1])

    def nci_of(c, d):
        return ncos[c] if shape.depthwise else ncis[d]

    input_load = np.array([[[[costs.input_load(ths[a], tws[b], nci_of(c, d)) for d in (0, 1)]
                             for c in (0, 1)] for b in range(4)] for a in range(4)],
                          dtype=np.int64)
    weight_load = np.array([[costs.weight_load(ncos[c], nci_of(c, d)) for d in (0, 1)]
                            for c in (0, 1)], dtype=np.int64)
    uops = np.array([[costs.uops(ncos[c], nci_of(c, d)) for d in (0, 1)] for c in (0, 1)],
                    dtype=np.int64)
    store = np.array([[[costs.store(ths[a], tws[b], ncos[c]) for c in (0, 1)]
                       for b in range(4)] for a in range(4)], dtype=np.int64)
    sizes = np.array([ths, tws, ncos + ncos], dtype=np.int64)
    results = []
    for axis in (-1, split) if split >= 0 else (-1,):
        results.append(int(_compiled_walk()(
            shape.n // cfg.batch, n_co, n_h, n_w, n_ci, t.threads, t.slots, t.inp_resident,
            t.wgt_resident, t.reload_weights, t.threads > 1 and t.acc_banks > 1, beside,
            start == "zero", weights, shape.gemm_steps(cfg), costs._fill, ALU_FILL, sizes,
            input_load, weight_load, uops, store, give_up is not None,
            0 if give_up is None else give_up, axis, costs.resident_load())))
    if split < 0:
        results.append(-1)
    return results


@functools.cache
def _compiled_walk():
    """:func:`_walk` compiled by numba (on disk beside this file, so once per source), made on
    first use: importing numba takes a quarter of a second, and a run whose programs all come
    from the cache (:mod:`avta.runtime.build_cache`) plans nothing."""
    import numba
    return numba.njit(cache=True, nogil=True)(_walk)


def _walk(n_b, n_co, n_h, n_w, n_ci, threads, slots, inp_resident, wgt_resident,
          reload_weights, banked, beside, zero_start, weights, gemm_left, fill, alu_fill,
          sizes, input_load, weight_load, uops, store, stops, give_up, split, resident_load):
    """The walk of :func:`estimate` over every task in the emitter's order (the module
    docstring); -1 once it passes ``give_up`` (only when ``stops``). ``banked``: two threads
    with their accumulator buffers in different ACC banks (the tail's passes run beside the
    next GEMMs); ``beside``: a tile's MOV start runs beside the last part of the tile before
    (:func:`_starts_beside`); ``zero_start``: the start is ``"zero"``; ``weights``: cycles per
    ACC row of each pass after the start (:func:`tail_weights`); ``split``: the axis (0 rows, 1
    columns) along which the last tile is two (:func:`split_axis`), or −1; ``resident_load``:
    the cycles of the resident rows' LOADs the load stage's first LOADs wait behind
    (:meth:`_Costs.resident_load`). Tables are indexed by
    0 (full) or 1 (border) per axis, and 2 and 3 for the halves of the split axis's border:
    ``sizes[axis, i]`` (th, tw, nco), ``input_load[h, w, co, ci]``, ``weight_load[co, ci]``,
    ``uops[co, ci]`` and ``store[h, w, co]``."""
    n_spatial = n_h * n_w
    n_plain = n_b * n_co * n_spatial                # tiles before the last is split
    n_tasks = (n_plain + (1 if split >= 0 else 0)) * n_ci
    n_pass = len(weights)
    load_free, compute_free, store_free = resident_load, 0, 0
    gemm_done = np.empty(n_tasks, np.int64)         # per task: when it released its input buffer
    store_done = np.empty(n_plain + 1, np.int64)     # per tile: when its store ended
    n_stores = 0
    held = np.full(threads, -1, np.int64)       # the weight chunk each input buffer holds
    resident = np.zeros(n_co * n_ci, np.bool_)
    windows = np.zeros(n_b * n_spatial * n_ci, np.bool_)
    # The tail waiting for GEMMs: the cycles of each pass, the next one's index, the store.
    pending = False
    p_costs = np.zeros(n_pass + 1, np.int64)
    part_costs = np.zeros(n_pass + 1, np.int64)
    p_next = p_store = 0
    j = tile = 0
    # The table index of an axis's first tile: the border's when it is the only one.
    h0, w0, co0 = 1 if n_h == 1 else 0, 1 if n_w == 1 else 0, 1 if n_co == 1 else 0
    for nb in range(n_b):
        for cot in range(n_co):
            c = 1 if cot == n_co - 1 else 0
            nco = sizes[2, c]
            spatial = nb * n_spatial
            for hi in range(n_h):
                a0 = 1 if hi == n_h - 1 else 0
                for wi in range(n_w):
                    b0 = 1 if wi == n_w - 1 else 0
                    plain = ((nb * n_co + cot) * n_h + hi) * n_w + wi
                    n_sub = 2 if split >= 0 and plain == n_plain - 1 else 1
                    for sub in range(n_sub):
                        a, b = a0, b0
                        if n_sub == 2:          # the last tile, as two halves (split_axis)
                            if split == 0:
                                a = 2 + sub
                            else:
                                b = 2 + sub
                        th, tw = sizes[0, a], sizes[1, b]
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
                            steps = th * tw * n_uops
                            gemm = steps + fill
                            ahead = beside and last and j + 1 < n_tasks
                            # The pending passes this GEMM takes (passes_beside), those with a part
                            # of their own (one part is the MOV's with ``ahead``) and those left
                            # to run alone (before the MOV, or after the tile's last GEMM).
                            taken = 0
                            if pending:
                                if last:
                                    taken = n_pass - p_next
                                else:
                                    total = 0
                                    for k in range(p_next, n_pass):
                                        total += p_costs[k]
                                    run = 0
                                    while p_next + taken < n_pass:
                                        step = run + p_costs[p_next + taken]
                                        if taken != 0 and step > gemm and \
                                                step * (n_ci - cit) > total:
                                            break
                                        taken += 1
                                        run = step
                            side = min(taken, n_uops - 1 if ahead else n_uops)
                            n_parts = side
                            for k in range(side):
                                part_costs[k] = p_costs[p_next + k]
                            mov = 0
                            if ahead:
                                # The next tile's sizes: the last tile's second half, else
                                # the next along w, else h, co, batch (the last tile's first
                                # half when it is split).
                                if n_sub == 2 and sub == 0:
                                    na, nw, nc = (3, b0, c) if split == 0 else (a0, 3, c)
                                else:
                                    if wi + 1 < n_w:
                                        na, nw, nc = a0, 1 if wi + 1 == n_w - 1 else 0, c
                                    elif hi + 1 < n_h:
                                        na, nw, nc = 1 if hi + 1 == n_h - 1 else 0, w0, c
                                    elif cot + 1 < n_co:
                                        na, nw, nc = h0, w0, 1 if cot + 1 == n_co - 1 else 0
                                    else:
                                        na, nw, nc = h0, w0, co0
                                    if split >= 0 and plain + 1 == n_plain - 1:
                                        if split == 0:
                                            na = 2
                                        else:
                                            nw = 2
                                mov = sizes[0, na] * sizes[1, nw] * sizes[2, nc] + alu_fill
                                part_costs[n_parts] = mov
                                n_parts += 1
                            # Each part's micro-ops in proportion to its pass (split_parts); a pass
                            # starts when it and the part before it have ended.
                            now = begin
                            tail_end = begin
                            if n_parts == 0:
                                now = begin + gemm
                            else:
                                part_total = 0
                                for k in range(n_parts):
                                    part_total += part_costs[k]
                                cum = bound = 0
                                for k in range(n_parts):
                                    if k == n_parts - 1:
                                        nxt = n_uops
                                    else:
                                        cum += part_costs[k]
                                        nxt = min(n_uops - (n_parts - 1 - k),
                                                  max(bound + 1, (2 * n_uops * cum + part_total)
                                                      // (2 * part_total)))
                                    part = th * tw * (nxt - bound) + fill
                                    bound = nxt
                                    if ahead and k == n_parts - 1:
                                        # Passes no part took run alone, then the MOV waits for
                                        # the store that frees its buffer.
                                        for q in range(p_next + side, p_next + taken):
                                            now += p_costs[q]
                                        tail_end = now
                                        if pending and p_next + taken == n_pass:
                                            store_free = max(store_free, tail_end) + p_store
                                            store_done[n_stores] = store_free
                                            n_stores += 1
                                            pending = False
                                        if tile + 1 >= slots:
                                            now = max(now, store_done[tile + 1 - slots])
                                            now += max(part, mov)
                                        elif zero_start:    # the buffer's first tile: a reset GEMM
                                            now += mov + part
                                        else:
                                            now += max(part, mov)
                                    else:
                                        tail_end = now + part_costs[k]
                                        now += max(part_costs[k], part)
                            compute_free = now
                            if pending:
                                if last and not ahead:      # left over: run after the last GEMM
                                    for q in range(p_next + side, p_next + taken):
                                        compute_free += p_costs[q]
                                    if taken > side:
                                        tail_end = compute_free
                                    p_next += taken
                                else:
                                    p_next += side if not ahead else taken
                                if p_next == n_pass:
                                    store_free = max(store_free, tail_end) + p_store
                                    store_done[n_stores] = store_free
                                    n_stores += 1
                                    pending = False
                            gemm_done[j] = compute_free
                            gemm_left -= steps
                            if last:
                                if pending:     # passes of the previous tile no GEMM took run alone
                                    for q in range(p_next, n_pass):
                                        compute_free += p_costs[q]
                                    store_free = max(store_free, compute_free) + p_store
                                    store_done[n_stores] = store_free
                                    n_stores += 1
                                pending = True
                                p_next, p_store = 0, store[a, b, c]
                                for k in range(n_pass):
                                    p_costs[k] = th * tw * nco * weights[k] + alu_fill
                                # No passes (no requantization) or no buffer in another ACC bank:
                                # stored now.
                                if n_pass == 0 or not banked:
                                    for k in range(n_pass):
                                        compute_free += p_costs[k]
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
        for k in range(p_next, n_pass):
            compute_free += p_costs[k]
        store_free = max(store_free, compute_free) + p_store
    return store_free
