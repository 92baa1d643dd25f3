"""What recording activity costs: a whole network on tsim, with and without it.

The design with activity ports and the harness's recorder (``sim/tsim/activity.h``) against the
plain design, on the same network, alternating, so that a noisy machine's drift falls on both.
Only the tsim runs are timed (building the programs, the numpy reference and Verilator builds
are not), and both runs must give the same cycles.
"""

from .timed import run_seconds

__all__ = ["profile_overhead"]


def _timed_network(cfg, graph, x, *, activity):
    """``(cycles, seconds in tsim's runs)`` of ``graph`` on a fresh tsim device."""
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim.targets import make_device
    device = make_device(cfg, "tsim", dram_bytes(cfg, graph), activity=activity)
    with run_seconds(device.backend) as spent:
        net = run_network(device, graph, x)
    return net.total["cycles"], sum(spent)


def profile_overhead(cfg, *, network="resnet18", input_size=224, rounds=2):
    """Print and return the plain and recording runs' seconds (``rounds`` of each, alternating)
    and the overhead of recording."""
    from avta.runtime.net import random_input
    from avta.sim.targets import load_network
    from avta.sim.tsim.build import build_library
    from avta.sim.design_cache import cached_top_verilog
    graph = load_network(network, input_size, 0)
    x = random_input(graph, seed=0)
    for activity in (False, True):              # builds are not timed
        build_library(cached_top_verilog(cfg, activity=activity), data_bits=cfg.axi_data_bits,
                      activity=activity)
    seconds = {False: [], True: []}
    cycles = set()
    for _ in range(rounds):
        for activity in (False, True):
            c, s = _timed_network(cfg, graph, x, activity=activity)
            cycles.add(c)
            seconds[activity].append(s)
    if len(cycles) != 1:
        raise RuntimeError(f"the runs with and without activity differ in cycles: {cycles}")
    plain, recorded = sum(seconds[False]), sum(seconds[True])
    (total,) = cycles
    print(f"profile-overhead on {cfg.name} ({cfg.shape_name}): {network} {input_size}x"
          f"{input_size}, {total:,} cycles, {rounds} runs each, alternating")
    print("  plain      " + ", ".join(f"{s:.2f} s" for s in seconds[False])
          + f" ({total * rounds / plain:,.0f} cycles/s)")
    print("  recording  " + ", ".join(f"{s:.2f} s" for s in seconds[True])
          + f" ({total * rounds / recorded:,.0f} cycles/s)")
    print(f"  recording costs {recorded / plain - 1:+.1%} (machines are noisy: read, do not "
          f"assert)")
    return {"cycles": total, "plain": seconds[False], "recording": seconds[True]}
