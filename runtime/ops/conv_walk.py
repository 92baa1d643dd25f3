"""The walk of the planner's cycle estimate (:func:`.conv_cycles.estimate`) over every task
of a conv2d tiling, compiled by numba: the three stages scheduled task by task as the module
docstring of :mod:`.conv_cycles` says, every cost read from tables made there
(:func:`.conv_cycles.walk_tables`)."""

import functools

import numpy as np

__all__ = ["walk", "compiled_walk"]


@functools.cache
def compiled_walk():
    """:func:`walk` compiled by numba (on disk beside this file, so once per source), made on
    first use: importing numba takes a quarter of a second, and a run whose programs all come
    from the cache (:mod:`avta.runtime.build_cache`) plans nothing."""
    import numba
    return numba.njit(cache=True, nogil=True)(walk)


def walk(n_b, n_co, n_h, n_w, n_ci, threads, slots, inp_resident, wgt_resident,
         reload_weights, banked, beside, zero_start, gemm_start, weights, blocks,
         gemm_left, fill, alu_fill,
         sizes, input_load, weight_load, uops, store, stops, give_up, split, resident_load,
         piece, piece_load, rest_load, last_piece, last_piece_load, last_rest_load,
         shortcut_load, read_ahead, load_window):
    """The walk of :func:`.conv_cycles.estimate` over every task in the emitter's order (the
    docstring of :mod:`.conv_cycles`); -1 once it passes ``give_up`` (only when ``stops``).
    ``banked``: two threads with their accumulator buffers in different ACC banks (the tail's
    passes run beside the next GEMMs); ``beside``: a tile's MOV start runs beside the last part
    of the tile before (:func:`.conv_cycles._starts_beside`); ``zero_start``: the start is
    ``"zero"``; ``gemm_start``: the start is ``"gemm"``, two GEMMs (the reset and the bias
    step), each beside the previous tile's next pending pass (:func:`.conv_cycles.start_cycles`
    when none is left); ``weights``:
    cycles per ACC row of each pass after the start
    (:func:`.conv_passes.tail_weights`), ``blocks`` its cycles per output block
    (:func:`.conv_passes.tail_blocks`); ``split``: the axis (0 rows, 1 columns) along which
    the last tile is two (:func:`.conv_cycles.split_axis`), or −1; ``resident_load``: the
    cycles of the resident rows' LOADs the load stage's first LOADs wait behind
    (:func:`.conv_cycles._resident_loads`). ``piece``: the first task's first piece, in weight
    blocks (:func:`.conv_first.first_piece`; 0: one piece), whose LOAD takes ``piece_load``
    cycles and the other blocks' ``rest_load``; ``last_piece``, ``last_piece_load`` and
    ``last_rest_load`` the same of the last task, when it loads its weights. Tables are indexed by 0 (full) or 1 (border) per
    axis, and 2 and 3 for the halves of the split axis's border:
    ``sizes[axis, i]`` (th, tw, nco), ``input_load[h, w, co, ci]``, ``weight_load[co, ci]``,
    ``uops[co, ci]``, ``store[h, w, co]`` and ``shortcut_load[h, w, co]``: the compute
    stage's LOADs of a fused residual add's shortcut rows after a tile's last GEMM (zeros
    without one). ``read_ahead``: cycles a load-stage LOAD saves when it follows another without
    the stage waiting (read-ahead, :func:`avta.isa.costs.load_ahead`)."""
    n_spatial = n_h * n_w
    n_plain = n_b * n_co * n_spatial                # tiles before the last is split
    n_tasks = (n_plain + (1 if split >= 0 else 0)) * n_ci
    n_pass = len(weights)
    load_free, compute_free, store_free = resident_load, 0, 0
    piece_ready = p_load = r_load = 0               # when a task's first piece is loaded
    gemm_done = np.empty(n_tasks, np.int64)         # per task: when it released its input buffer
    store_done = np.empty(n_plain + 1, np.int64)     # per tile: when its store ended
    n_stores = 0
    streaming = False           # the last task loaded: the next LOAD may read ahead
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
                            load_start = load_free if j < load_window else max(
                                load_free, gemm_done[j - load_window])
                            cycles = 0
                            loads = 0
                            loaded = False
                            window = spatial * n_ci + cit
                            if not inp_resident:
                                cycles += input_load[a, b, c, d]
                                loads += 1
                            elif not windows[window]:
                                # A resident window is the whole tile's, split or not.
                                windows[window] = True
                                cycles += input_load[a0, b0, c, d]
                                loads += 1
                            v, chunk = j % threads, cot * n_ci + cit
                            if wgt_resident:
                                if not resident[chunk]:
                                    resident[chunk] = True
                                    cycles += weight_load[c, d]
                                    loaded = True
                            elif reload_weights or held[v] != chunk:
                                held[v] = chunk
                                cycles += weight_load[c, d]
                                loaded = True
                            if loaded:
                                loads += 1
                            if loads > 0:
                                # Read-ahead: every LOAD after another without a wait.
                                after = streaming and load_start == load_free
                                cycles -= read_ahead * (loads - 1 + (1 if after else 0))
                            streaming = loads > 0
                            load_free = load_start + cycles
                            p = 0
                            if loaded and j == 0 and piece > 0:
                                p, p_load, r_load = piece, piece_load, rest_load
                            elif loaded and j == n_tasks - 1 and last_piece > 0:
                                p, p_load, r_load = last_piece, last_piece_load, last_rest_load
                            if p > 0:
                                # The first piece and the window, then the other blocks.
                                piece_ready = load_free - weight_load[c, d] + p_load
                                load_free = piece_ready + r_load
                            # Compute stage.
                            if cit == 0 and (tile == 0 or not beside):
                                begin = compute_free if tile < slots else max(
                                    compute_free, store_done[tile - slots])
                                if gemm_start:
                                    # The reset and the bias step, each beside the next
                                    # pending pass of the tile before (the emitter's
                                    # begin_tile).
                                    now = begin
                                    for _ in range(2):
                                        part = th * tw * nco + fill
                                        if pending and p_next < n_pass:
                                            tail_end = now + p_costs[p_next]
                                            now += max(p_costs[p_next], part)
                                            p_next += 1
                                            if p_next == n_pass:
                                                store_free = max(store_free, tail_end) + p_store
                                                store_done[n_stores] = store_free
                                                n_stores += 1
                                                pending = False
                                        else:
                                            now += part
                                    compute_free = now
                                else:
                                    compute_free = begin + th * tw * nco + alu_fill
                            n_uops = uops[c, d]
                            if p > 0:
                                compute_free = max(compute_free, piece_ready) + \
                                    th * tw * p + fill
                                gemm_left -= th * tw * p
                                n_uops -= p
                            begin = max(compute_free, load_free)
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
                                compute_free += shortcut_load[a, b, c]
                                pending = True
                                p_next, p_store = 0, store[a, b, c]
                                for k in range(n_pass):
                                    p_costs[k] = th * tw * nco * weights[k] + \
                                        nco * blocks[k] + alu_fill
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
