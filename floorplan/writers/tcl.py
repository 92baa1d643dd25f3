"""An OpenROAD Tcl script that places a floorplan's macros and creates its placement bounds.

Macros are placed with ``place_macro`` of OpenROAD's macro placer (mpl)::

    place_macro -macro_name <instance path> -location {x y} -orientation R0|MY|MX|R180 -exact

``-location`` is the lower-left corner of the placed box in microns, and ``-exact`` keeps it as
written (by default place_macro snaps the macro's pins to the track grid; these locations are
already on the site and row grid, and the checks passed on exactly them). The four orientations
are the only ones place_macro accepts, which is why the library has no others.

Placement bounds go through the OpenDB Tcl API, as DEF REGIONS would: ``odb::dbRegion_create``,
a box from ``odb::dbBox_create`` in DBU, region type EXCLUSIVE (DEF FENCE) or SUGGESTED (DEF
GUIDE), and every instance whose name matches ``path/*`` added to the region.

The script expects a linked design with its floorplan initialised; the matching
``initialize_floorplan`` command is written as a comment at the top.
"""

__all__ = ["floorplan_to_tcl"]

_REGION_TYPE = {"fence": "EXCLUSIVE", "guide": "SUGGESTED"}


def _um(fp, value):
    return f"{fp.um(value):.4f}".rstrip("0").rstrip(".")


def floorplan_to_tcl(floorplan):
    """The Tcl text for ``floorplan``."""
    fp = floorplan
    die, core = fp.die_rect, fp.core_rect
    tech = fp.technology
    site = tech.site_name if tech is not None else "<site>"
    lines = [f"# {fp.name}: macro placement and placement bounds written by avta floorplan.",
             "# Source in OpenROAD once the netlist is linked and the floorplan initialised, e.g.",
             f"#   initialize_floorplan -die_area {{{_um(fp, die.x0)} {_um(fp, die.y0)} "
             f"{_um(fp, die.x1)} {_um(fp, die.y1)}}} -core_area {{{_um(fp, core.x0)} "
             f"{_um(fp, core.y0)} {_um(fp, core.x1)} {_um(fp, core.y1)}}} -site {site}",
             "# place_macro -location is the lower-left corner in microns; -exact keeps it.",
             ""]
    placed = list(fp.walk())
    for p in placed:
        if p.is_leaf:
            lines.append(f"place_macro -macro_name {{{p.path}}} -location "
                         f"{{{_um(fp, p.rect.x0)} {_um(fp, p.rect.y0)}}} -orientation "
                         f"{p.orientation.openroad_name} -exact")
    regions = [p for p in placed if p.region is not None]
    if regions:
        lines += ["", "# Placement bounds (DEF REGIONS): one OpenDB region per bounded block.",
                  "proc avta_region {name type x0 y0 x1 y1 pattern} {",
                  "  set block [ord::get_db_block]",
                  "  set region [odb::dbRegion_create $block $name]",
                  "  if {$region == \"NULL\"} { error \"region $name exists already\" }",
                  "  $region setRegionType $type",
                  "  odb::dbBox_create $region $x0 $y0 $x1 $y1",
                  "  set count 0",
                  "  foreach inst [$block getInsts] {",
                  "    if {[string match $pattern [$inst getName]]} {",
                  "      $region addInst $inst",
                  "      incr count",
                  "    }",
                  "  }",
                  "  return $count",
                  "}"]
        for p in regions:
            r = p.rect
            name = p.path.replace("/", "_")
            lines.append(f"avta_region {name} {_REGION_TYPE[p.region]} {r.x0} {r.y0} {r.x1} "
                         f"{r.y1} {{{p.path}/*}}")
    return "\n".join(lines) + "\n"
