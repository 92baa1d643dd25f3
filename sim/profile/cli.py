"""``avta profile NETWORK -o DIR``: where a network's cycles go, as pictures and a table.

Runs NETWORK (as in ``avta run``: a builder's name or a network YAML) on fsim or tsim with
per-stage activity recorded (:mod:`avta.sim.activity`) and writes into DIR the timeline and
roofline charts (SVG, PNG), the per-layer table (``layers.csv``, ``profile.json``) and
``report.html``, which embeds everything it shows. fsim's cycles and activity are estimates.
Exit status 0, 2 for bad input. docs/cli.md has the options.
"""

from pathlib import Path

from avta.errors import UserError
from avta.isa.config import load_config
from avta.progress import progress

__all__ = ["cmd_profile"]


def cmd_profile(args):
    """Handler of ``avta profile``."""
    from avta.runtime.net import random_input
    from avta.runtime.net.executor import dram_bytes
    from avta.sim.profile import profile_network
    from avta.sim.profile.report import write_profile
    from avta.sim.run_cmd import load_network, make_device
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UserError(f"-o {out}: exists and is not a directory")
    cfg = load_config(args.config)
    graph = load_network(args.network, args.input_size, args.seed)
    x = random_input(graph, seed=args.seed)
    device = make_device(cfg, args.target, dram_bytes(cfg, graph), activity=True)
    with progress(len(graph.topological()), f"{graph.name} on {cfg.name} ({args.target})",
                  unit="layer") as bar:
        def step(i, n, node):
            bar.update(i - bar.n)
            bar.set_postfix_str(f"{node.name} ({node.op})")
        result = profile_network(device, graph, x, target=args.target, progress=step)
        bar.update(len(result.run.layers) - bar.n)
    try:
        paths = write_profile(result, out)
    except OSError as error:
        raise UserError(f"-o {out}: {error}") from None
    total = result.run.total
    estimate = " (fsim estimates)" if result.timeline.estimated else ""
    print(f"{graph.name} on {cfg.name} ({cfg.shape_name}, AXI {cfg.axi_data_bits}), "
          f"{args.target}: {total['cycles']:,} cycles{estimate}, "
          f"utilization {total['utilization']:.1%}")
    for lane, states in result.timeline.totals().items():
        cycles = result.timeline.cycles or 1
        print(f"  {lane:8s} " + ", ".join(f"{s} {v / cycles:.1%}" for s, v in states.items()))
    print(f"wrote {paths['html']} (and the charts, layers.csv, profile.json in {out})")
    return 0
