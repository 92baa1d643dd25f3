"""The whole floorplan as JSON: units, die and core, every instance, regions, and extras.

Lengths are microns. Each instance records its path, whether it is a macro or a block, its
master and tag, its placed box, both orientation names, its halo (in die coordinates, after
mirroring) and its placement bounds. ``extra`` adds caller data (the VTA report, violations).
"""

import json

__all__ = ["floorplan_to_dict", "floorplan_to_json"]


def floorplan_to_dict(floorplan, *, extra=None):
    fp = floorplan
    um = fp.um

    def box(rect):
        return {"x": um(rect.x0), "y": um(rect.y0), "width": um(rect.width),
                "height": um(rect.height)}

    instances = []
    for p in fp.walk():
        halo = p.halo
        instances.append({
            "path": p.path, "kind": "macro" if p.is_leaf else "block",
            "master": p.master.name, "tag": p.master.tag, **box(p.rect),
            "orientation": p.orientation.def_name, "openroad_orientation":
                p.orientation.openroad_name,
            "halo": {"left": um(halo.left), "bottom": um(halo.bottom), "right": um(halo.right),
                     "top": um(halo.top)},
            "region": p.region,
            "properties": dict(p.master.properties) if p.is_leaf else
                {"logic_area_um2": fp.um2(p.master.logic_area)},
        })
    tech = fp.technology
    out = {"design": fp.name, "units": "um", "dbu_per_micron": fp.dbu_per_micron,
           "technology": tech.name if tech is not None else None,
           "die": box(fp.die_rect), "core": box(fp.core_rect),
           "grid": {"site_width": um(fp.grid[0]), "row_height": um(fp.grid[1])} if fp.grid
           else None,
           "instances": instances}
    out.update(extra or {})
    return out


def floorplan_to_json(floorplan, *, extra=None):
    return json.dumps(floorplan_to_dict(floorplan, extra=extra), indent=1) + "\n"
