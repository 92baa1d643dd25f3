"""``avta profile NETWORK -o DIR``: where a network's cycles go, as pictures and a table.

Runs NETWORK (as in ``avta run``: a builder's name or a network YAML) on fsim or tsim with
per-stage activity recorded (:mod:`avta.sim.activity`) and writes into DIR the timeline and
roofline charts (SVG, PNG), the per-layer table (``layers.csv``, ``profile.json``) and
``report.html``, which embeds everything it shows. fsim's cycles and activity are estimates.
``--image IMG --insn-addr A --insn-count N`` profiles a raw program image instead (loaded at
DRAM address 0, as for ``avta exec``) as one layer without MACs. Exit status 0, 2 for bad input. docs/cli.md has the options.
"""

import math
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
    from avta.sim.targets import load_network, make_device
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UserError(f"-o {out}: exists and is not a directory")
    cfg = load_config(args.config)
    if args.image is not None or args.network is None:
        return _profile_image(cfg, args, out)
    if args.insn_addr is not None or args.insn_count is not None:
        raise UserError("--insn-addr and --insn-count go with --image")
    from avta.sim.energy import load_table
    from avta.sim.energy.report import resolve_clock
    from avta.sim.profile.report import energy_section
    table, clock = load_table(args.tech), resolve_clock(cfg, args.clock)
    graph = load_network(args.network, args.input_size, args.seed, cfg,
                         timing_only=args.timing_only)
    x = random_input(graph, seed=args.seed)
    device = make_device(cfg, args.target, dram_bytes(cfg, graph), activity=True,
                         timing_only=args.timing_only)
    with progress(len(graph.topological()), f"{graph.name} on {cfg.name} ({args.target})",
                  unit="layer") as bar:
        def step(i, n, node):
            bar.update(i - bar.n)
            bar.set_postfix_str(f"{node.name} ({node.op})")
        result = profile_network(device, graph, x, target=args.target, progress=step)
        bar.update(len(result.run.layers) - bar.n)
    energy = energy_section(cfg, result.run, table, clock)
    try:
        paths = write_profile(result, out, energy=energy)
    except OSError as error:
        raise UserError(f"-o {out}: {error}") from None
    return _summary(result, cfg, args, paths, out, graph.name, energy)


def _profile_image(cfg, args, out):
    """A raw program image (as for ``avta exec``) profiled as one layer."""
    from avta.sim.exec.cli import check_program, load_image
    from avta.sim.profile import profile_program
    from avta.sim.profile.report import write_profile
    from avta.sim.targets import make_device
    if args.network is not None:
        raise UserError("give NETWORK or --image, not both")
    if args.image is None:
        raise UserError("give NETWORK or --image IMG")
    if args.input_size is not None:
        raise UserError("--input-size is for the built-in networks, not --image")
    if args.insn_count is None:
        raise UserError("--image needs --insn-count")
    addr = args.insn_addr or 0
    check_program(addr, args.insn_count)
    dram = load_image(args.image)
    device = make_device(cfg, args.target, len(dram), activity=True,
                         timing_only=args.timing_only)
    device.backend.write(0, bytes(dram))
    name = Path(args.image).stem
    try:
        result = profile_program(device, addr, args.insn_count, name=name, target=args.target)
    except ValueError as error:
        raise UserError(f"--image {args.image}: {error}") from None
    try:
        paths = write_profile(result, out)
    except OSError as error:
        raise UserError(f"-o {out}: {error}") from None
    return _summary(result, cfg, args, paths, out, name)


def _summary(result, cfg, args, paths, out, name, energy=None):
    total = result.run.total
    estimate = " (fsim estimates)" if result.timeline.estimated else ""
    print(f"{name} on {cfg.name} ({cfg.shape_name}, AXI {cfg.axi_data_bits}), "
          f"{args.target}: {total['cycles']:,} cycles{estimate}, "
          f"utilization {total['utilization']:.1%}")
    for lane, states in result.timeline.totals().items():
        cycles = result.timeline.cycles or 1
        print(f"  {lane:8s} " + ", ".join(f"{s} {v / cycles:.1%}" for s, v in states.items()))
    if energy is not None:
        from avta.sim.energy.report import format_summary
        print("  " + format_summary(energy["figures"]["total"], energy["clock"], energy["table"]))
    print(f"wrote {paths['html']} (and the charts, layers.csv, profile.json in {out})")
    return 0


def cmd_profile_diff(args):
    """Handler of ``avta profile-diff A B``: per device layer, how far profile A (usually fsim's
    estimate) is from profile B (usually tsim's); exit 1 when a layer is outside the tolerances."""
    from avta.sim.profile.compare import (DEFAULT_CYCLE_TOLERANCE, DEFAULT_SHARE_TOLERANCE,
                                          compare_profiles, load_record)
    if args.cycle_tolerance is None:
        args.cycle_tolerance = DEFAULT_CYCLE_TOLERANCE
    if args.share_tolerance is None:
        args.share_tolerance = DEFAULT_SHARE_TOLERANCE
    for option, value in (("--cycle-tolerance", args.cycle_tolerance),
                          ("--share-tolerance", args.share_tolerance)):
        if not 0 <= value < math.inf:
            raise UserError(f"{option} {value:g}: give a tolerance of 0 or more")
    records = []
    for path in (args.a, args.b):
        try:
            records.append(load_record(path))
        except (OSError, ValueError) as error:
            raise UserError(f"{path}: not a profile (a directory written by avta profile, or "
                            f"its profile.json): {error}") from None
    try:
        comparison = compare_profiles(*records)
    except (KeyError, ValueError) as error:
        raise UserError(f"cannot compare {args.a} with {args.b}: {error}") from None
    ta, tb = (t or "?" for t in comparison.targets)
    print(f"{'layer':24s} {'cycles ' + ta:>14s} {'cycles ' + tb:>14s} {'error':>8s} "
          f"{'worst share':>12s}")
    outside = {d.name for d in comparison.outside(args.cycle_tolerance, args.share_tolerance)}
    for d in comparison.layers:
        lane, kind = max(((lane, kind) for lane, kinds in d.share_diff.items() for kind in kinds),
                         key=lambda k: abs(d.share_diff[k[0]][k[1]]))
        flag = "  OUTSIDE" if d.name in outside else ""
        print(f"{d.name:24s} {d.cycles[0]:14,} {d.cycles[1]:14,} {d.cycle_error:+8.2%} "
              f"{d.share_diff[lane][kind]:+6.1f} pt {lane} {kind}{flag}")
    a, b = comparison.total_cycles
    print(f"{'total':24s} {a:14,} {b:14,} {comparison.total_error:+8.2%}")
    print(f"worst layer: cycles {comparison.worst_cycle_error():.2%} (tolerance "
          f"{args.cycle_tolerance:.1%}), share {comparison.worst_share():.1f} pt (tolerance "
          f"{args.share_tolerance:.1f} pt); {len(outside)} of {len(comparison.layers)} layers "
          f"outside")
    return 1 if outside else 0
