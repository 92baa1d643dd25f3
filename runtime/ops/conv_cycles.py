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

from avta.isa.costs import ALU_FILL, gemm_fill, load_cycles, store_cycles

__all__ = ["estimate", "lower_bound", "TAIL_STEPS", "STARTS"]
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
            sh, t = self.shape, self.t
            if tw == sh.ow and th * tw == t.acc_pitch:
                cycles = store_cycles(self.cfg, nco, th * sh.ow)
            else:
                cycles = nco * store_cycles(self.cfg, th, tw)
            self._cache[key] = cycles
        return self._cache[key]


def _tasks(cfg, shape, t):
    """(tile index, spatial tile index, th, tw, nco, cot, cit, nci, first, last) in the
    emitter's order."""
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    n_ci = shape.input_chunks(cfg, t.tci)
    n_spatial = _ceil(shape.oh, t.th) * _ceil(shape.ow, t.tw)
    tile = 0
    for nb in range(shape.n // cfg.batch):
        for cot in range(_ceil(cob, t.tco)):
            nco = min(t.tco, cob - cot * t.tco)
            spatial = nb * n_spatial
            for oh0 in range(0, shape.oh, t.th):
                th = min(t.th, shape.oh - oh0)
                for ow0 in range(0, shape.ow, t.tw):
                    tw = min(t.tw, shape.ow - ow0)
                    for cit in range(n_ci):
                        nci = nco if shape.depthwise else min(t.tci, cib - cit * t.tci)
                        yield (tile, spatial, th, tw, nco, cot, cit, nci, cit == 0,
                               cit == n_ci - 1)
                    tile += 1
                    spatial += 1


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


def _beside(passes, pass_cycles, part_cycles):
    """``(start to the end of the last pass, start to the end of the last part)`` of a GEMM in
    parts with one pass before each of the first ``passes`` parts: the compute stage starts a
    pass when the pass and the part before it have ended, and a part beside the pass before
    it."""
    step = max(pass_cycles, part_cycles)
    if not passes:
        return 0, part_cycles
    return (passes - 1) * step + pass_cycles, (passes - 1) * step + step


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
    first_load = costs.input_load(th, tw, nci) + costs.weight_load(nco, nci)
    last_th, last_tw = shape.oh - (_ceil(shape.oh, t.th) - 1) * t.th, \
        shape.ow - (_ceil(shape.ow, t.tw) - 1) * t.tw
    last_store = costs.store(last_th, last_tw, cob - (_ceil(cob, t.tco) - 1) * t.tco)
    # With two threads the tail after the accumulator start may run beside the GEMMs, and a
    # MOV start beside them too: then the compute stage takes at least the longer of its GEMMs
    # and its ALU instructions (each runs one at a time).
    compute = gemm + tasks * gemm_fill(cfg)
    if _starts_beside(t, start):
        alu = tail_steps * (rows + tiles * ALU_FILL)
        return first_load + max(compute, alu) + last_store
    passes = 1 if t.threads > 1 and t.acc_banks > 1 else tail_steps
    compute += passes * (rows + tiles * ALU_FILL)
    return first_load + compute - costs.alu_pass(th, tw, nco) + last_store


def estimate(cfg, shape, t, *, tail_steps=TAIL_STEPS, start="bias", give_up=None):
    """Estimated cycles of ``shape`` under tiling ``t`` (a :class:`Conv2dTiling`), or ``None``
    as soon as the estimate passes ``give_up`` (the planner's best so far). ``start``: how the
    accumulators start (:data:`STARTS`)."""
    costs = _Costs(cfg, shape, t, tail_steps)
    threads = t.threads
    beside = _starts_beside(t, start)
    tasks = list(_tasks(cfg, shape, t))
    gemm_left = shape.gemm_steps(cfg)                                    # steps still to run
    load_free = compute_free = store_free = 0
    gemm_done = []            # per task: when its GEMM released the input buffer
    store_done = []           # per tile: when its store released the accumulator buffer
    held = [None] * threads   # the weight chunk each input buffer holds (weights per task)
    resident, windows = set(), set()
    pending = None            # the tail waiting for GEMMs: [passes left, pass cycles, store]

    def finish_tail(done):
        nonlocal store_free
        store_free = max(store_free, done) + pending[2]
        store_done.append(store_free)

    for j, (tile, spatial, th, tw, nco, cot, cit, nci, first, last) in enumerate(tasks):
        # Load stage.
        load_start = load_free if j < threads else max(load_free, gemm_done[j - threads])
        cycles = 0
        if not t.inp_resident or (spatial, cit) not in windows:
            windows.add((spatial, cit))
            cycles += costs.input_load(th, tw, nci)
        v, chunk = j % threads, (cot, cit)
        if t.wgt_resident:
            if chunk not in resident:
                resident.add(chunk)
                cycles += costs.weight_load(nco, nci)
        elif t.reload_weights or held[v] != chunk:
            held[v] = chunk
            cycles += costs.weight_load(nco, nci)
        load_free = load_start + cycles
        # Compute stage.
        if first and (tile == 0 or not beside):
            begin = compute_free if tile < t.slots else max(compute_free,
                                                            store_done[tile - t.slots])
            compute_free = begin + costs.alu_pass(th, tw, nco)
        begin = max(compute_free, load_free)
        gemm, n_uops = costs.gemm(th, tw, nco, nci), costs.uops(nco, nci)
        compute_free = begin + gemm
        # With ``beside`` the next tile's MOV start runs beside the last part of this tile's
        # last GEMM, once the store that frees its buffer is done; the pending passes take
        # the parts before it, and those no part takes run just before it.
        ahead = tasks[j + 1] if beside and last and j + 1 < len(tasks) else None
        fill = gemm_fill(cfg)
        if ahead is not None:
            # The pending passes take the parts before the MOV (those no part takes run just
            # before it), each part a GEMM with its own fill.
            side = min(pending[0], n_uops - 1) if pending else 0
            part = (gemm + side * fill) // (side + 1)
            tail, parts_end = _beside(side, pending[1] if pending else 0, part)
            done = begin + (parts_end if side else 0)
            if pending:
                done = max(done, begin + tail) + (pending[0] - side) * pending[1]
                finish_tail(done)
                pending = None
            nxt, mov = ahead[0], costs.alu_pass(*ahead[2:5])
            if nxt >= t.slots:
                done = max(done, store_done[nxt - t.slots])
                compute_free = done + max(part, mov)
            elif start == "zero":    # the buffer's first tile: a reset GEMM, not beside
                compute_free = done + mov + part
            else:
                compute_free = done + max(part, mov)
        elif pending:
            parts = min(pending[0], n_uops)
            tail, compute_free = _beside(parts, pending[1], (gemm + (parts - 1) * fill) // parts)
            tail, compute_free = begin + tail, begin + compute_free
            pending[0] -= parts
            if not pending[0]:
                finish_tail(tail)
                pending = None
        gemm_done.append(compute_free)
        gemm_left -= th * tw * costs.uops(nco, nci)
        if last:
            if pending:             # passes of the previous tile no GEMM took run alone
                compute_free += pending[0] * pending[1]
                finish_tail(compute_free)
            pending = [tail_steps - 1, costs.alu_pass(th, tw, nco), costs.store(th, tw, nco)]
            # No passes (no requantization) or no buffer in another ACC bank: stored now.
            if not pending[0] or threads == 1 or t.acc_banks == 1:
                compute_free += pending[0] * pending[1]
                finish_tail(compute_free)
                pending = None
        if give_up is not None and max(compute_free + gemm_left, store_free) > give_up:
            return None
    if pending:
        compute_free += pending[0] * pending[1]
        finish_tail(compute_free)
    return store_free
