"""DEF 5.8 of a floorplan: die area, rows, placed macros with halos, regions and groups.

* ``DIEAREA`` is the die block; ``ROW`` statements fill the core (die minus the core margin)
  with the technology's site, alternate rows flipped (FS) as standard-cell rows are.
* ``COMPONENTS`` lists every hard macro by hierarchical path (``DIVIDERCHAR "/"``) with
  ``+ PLACED ( x y ) orient``: the lower-left corner of the placed box, as DEF defines it. A
  non-zero halo is written as ``+ HALO left bottom right top`` on the macro's own (LEF) edges.
* Each block instance with placement bounds becomes a ``REGIONS`` entry (``TYPE FENCE`` or
  ``GUIDE``) and a ``GROUPS`` entry whose pattern ``path/*`` holds the block's cells.
"""

__all__ = ["floorplan_to_def", "region_name"]


def region_name(path):
    """The DEF region (and group) name of a block instance path."""
    return path.replace("/", "_")


def floorplan_to_def(floorplan):
    """The DEF text of ``floorplan``."""
    fp = floorplan
    die, core = fp.die_rect, fp.core_rect
    lines = ["VERSION 5.8 ;", 'DIVIDERCHAR "/" ;', 'BUSBITCHARS "[]" ;', f"DESIGN {fp.name} ;",
             f"UNITS DISTANCE MICRONS {fp.dbu_per_micron} ;", "",
             f"DIEAREA ( {die.x0} {die.y0} ) ( {die.x1} {die.y1} ) ;", ""]
    tech = fp.technology
    if tech is not None:
        sites = core.width // tech.site_width
        for i in range(core.height // tech.row_height):
            orient = "FS" if i % 2 else "N"
            lines.append(f"ROW ROW_{i} {tech.site_name} {core.x0} {core.y0 + i * tech.row_height} "
                         f"{orient} DO {sites} BY 1 STEP {tech.site_width} 0 ;")
        lines.append("")
    placed = list(fp.walk())
    macros = [p for p in placed if p.is_leaf]
    lines.append(f"COMPONENTS {len(macros)} ;")
    for p in macros:
        halo = p.instance.halo
        extra = "" if halo.is_zero else \
            f" + HALO {halo.left} {halo.bottom} {halo.right} {halo.top}"
        lines.append(f"- {p.path} {p.master.name} + PLACED ( {p.rect.x0} {p.rect.y0} ) "
                     f"{p.orientation.def_name}{extra} ;")
    lines += ["END COMPONENTS", ""]
    regions = [p for p in placed if p.region is not None]
    names = [region_name(p.path) for p in regions]
    clash = {n for n in names if names.count(n) > 1}
    if clash:
        raise ValueError(f"block paths {sorted(clash)} give the same DEF region name once '/' "
                         f"becomes '_'; rename one of the instances")
    if regions:
        lines.append(f"REGIONS {len(regions)} ;")
        for p, name in zip(regions, names):
            r = p.rect
            lines.append(f"- {name} ( {r.x0} {r.y0} ) ( {r.x1} {r.y1} ) + TYPE "
                         f"{p.region.upper()} ;")
        lines += ["END REGIONS", "", f"GROUPS {len(regions)} ;"]
        for p, name in zip(regions, names):
            lines.append(f"- {name} {p.path}/* + REGION {name} ;")
        lines += ["END GROUPS", ""]
    lines.append("END DESIGN")
    return "\n".join(lines) + "\n"
