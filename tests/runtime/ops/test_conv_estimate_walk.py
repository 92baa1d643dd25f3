"""The planner's compiled walk (conv_walk.walk, numba) against the same walk in plain
Python, written with the emitter's rules (conv_passes.passes_beside, split_parts): equal on
every tiling the planner considers for layers of ResNet-18, ResNet-50 and MobileNet shapes
(depthwise too), on five configurations, for every accumulator start, for upstream's tail and a
per-channel one, with and without giving up."""

import pytest

from avta.isa.config import load_config
from avta.isa.costs import ALU_FILL, GEMM_DETACH, load_ahead, row_cycles
from avta.runtime.ops.conv_cycles import (STARTS, _Costs, _starts_beside, bias_step_loads,
                                          estimate, halves, lower_bound, split_axis)
from avta.runtime.ops.conv_passes import passes_beside, split_parts, tail_blocks, tail_weights
from avta.runtime.ops.conv_first import first_piece, piece_loads
from avta.runtime.ops.conv_plan import Conv2dShape, _fitting, slot_counts
from avta.runtime.pipeline import load_window


def _ceil(a, b):
    return -(-a // b)


def _tasks(cfg, shape, t, split=-1):
    """(tile index, spatial tile index, th, tw, nco, cot, cit, nci, first, last, window th)
    in the emitter's order; with ``split`` 0 or 1 the last tile as two halves along its rows
    or columns (window th: the rows of the tile whose input window a resident one is, the
    whole last tile's for both halves)."""
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    n_ci = shape.input_chunks(cfg, t.tci)
    n_spatial = _ceil(shape.oh, t.th) * _ceil(shape.ow, t.tw)
    tiles = []
    for nb in range(shape.n // cfg.batch):
        for cot in range(_ceil(cob, t.tco)):
            nco = min(t.tco, cob - cot * t.tco)
            spatial = nb * n_spatial
            for oh0 in range(0, shape.oh, t.th):
                th = min(t.th, shape.oh - oh0)
                for ow0 in range(0, shape.ow, t.tw):
                    tiles.append((spatial, th, min(t.tw, shape.ow - ow0), nco, cot, th))
                    spatial += 1
    if split >= 0:
        spatial, th, tw, nco, cot, _ = tiles.pop()
        for half in halves(th if split == 0 else tw):
            tiles.append((spatial, half, tw, nco, cot, th) if split == 0 else
                         (spatial, th, half, nco, cot, th))
    for tile, (spatial, th, tw, nco, cot, window_th) in enumerate(tiles):
        for cit in range(n_ci):
            nci = nco if shape.depthwise else min(t.tci, cib - cit * t.tci)
            yield (tile, spatial, th, tw, nco, cot, cit, nci, cit == 0, cit == n_ci - 1,
                   window_th)


def _plain_walk(cfg, shape, t, *, tail_steps, start, give_up):
    """The compiled walk in plain Python, with the emitter's own rules for which passes run
    beside a GEMM (passes_beside) and how the GEMM is split around them (split_parts): the
    best of the last tile whole and split where it may be (split_axis), each with the first
    and the last task in one piece and in two where they may be (first_piece; the last after
    ``threads`` tasks)."""
    n_h, n_w = _ceil(shape.oh, t.th), _ceil(shape.ow, t.tw)
    axis = split_axis(t, shape.oh - (n_h - 1) * t.th, shape.ow - (n_w - 1) * t.tw,
                      len(tail_weights(tail_steps)))
    results = []
    for split in (-1, axis) if axis >= 0 else (-1,):
        tasks = list(_tasks(cfg, shape, t, split))
        first, last = (first_piece(cfg, shape, t.threads, *tasks[k][2:5], tasks[k][7])
                       for k in (0, -1))
        last = last if len(tasks) > t.threads else 0
        for p1 in {0, first}:
            for p2 in {0, last}:
                r = _one_walk(cfg, shape, t, tail_steps, start, give_up, split, p1, p2)
                if r is not None:
                    results.append(r)
    return min(results) if results else None


def _one_walk(cfg, shape, t, tail_steps, start, give_up, split, first_piece, last_piece):
    """One walk, the last tile split along ``split`` (or whole, −1), the first task's first
    ``first_piece`` weight blocks loaded and computed first (0: the task in one piece), and the
    last task's first ``last_piece`` when it loads its weights."""
    costs = _Costs(cfg, shape, t, tail_steps)
    weights, blocks = tail_weights(tail_steps), tail_blocks(tail_steps)
    threads = t.threads
    # Load task j waits for the compute of task j - window (the emitter's Pipeline).
    window = load_window(cfg, threads, t.inp_resident and t.wgt_resident and not t.reload_weights)
    beside = _starts_beside(t, start)
    tasks = list(_tasks(cfg, shape, t, split))
    n_ci = shape.input_chunks(cfg, t.tci)
    gemm_left = shape.gemm_steps(cfg)                                    # steps still to run
    # The load stage's first LOADs wait behind the resident rows' on the one read engine.
    load_free = costs.resident_load(start) + bias_step_loads(cfg, shape, start)
    if split >= 0:      # and behind the second part's GEMM micro-ops, in the micro-op LOAD
        load_free += row_cycles(cfg, sum(costs.uops(task[4], task[7]) for task in tasks
                                         if task[0] == tasks[-1][0]), cfg.uop_elem_bytes,
                              cfg.uop.write_rows)
    compute_free, store_free = 0, 0
    gemm_done = []            # per task: when its GEMM released the input buffer
    store_done = []           # per tile: when its store released the accumulator buffer
    held = [None] * threads   # the weight chunk each input buffer holds (weights per task)
    resident, windows = set(), set()
    pending = None            # the tail waiting for GEMMs: [pass cycles left, store]
    fill = GEMM_DETACH        # what follows a GEMM starts while it drains
    read_ahead, streaming = load_ahead(cfg), False

    def finish_tail(done):
        nonlocal store_free, pending
        store_free = max(store_free, done) + pending[1]
        store_done.append(store_free)
        pending = None

    for j, (tile, spatial, th, tw, nco, cot, cit, nci, first, last, window_th) in \
            enumerate(tasks):
        # Load stage.
        load_start = load_free if j < window else max(load_free, gemm_done[j - window])
        cycles, loaded = 0, False
        loads = 0
        if not t.inp_resident:
            cycles += costs.input_load(th, tw, nci)
            loads += 1
        elif (spatial, cit) not in windows:     # a resident window: the whole tile's
            windows.add((spatial, cit))
            cycles += costs.input_load(window_th, tw, nci)
            loads += 1
        v, chunk = j % threads, (cot, cit)
        if t.wgt_resident:
            if chunk not in resident:
                resident.add(chunk)
                cycles += costs.weight_load(nco, nci)
                loaded = True
        elif t.reload_weights or held[v] != chunk:
            held[v] = chunk
            cycles += costs.weight_load(nco, nci)
            loaded = True
        loads += loaded
        if loads:       # read-ahead: every LOAD after another without a wait
            cycles -= read_ahead * (loads - 1 + (streaming and load_start == load_free))
        streaming = loads > 0
        load_free = load_start + cycles
        piece = first_piece if j == 0 else last_piece if j == len(tasks) - 1 else 0
        piece = piece if loaded else 0
        if piece:                   # the first piece and the window, then the other blocks
            piece_load, rest_load = piece_loads(cfg, costs.uops(nco, nci), piece)
            piece_ready = load_free - costs.weight_load(nco, nci) + piece_load
            load_free = piece_ready + rest_load
        # Compute stage.
        if first and (tile == 0 or not beside):
            begin = compute_free if tile < t.slots else max(compute_free,
                                                            store_done[tile - t.slots])
            if start == "gemm":
                # The reset and the bias step, each beside the next pending pass.
                now = begin
                for _ in range(2):
                    part = th * tw * nco + fill
                    if pending and pending[0]:
                        cost = pending[0].pop(0)
                        tail_end = now + cost
                        now += max(cost, part)
                        if not pending[0]:
                            finish_tail(tail_end)
                    else:
                        now += part
                compute_free = now
            else:
                compute_free = begin + costs.start(th, tw, nco, start)
        n_uops = costs.uops(nco, nci)
        if piece:
            compute_free = max(compute_free, piece_ready) + th * tw * piece + fill
            gemm_left -= th * tw * piece
            n_uops -= piece
        begin = max(compute_free, load_free)
        gemm = th * tw * n_uops + fill
        ahead = tasks[j + 1] if beside and last and j + 1 < len(tasks) else None
        left = pending[0] if pending else []
        taken = passes_beside(left, gemm, n_ci - cit) if pending else 0
        side = min(taken, n_uops - 1 if ahead else n_uops)
        part_costs = left[:side] + ([costs.alu_pass(*ahead[2:5])] if ahead else [])
        now = tail_end = begin
        if not part_costs:
            now = begin + gemm
        for k, (lo, hi) in enumerate(split_parts(n_uops, part_costs) if part_costs else []):
            part = th * tw * (hi - lo) + fill
            if ahead and k == len(part_costs) - 1:
                # Passes no part took run alone, then the MOV, once its buffer is stored.
                now += sum(left[side:taken])
                tail_end = now
                if pending:
                    finish_tail(tail_end)
                nxt, mov = ahead[0], part_costs[-1]
                if nxt >= t.slots:
                    now = max(now, store_done[nxt - t.slots]) + max(part, mov)
                elif start == "zero":    # the buffer's first tile: a reset GEMM, not beside
                    now += mov + part
                else:
                    now += max(part, mov)
            else:
                tail_end = now + part_costs[k]
                now += max(part_costs[k], part)
        compute_free = now
        if pending:
            if last:                     # left over: run after the last GEMM
                compute_free += sum(left[side:taken])
                if taken > side:
                    tail_end = compute_free
                pending[0] = left[taken:]
            else:
                pending[0] = left[side:]
            if not pending[0]:
                finish_tail(tail_end)
        gemm_done.append(compute_free)
        gemm_left -= th * tw * n_uops
        if last:
            if pending:             # passes of the previous tile no GEMM took run alone
                compute_free += sum(pending[0])
                finish_tail(compute_free)
            compute_free += costs.shortcut_load(th, tw, nco)    # a fused add's LOADs
            rows = th * tw * nco
            pending = [[rows * w + nco * b + ALU_FILL for w, b in zip(weights, blocks)],
                       costs.store(th, tw, nco)]
            # No passes (no requantization) or no buffer in another ACC bank: stored now.
            if not weights or threads == 1 or t.acc_banks == 1:
                compute_free += sum(pending[0])
                finish_tail(compute_free)
        if give_up is not None and max(compute_free + gemm_left, store_free) > give_up:
            return None
    if pending:
        compute_free += sum(pending[0])
        finish_tail(compute_free)
    return store_free


#: ResNet-18's 3x3 layers (stride 1 and 2) and strided 1x1 at 14 pixels, a ResNet-50
#: bottleneck's 1x1 reduce and expand at 7, MobileNet's depthwise 3x3 (stride 1 and 2), and
#: batches of two: small enough for the plain walk on every tiling of tiny's 4x4 blocks.
SHAPES = [Conv2dShape(1, 64, 14, 14, 64, 3, 3, 1, 1),
          Conv2dShape(1, 64, 14, 14, 128, 3, 3, 1, 2),
          Conv2dShape(1, 64, 14, 14, 128, 1, 1, 0, 2),
          Conv2dShape(1, 128, 7, 7, 32, 1, 1, 0, 1),
          Conv2dShape(1, 32, 7, 7, 128, 1, 1, 0, 1),
          Conv2dShape(1, 64, 14, 14, 64, 3, 3, 1, 1, 0, True),
          Conv2dShape(1, 64, 14, 14, 64, 3, 3, 1, 2, 0, True),
          Conv2dShape(2, 32, 7, 7, 32, 3, 3, 1, 1),
          Conv2dShape(2, 64, 7, 7, 64, 1, 1, 0, 1),
          Conv2dShape(2, 64, 14, 14, 64, 3, 3, 1, 2, 0, True)]
#: tiny's 4x4 blocks make eight times the tasks of default's: two minutes of the plain walk.
CONFIGS = [pytest.param("tiny", marks=pytest.mark.slow), "default", "huge", "batch2", "rect"]


def _name(shape):
    return (f"{shape.n}x{shape.cin}x{shape.h}x{shape.w}-{shape.cout}-k{shape.kh}s{shape.stride}"
            + ("-dw" if shape.depthwise else ""))


#: Upstream's tail (bias MOV, SHR, MIN, MAX), a per-channel one on one ACC read port (SCL,
#: ADD and SHR reading a channel row they hold: a cycle a row and one a block; MIN, MAX), and
#: one with a residual add fused (SHR, MIN, ADD of the shortcut rows, SHR, MIN, MAX; the
#: tiling then holds the shortcut rows).
TAILS = [4, ((1, 1), (1, 1), (1, 1), 1, 1), (1, 1, 2, 1, 1, 1)]


@pytest.mark.parametrize("tail", TAILS, ids=["upstream", "per-channel", "fused-add"])
@pytest.mark.parametrize("threads", [2, 1])
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("shape", SHAPES, ids=_name)
def test_compiled_walk_equals_the_plain_walk(config, shape, threads, tail):
    """Every tiling :func:`_fitting` yields with one thread and with two (then with four
    accumulator buffers too where the configuration allows them), every start: the whole walk,
    and the walk giving up at the planner's best so far in the planner's order (by bound), just
    below and at its own end."""
    cfg = load_config(config)
    if shape.n % cfg.batch or shape.cin % cfg.block_in or shape.cout % cfg.block_out:
        pytest.skip("the shape does not map onto the configuration's blocks")
    fused = tail == TAILS[2]
    if fused and shape.depthwise:
        pytest.skip("a residual add is fused into a plain convolution")
    tilings = list(_fitting(cfg, shape, threads, False, shortcut=fused))
    assert all(t.shortcut == fused for t in tilings)
    assert {t.slots for t in tilings} == set(slot_counts(cfg, threads, fused))
    for start in STARTS:
        def plain(t, give_up=None):
            return _plain_walk(cfg, shape, t, tail_steps=tail, start=start, give_up=give_up)

        def compiled(t, give_up=None):
            return estimate(cfg, shape, t, tail_steps=tail, start=start, give_up=give_up)

        full = {}
        for t in tilings:
            full[t] = plain(t)
            assert compiled(t) == full[t], (t, start)
        best = None
        for t in sorted(tilings, key=lambda t: (
                lower_bound(cfg, shape, t, tail_steps=tail, start=start), full[t])):
            if best is not None:
                assert compiled(t, best) == plain(t, best), (t, start, best)
            best = full[t] if best is None else min(best, full[t])
        for t in tilings[::max(1, len(tilings) // 8)]:
            for give_up in (full[t] - 1, full[t]):
                assert compiled(t, give_up) == plain(t, give_up), (t, start, give_up)
