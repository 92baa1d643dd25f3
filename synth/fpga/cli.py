"""``avta fpga --config C [--device D] [-o DIR] [--json FILE] [--plan-only]``: a configuration
on an ECP5 FPGA (docs/cli.md): the memory plan, then synthesis and place and route, and the
report. Exit 1 when the design does not fit (by the plan, or by synthesis) or a tool fails."""

import json
import sys

from avta.errors import UserError, check_output_dir, check_output_file
from avta.files import write_atomic
from avta.isa.config import load_config

from .devices import device
from .flow import ToolFailed, tool_versions
from .plan import plan_design

__all__ = ["cmd_fpga", "unit_of_path"]


def unit_of_path(path):
    """The unit (:data:`avta.synth.units.UNITS`) of an instance path below the wrapper
    (``vta_top.core.run.compute.gemm``); the wrapper's own cells (``""``) are "wrapper"."""
    from avta.synth.units import unit_of
    return unit_of(path) if path else "wrapper"


def _write_json(path, data):
    write_atomic(path, json.dumps(data, indent=1) + "\n")


#: nextpnr's --seed is a 32-bit signed integer; a seed is a placement choice, so not negative.
MAX_SEED = (1 << 31) - 1


def cmd_fpga(args):
    if not 0 <= args.seed <= MAX_SEED:
        raise UserError(f"--seed {args.seed}: give a placement seed from 0 to {MAX_SEED}")
    if args.json:
        check_output_file(args.json, "JSON report")
    dev = device(args.device)
    cfg = load_config(args.config)
    keep = check_output_dir(args.output, "output folder") if args.output else None
    plan = plan_design(cfg, dev)
    print("\n".join(plan.table()))
    out = {"plan": plan.to_dict()}
    if args.plan_only or (plan.verdict() and not args.force):
        if plan.verdict() and not args.plan_only:
            print(f"avta fpga: {cfg.name} does not fit {dev.name} by the plan; not synthesized "
                  f"(--force synthesizes it anyway)", file=sys.stderr)
        if args.json:
            _write_json(args.json, out)
        return 1 if plan.verdict() else 0
    tool_versions()     # a missing tool is reported now, not after minutes of elaboration
    from avta.hw.top import VtaTop
    from avta.progress import working

    from . import run_design
    print("", file=sys.stderr)
    try:
        with working(f"avta fpga {cfg.name}") as bar:
            report = run_design(VtaTop(cfg=cfg), "vta_top", dev, seed=args.seed,
                                cache=not args.no_cache, keep=keep, bar=bar,
                                unit_of=unit_of_path)
    except ToolFailed as error:
        print(f"avta fpga: {error}", file=sys.stderr)
        return 1
    if report.fmax_mhz:
        # avta run, profile and sweep take this configuration's clock from here (synth/clock.py).
        from avta.synth.clock import record_measured
        record_measured(cfg, dev.name, args.seed, report.fmax_mhz)
    print()
    print("\n".join(report.table()))
    # LUT4s per MAC: the whole design's (memory engine, registers and control included) over
    # the GEMM's BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates per cycle.
    macs = cfg.batch * cfg.block_in * cfg.block_out
    luts = report.resources["lut4"][0]
    print(f"  LUT4s per MAC: {luts / macs:,.0f} ({luts:,} LUT4s, {macs} MACs)")
    out["report"] = report.to_dict() | {"macs": macs, "lut4_per_mac": round(luts / macs, 1)}
    if args.json:
        _write_json(args.json, out)
    if not report.fits:
        print(f"avta fpga: {cfg.name} does not fit {dev.name}: " + ", ".join(
            f"{r} needs {n:,} of {h:,} (+{n - h:,})" for r, (n, h) in report.over.items()),
            file=sys.stderr)
        return 1
    return 0
