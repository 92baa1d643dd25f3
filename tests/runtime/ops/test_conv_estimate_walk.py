"""The planner's compiled walk (conv_cycles._walk, numba) against the same walk task by task in
plain Python, written from the module's docstring: equal on every tiling of layers of ResNet and
MobileNet shapes (depthwise too), on four configurations, with and without giving up."""

import pytest

from avta.isa.config import load_config
from avta.runtime.ops.conv_cycles import _Costs, estimate
from avta.runtime.ops.conv_plan import Conv2dShape, _fitting


def _ceil(a, b):
    return -(-a // b)


def _tasks(cfg, shape, t):
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


def _walk(cfg, shape, t, tail_steps, give_up):
    costs = _Costs(cfg, shape, t, tail_steps)
    threads = t.threads
    gemm_left = shape.gemm_steps(cfg)
    load_free = compute_free = store_free = 0
    gemm_done, store_done, held = [], [], [None] * threads
    resident, windows, pending = set(), set(), None
    for j, (tile, spatial, th, tw, nco, cot, cit, nci, first, last) in enumerate(
            _tasks(cfg, shape, t)):
        start = load_free if j < threads else max(load_free, gemm_done[j - threads])
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
        load_free = start + cycles
        if first:
            begin = compute_free if tile < threads else max(compute_free,
                                                            store_done[tile - threads])
            compute_free = begin + costs.alu_pass(th, tw, nco)
        begin = max(compute_free, load_free)
        uops = costs.uops(nco, nci)
        compute_free = begin + th * tw * uops + costs._fill
        if pending:
            parts = min(pending[0], uops)
            beside = parts * pending[1]
            compute_free = max(compute_free, begin + beside)
            pending[0] -= parts
            if not pending[0]:
                store_free = max(store_free, begin + beside) + pending[2]
                store_done.append(store_free)
                pending = None
        gemm_done.append(compute_free)
        gemm_left -= th * tw * uops
        if last:
            if pending:
                compute_free += pending[0] * pending[1]
                store_free = max(store_free, compute_free) + pending[2]
                store_done.append(store_free)
            pending = [tail_steps - 1, costs.alu_pass(th, tw, nco), costs.store(th, tw, nco)]
            if threads == 1 or t.acc_banks == 1:
                compute_free += pending[0] * pending[1]
                store_free = max(store_free, compute_free) + pending[2]
                store_done.append(store_free)
                pending = None
        if give_up is not None and max(compute_free + gemm_left, store_free) > give_up:
            return None
    if pending:
        compute_free += pending[0] * pending[1]
        store_free = max(store_free, compute_free) + pending[2]
    return store_free


SHAPES = [Conv2dShape(1, 64, 28, 28, 64, 3, 3, 1, 1), Conv2dShape(1, 128, 14, 14, 256, 3, 3, 1, 2),
          Conv2dShape(2, 64, 28, 28, 128, 1, 1, 0, 2),
          Conv2dShape(1, 64, 28, 28, 64, 3, 3, 1, 1, 0, True),
          Conv2dShape(1, 128, 14, 14, 128, 3, 3, 1, 2, 0, True)]


@pytest.mark.parametrize("config", ["default", "tiny", "batch2", "wide"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_compiled_walk_equals_the_plain_walk(config, shape):
    cfg = load_config(config)
    if shape.n % cfg.batch or shape.cin % cfg.block_in or shape.cout % cfg.block_out:
        pytest.skip("the shape does not map onto the configuration's blocks")
    tilings = list(_fitting(cfg, shape, 2, 1))[::9][:12]
    assert tilings
    for t in tilings:
        for tail_steps in (1, 4):
            full = _walk(cfg, shape, t, tail_steps, None)
            assert estimate(cfg, shape, t, tail_steps=tail_steps) == full, t
            for give_up in (full - 1, full):
                assert estimate(cfg, shape, t, tail_steps=tail_steps, give_up=give_up) == \
                    _walk(cfg, shape, t, tail_steps, give_up), (t, give_up)
