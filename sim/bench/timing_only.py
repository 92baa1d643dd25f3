"""``avta bench timing-only``: a network's ``avta run`` on fsim bit-exact and timing-only, side
by side in one process, with the cycles of every layer compared.

Each mode runs what ``avta run NETWORK --target fsim [--timing-only]`` runs after its imports:
the network loaded (built, calibrated; timing-only: its weights zero, the biases and shifts read
back, :func:`avta.runtime.net.builders.timing_graph`), its programs built and run on a fresh fsim device, and
in the bit-exact mode the output checked against the numpy reference. Before each timed run the
memory of this process is emptied (plans, programs read back), so each is a fresh command's;
the disk caches (programs, calibration, :mod:`avta.runtime.build_cache`) are as a first run
left them: the first, untimed run fills them, as any earlier command would have. The figure is
the bit-exact run's time over the timing-only run's (the goal: 20x on ResNet-18 at 224 on
``default``), and the cycles must be identical layer for layer. Times are CPU seconds of this
process (``time.process_time``): the machine may be shared, and other work then stretches wall
time but not these.

The timing-only runs use fsim's compiled scheduler (:mod:`avta.sim.fsim.compiled`) and the
bit-exact runs its compiled data interpreter (:mod:`avta.sim.fsim.compiled_exact`), both loaded
before the timing starts, as in a process that runs many programs (a sweep worker); loading them
takes a one-off share of a second, printed apart. A single ``avta run`` runs in Python until
loading the compiled code pays (:data:`~avta.sim.fsim.compiled.BREAK_EVEN`,
:data:`~avta.sim.fsim.compiled_exact.BREAK_EVEN_SECONDS`).
"""

import time

import numpy as np

__all__ = ["timing_only_speedup", "run_once"]

#: The timed runs of each mode; the best counts (the machine is shared).
REPEATS = 3


def _forget_in_process():
    """Empty what this process remembers of earlier runs (a fresh command starts without)."""
    from avta.runtime import build_cache
    build_cache.clear_memory()


def run_once(cfg, network, input_size=None, seed=0, *, timing_only):
    """One ``avta run`` of ``network`` on fsim: ``(seconds by phase, per-layer cycles, whether
    the output matched the reference or None)``. Phases: ``load`` (build and calibrate),
    ``programs`` (build programs, upload weights), ``device`` (fsim's runs), ``check`` (the
    numpy reference and the comparison; bit-exact only)."""
    from avta.runtime.net import random_input, run_reference
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim.targets import load_network, make_device

    from .timed import run_seconds
    seconds = {}
    start = time.process_time()
    graph = load_network(network, input_size, seed, cfg, timing_only=timing_only)
    x = random_input(graph, seed=seed)
    seconds["load"] = time.process_time() - start
    device = make_device(cfg, "fsim", dram_bytes(cfg, graph), timing_only=timing_only)
    start = time.process_time()
    with run_seconds(device.backend, time.process_time) as spent:
        run = run_network(device, graph, x)
    seconds["device"] = sum(spent)
    seconds["programs"] = time.process_time() - start - seconds["device"]
    match = None
    if not timing_only:
        start = time.process_time()
        reference = run_reference(graph, x, keep=False)
        match = all(np.array_equal(run.outputs[name], reference[name]) for name in graph.outputs)
        seconds["check"] = time.process_time() - start
    seconds["total"] = sum(seconds.values())
    cycles = [(layer.name, layer.cycles) for layer in run.layers]
    return seconds, cycles, match


def _best(cfg, network, input_size, timing_only, repeats):
    best = None
    for _ in range(repeats):
        _forget_in_process()
        figures = run_once(cfg, network, input_size, timing_only=timing_only)
        if best is None or figures[0]["total"] < best[0]["total"]:
            best = figures
    return best


def timing_only_speedup(cfg, network="resnet18", input_size=None, *, repeats=REPEATS):
    """Print both modes' times by phase, the ratio and whether the cycles are identical; exit
    status 0 when they are and the bit-exact output matched."""
    from avta.sim.fsim import compiled, compiled_exact
    _forget_in_process()
    start = time.process_time()
    compiled.load()
    compiled_exact.load()
    loading = time.process_time() - start
    start = time.process_time()
    run_once(cfg, network, input_size, timing_only=True)
    first = time.process_time() - start
    exact = _best(cfg, network, input_size, False, repeats)
    fast = _best(cfg, network, input_size, True, repeats)
    size = 224 if input_size is None else input_size
    print(f"{network} {size}x{size} on {cfg.name!r} ({cfg.shape_name}), fsim, CPU seconds, best "
          f"of {repeats}; disk caches warm (the first run, timing-only, took {first:.2f} s; "
          f"loading the compiled scheduler and data interpreter, once a process, "
          f"{loading:.2f} s)")
    print(f"{'mode':<12}{'load':>9}{'programs':>10}{'device':>9}{'check':>9}{'total':>9}")
    for name, (seconds, _, _) in (("bit-exact", exact), ("timing-only", fast)):
        print(f"{name:<12}{seconds['load']:>9.3f}{seconds['programs']:>10.3f}"
              f"{seconds['device']:>9.3f}{seconds.get('check', 0.0):>9.3f}"
              f"{seconds['total']:>9.3f}")
    same = exact[1] == fast[1]
    total = sum(c for _, c in fast[1])
    print(f"timing-only is {exact[0]['total'] / fast[0]['total']:.1f}x faster (device runs "
          f"alone {exact[0]['device'] / fast[0]['device']:.1f}x); cycles "
          f"{'identical' if same else 'DIFFER'} on all {len(fast[1])} layers ({total:,}); "
          f"bit-exact output {'matches' if exact[2] else 'DIFFERS from'} the reference")
    if not same:
        for (name, a), (_, b) in zip(exact[1], fast[1]):
            if a != b:
                print(f"  {name}: bit-exact {a:,}, timing-only {b:,}")
    return 0 if same and exact[2] else 1
