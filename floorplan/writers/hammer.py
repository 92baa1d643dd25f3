"""Placement constraints in the YAML form of Hammer (``vlsi.inputs.placement_constraints``).

One entry per object, in microns with the die's lower-left corner at (0, 0):

* the die: ``type: toplevel`` with its ``margins`` (the core margin on every side);
* each block instance: ``type: placement`` (path, x, y, width, height);
* each macro: ``type: hardmacro`` with ``orientation`` (Hammer's r0, r180, my, mx) and
  ``master`` (the macro's cell name).

Paths start with the design name and use ``/`` between instances, as Hammer's do.
"""

import yaml

__all__ = ["floorplan_to_hammer", "hammer_constraints"]


def _um(fp, value):
    return round(fp.um(value), 4)


def hammer_constraints(floorplan):
    """The list of constraint dictionaries (before YAML)."""
    fp = floorplan
    die, margin = fp.die_rect, _um(fp, fp.core_margin)
    out = [{"path": fp.name, "type": "toplevel", "x": 0, "y": 0, "width": _um(fp, die.width),
            "height": _um(fp, die.height),
            "margins": {"left": margin, "right": margin, "top": margin, "bottom": margin}}]
    for p in fp.walk():
        entry = {"path": f"{fp.name}/{p.path}", "type": "hardmacro" if p.is_leaf else "placement",
                 "x": _um(fp, p.rect.x0), "y": _um(fp, p.rect.y0),
                 "width": _um(fp, p.rect.width), "height": _um(fp, p.rect.height)}
        if p.is_leaf:
            entry["orientation"] = p.orientation.hammer_name
            entry["master"] = p.master.name
        out.append(entry)
    return out


def floorplan_to_hammer(floorplan):
    """The Hammer YAML text of ``floorplan``."""
    header = (f"# {floorplan.name}: placement constraints written by avta floorplan "
              f"(microns, origin at the die's lower-left corner).\n")
    body = yaml.safe_dump({"vlsi.inputs.placement_constraints": hammer_constraints(floorplan)},
                          sort_keys=False, default_flow_style=False)
    return header + body
