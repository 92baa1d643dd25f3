"""``avta floorplan``: build a configuration's floorplans, check them and write every output.

For each style asked for, writes ``<config>-<style>.{svg,png,def,lef,tcl,yaml,json}`` directly in
the output directory, prints one summary line (die and macro area, utilization, wire estimate)
and every violation. With ``--check`` the exit status is 1 when any floorplan has a violation.
"""

import sys

from ..errors import check_output_dir
from ..isa.config import load_config
from .vta import STYLES, build_floorplan
from .writers import write_outputs

__all__ = ["cmd_floorplan", "write_vta_floorplan"]


def write_vta_floorplan(plan, directory):
    """Check ``plan`` (a :class:`~avta.floorplan.vta.VtaFloorplan`) and write its outputs."""
    violations = plan.floorplan.check()
    report = plan.report()
    caption = [
        f"{report['shape']}  {report['style']}  ({report['technology']})  tiles: {report['tiles']}",
        f"die {report['die_width_um']:.0f} x {report['die_height_um']:.0f} um = "
        f"{report['die_area_mm2']:.3f} mm^2;  {report['macro_count']} macros "
        f"{report['macro_area_mm2']:.3f} mm^2;  logic {report['logic_area_mm2']:.3f} mm^2;  "
        f"utilization {report['utilization']:.1%}",
        f"wire estimate (bits x HPWL of pin centres) {report['wire_mm']:.0f} mm;  longest lane "
        f"bus {report['longest_lane_bus']['name']} {report['longest_lane_bus']['hpwl_um']:.0f} um;"
        f"  violations: {len(violations)}",
    ]
    extra = {"report": report, "violations": [v.to_dict() for v in violations],
             "buses": [{"name": b.bus.name, "bits": b.bus.bits, "pins": list(b.bus.pins),
                        "hpwl_um": b.hpwl_um, "wire_mm": b.wire_mm} for b in plan.wires.buses]}
    paths = write_outputs(plan.floorplan, directory, plan.name, title=f"VTA {plan.name}",
                          caption=caption, wires=plan.wires, extra=extra)
    return violations, paths


def cmd_floorplan(args):
    cfg = load_config(args.config)
    check_output_dir(args.output, "output folder")
    styles = list(STYLES) if args.style == "all" else [args.style]
    failed = False
    for style in styles:
        plan = build_floorplan(cfg, style)
        violations, paths = write_vta_floorplan(plan, args.output)
        print(plan.summary())
        for violation in violations:
            print(f"  {violation}")
        print(f"  wrote {', '.join(str(p) for p in paths.values())}")
        failed = failed or bool(violations)
    if failed and args.check:
        print(f"avta floorplan: {cfg.name}: violations found (see above)", file=sys.stderr)
        return 1
    return 0
