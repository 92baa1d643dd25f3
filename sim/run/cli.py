"""``avta run NETWORK``: a whole network on fsim or tsim, with a per-layer report.

NETWORK is a builder's name (``resnet18``, ``resnet34``, ``resnet50``, ``mobilenet1.0``; built at
``--input-size`` with seeded weights, :mod:`avta.runtime.net.builders`) or a network YAML
(docs/network-format.md). The input is ``--input X.npy`` (int8, the network's input shape) or a
seeded random one; a network with host steps (an imported model, docs/onnx.md) takes the
model's own input there, e.g. float32, and ``--output Y.npy`` is then the model's own output.
The run (:func:`avta.runtime.net.executor.run_network`) keeps activations in device DRAM; its
output is compared bit for bit with the numpy reference of the same graph.

Prints one row per layer and the totals, then ``output matches the numpy reference`` or the
first difference (with ``--timing-only`` fsim computes no data and nothing is compared); a progress bar goes to stderr when it is a terminal. Exit status 0 when the
output matched, 1 when it did not, 2 for bad input.
docs/cli.md has the options and the ``--json`` schema.
"""

import io
import json

import numpy as np

from avta.errors import UserError, check_output_file
from avta.files import write_atomic
from avta.isa.config import load_config
from avta.progress import progress
from avta.sim.energy import load_table
from avta.sim.energy.report import format_summary, network_figures, resolve_clock
from avta.sim.targets import load_network, make_device

__all__ = ["cmd_run"]


_COLUMNS = ("layer", "op", "output", "MACs", "cycles", "ideal", "util", "loaded", "stored",
            "insns", "uops", "bound")


def _input(graph, path, seed):
    """The device's int8 input(s): seeded random ones, or ``--input``'s array, which for an
    imported model is the model's own input, converted by the network's host step(s)."""
    from avta.runtime.net import random_input, to_device
    if path is None:
        return random_input(graph, seed=seed)
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise UserError(f"--input {path}: not a readable .npy file ({error})") from None
    if not isinstance(x, np.ndarray):
        x.close()
        raise UserError(f"--input {path}: an .npz archive; give one array as a .npy file "
                        f"(numpy.save)")
    if graph.host_inputs:
        try:
            return to_device(graph, x)
        except UserError as error:
            raise UserError(f"--input {path}: {error}") from None
    if len(graph.inputs) != 1:
        raise UserError(f"--input {path}: {graph.name} has inputs {list(graph.inputs)}; "
                        f"--input gives one array")
    (name, shape), = graph.inputs.items()
    if x.dtype != np.int8 or tuple(x.shape) != tuple(shape):
        raise UserError(f"--input {path}: {x.dtype} {list(x.shape)}, but {graph.name}'s input "
                        f"{name!r} is int8 {list(shape)}")
    return x


def _input_size(graph):
    """The side of the network's input image as its user gives it: the model's input shape
    where the host pads it (an imported model), else the device's."""
    tensor, shape = next(iter(graph.inputs.items()))
    spec = graph.host_inputs.get(tensor)
    return (spec.shape if spec is not None else shape)[-1]


def _save_output(path, value):
    """``value`` as a .npy file at exactly ``path`` (``np.save`` of a name would append
    ``.npy`` to a name without it), written atomically (:func:`avta.files.write_atomic`)."""
    # Serialized in memory first: numpy writes an array to a real file with fwrite and does
    # not notice a full disk, so a truncated file would be renamed over the old one.
    data = io.BytesIO()
    np.save(data, value, allow_pickle=False)
    write_atomic(path, data.getvalue())


def _table(run):
    rows = [_COLUMNS]
    for r in run.layers:
        shape = "x".join(map(str, r.shape[1:]))
        if r.on == "host":
            rows.append((r.name, r.op, shape, f"{r.macs:,}", "host", "", "", "", "", "", "", ""))
            continue
        rows.append((r.name, r.op, shape, f"{r.macs:,}", f"{r.cycles:,}",
                     f"{r.ideal_cycles:,}", f"{r.utilization:.1%}", f"{r.bytes_loaded:,}",
                     f"{r.bytes_stored:,}", f"{r.insns:,}", f"{r.uops:,}", r.bound))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if i < 3 or i == 11 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def energy_record(record, energy, clock, table):
    """``run.to_dict()``'s record with each layer's and the total's latency, energy (with its
    breakdown) and EDP, the clock and the energy table (docs/cli.md, the --json schema)."""
    keys = ("latency_us", "energy_uj", "energy_pj", "edp_js")
    layers = [layer | {k: figures[k] for k in keys}
              for layer, figures in zip(record["layers"], energy["layers"])]
    return record | {"layers": layers,
                     "total": record["total"] | {k: energy["total"][k] for k in keys},
                     "clock": clock.to_dict(), "tech": {"name": table.name,
                                                        "file": table.source}}


def cmd_run(args):
    """Handler of ``avta run``; returns the exit status of the module docstring."""
    from avta.runtime.net import run_reference
    from avta.runtime.net.executor import dram_bytes, run_network
    cfg = load_config(args.config)
    for option, path in (("--json", args.json), ("--output", args.output)):
        if path:
            check_output_file(path, option)
    if args.output and args.timing_only:
        raise UserError("--output: a --timing-only run computes no output to write")
    table, clock = load_table(args.tech), resolve_clock(cfg, args.clock)
    graph = load_network(args.network, args.input_size, args.seed, cfg,
                         timing_only=args.timing_only)
    if args.output and len(graph.outputs) != 1:
        raise UserError(f"--output takes one array, but {graph.name} has "
                        f"{len(graph.outputs)} outputs ({', '.join(graph.outputs)}); run it "
                        f"without --output")
    x = _input(graph, args.input, args.seed)
    device = make_device(cfg, args.target, dram_bytes(cfg, graph), timing_only=args.timing_only)
    with progress(len(graph.topological()) + 1, f"{graph.name} on {cfg.name} ({args.target})",
                  unit="layer") as bar:
        def step(i, n, node):
            bar.update(i - bar.n)
            bar.set_postfix_str(f"{node.name} ({node.op})")
        run = run_network(device, graph, x, progress=step)
        bar.update(len(run.layers) - bar.n)
        if not args.timing_only:
            bar.set_postfix_str("numpy reference")
            reference = run_reference(graph, x, keep=False)
    # Timing-only: no output was computed, so there is nothing to compare (match is None).
    differs = {} if args.timing_only else {
        name: (run.outputs[name], reference[name]) for name in graph.outputs
        if not np.array_equal(run.outputs[name], reference[name])}
    match = None if args.timing_only else not differs
    energy = network_figures(cfg, run, table, clock.mhz)

    total = run.total
    mode = " timing-only" if args.timing_only else ""
    print(f"{graph.name} on {cfg.name} ({cfg.shape_name}, AXI {cfg.axi_data_bits}), "
          f"{args.target}{mode}{' (cycles are fsim estimates)' if run.estimated else ''}")
    print(_table(run))
    host = [r for r in run.layers if r.on == "host"]
    print(f"total: {total['macs']:,} MACs, {total['cycles']:,} cycles, MAC-bound "
          f"{total['ideal_cycles']:,}, utilization {total['utilization']:.1%}"
          + (f"; {len(host)} layer(s) on the host" if host else ""))
    print(f"time and energy: {format_summary(energy['total'], clock, table)}")
    for r in host:
        print(f"  {r.name} ran on the host: {r.why}")
    several = len(graph.outputs) > 1
    if match is None:
        print("output not computed (--timing-only: cycles, counters and bytes only)")
    elif match:
        print(("every output matches" if several else "output matches")
              + " the numpy reference")
    for name, (mine, want) in differs.items():
        where = np.argwhere(mine != want)[0]
        print(f"output {f'{name} ' if several else ''}DIFFERS from the numpy reference: "
              f"{int((mine != want).sum())} of {mine.size} values, first at "
              f"{tuple(int(i) for i in where)}")
    if args.output:
        from avta.runtime.net import from_device
        (out_name,) = graph.outputs
        (value,) = from_device(graph, {out_name: run.outputs[out_name]}).values()
        _save_output(args.output, value)
    if args.json:
        record = energy_record(run.to_dict(), energy, clock, table) | {
            "target": args.target, "input_size": _input_size(graph), "match": match,
            "timing_only": args.timing_only}
        write_atomic(args.json, json.dumps(record, indent=2) + "\n")
    return 0 if match is None or match else 1
