"""``avta area --config C [--synth] [--style S] [--json FILE]``: a configuration's area;
``avta area --calibrate``: fit the floorplan's logic model to synthesis.

Without ``--synth``, the floorplan model's (what ``avta floorplan`` and ``avta sweep`` use): the
die of the floorplan, SRAM macros per scratchpad, logic per block from the calibrated
:class:`~avta.floorplan.vta.LogicModel`. With ``--synth``, the design synthesized by Yosys
(:mod:`avta.synth.yosys`; minutes, then cached): logic cells and area per unit, the macros, and
the model's error per block. ``--json`` also writes the report as JSON. With ``--calibrate``,
synthesize the points of :mod:`avta.synth.calibrate`, print the fitted coefficients and the
model's error on the calibration and held-out points.
"""

import json
import sys

from avta.errors import check_output_file
from avta.files import write_atomic
from avta.floorplan.tech import load_technology
from avta.isa.config import load_config

from .report import model_report, synth_report
from .yosys import YosysError, synthesize

__all__ = ["cmd_area"]


def _log(text):
    print(text, file=sys.stderr)


def _calibrate(args, technology):
    from dataclasses import asdict

    from .calibrate import calibrate
    try:
        result = calibrate(technology, log=_log)
    except YosysError as error:
        print(f"avta area: {error}", file=sys.stderr)
        return 1
    print("fitted LogicModel (gate equivalents):")
    for field, value in asdict(result.model).items():
        print(f"  {field} = {value:,}")
    print("\nmodel against synthesis:")
    print("\n".join(result.table()))
    print("\nsynthesis wall time: " + ", ".join(f"{name} {s:.0f} s" if s else f"{name} cached"
                                                for name, s in result.seconds.items()))
    if args.json:
        write_atomic(args.json, json.dumps({"model": asdict(result.model), "rows": result.rows,
                                            "seconds": result.seconds}, indent=1) + "\n")
    return 0


def cmd_area(args):
    technology = load_technology("generic45")
    if args.json:
        check_output_file(args.json, "JSON report")
    if args.calibrate:
        return _calibrate(args, technology)
    cfg = load_config(args.config)
    if args.synth:
        try:
            result = synthesize(cfg, technology, cache=not args.no_cache, log=_log)
        except YosysError as error:
            print(f"avta area: {error}", file=sys.stderr)
            return 1
        report = synth_report(cfg, technology, result)
    else:
        report = model_report(cfg, technology, style=args.style)
    print("\n".join(report.table()))
    if args.json:
        write_atomic(args.json, json.dumps(report.to_dict(), indent=1) + "\n")
    return 0
