"""LEF 5.8 abstracts of a floorplan's masters: every macro and every block definition.

The DEF (:mod:`.def_`) places hard macros by master name; a tool reads this LEF first to know
each master's size. One ``MACRO`` per distinct master, ``CLASS BLOCK``, ``ORIGIN 0 0``, its
``SIZE`` in microns and ``SYMMETRY X Y`` (the four orientations of
:class:`~avta.floorplan.geometry.Orientation` are the mirrors about x and y). The masters are
placement abstracts, not the real SRAM views: they have no pins and no obstructions (a flow reads
the SRAM compiler's LEF for those).

Block definitions (a tile, a macro array, a soft logic block) are written too, named
``<design>_<block>`` so two floorplans' LEFs can be read together: they are the abstracts a
hierarchical flow places at the level above (the tiled style's ``tile``, drawn once and
instantiated per ACC slice). The die block itself is the DEF's design and is not repeated.
"""

from decimal import Decimal

__all__ = ["floorplan_to_lef", "block_macro_name", "lef_microns"]


def block_macro_name(floorplan, block):
    """The LEF ``MACRO`` name of a block definition of ``floorplan``."""
    return f"{floorplan.name}_{block.name}"


def lef_microns(dbu, dbu_per_micron):
    """``dbu`` as an exact decimal number of microns (LEF lengths are microns)."""
    value = (Decimal(dbu) / Decimal(dbu_per_micron)).normalize()
    return f"{value:f}"


def _masters(floorplan):
    """Distinct macro masters and block definitions below the die, in first-use order."""
    macros, blocks = {}, {}
    for placed in floorplan.walk():
        master = placed.master
        table = macros if master.is_leaf else blocks
        table.setdefault(id(master), master)
    return list(macros.values()), list(blocks.values())


def _check_unique(names, what):
    seen = {}
    for name, master in names:
        other = seen.setdefault(name, master)
        if other is not master and (other.width, other.height) != (master.width, master.height):
            raise ValueError(f"two different {what} are both named {name} ({other.width} x "
                             f"{other.height} and {master.width} x {master.height} DBU): a LEF "
                             f"holds one MACRO per name; rename one")


def floorplan_to_lef(floorplan):
    """The LEF text of the masters placed in ``floorplan``."""
    fp = floorplan
    dbu = fp.dbu_per_micron
    macros, blocks = _masters(fp)
    named = [(m.name, m) for m in macros] + [(block_macro_name(fp, b), b) for b in blocks]
    _check_unique([(n, m) for n, m in named if m.is_leaf], "macro masters")
    _check_unique([(n, m) for n, m in named if not m.is_leaf], "block definitions")
    leaf_names = {m.name for m in macros}
    clash = sorted({n for n, m in named if not m.is_leaf and n in leaf_names})
    if clash:
        raise ValueError(f"block abstracts {clash} have the names of macro masters; rename them")
    lines = ["VERSION 5.8 ;", 'BUSBITCHARS "[]" ;', 'DIVIDERCHAR "/" ;', "",
             "UNITS", f"  DATABASE MICRONS {dbu} ;", "END UNITS", ""]
    written = set()
    for name, master in named:
        if name in written:
            continue
        written.add(name)
        lines += [f"MACRO {name}", "  CLASS BLOCK ;", "  ORIGIN 0 0 ;",
                  f"  SIZE {lef_microns(master.width, dbu)} BY {lef_microns(master.height, dbu)} ;",
                  "  SYMMETRY X Y ;", f"END {name}", ""]
    lines.append("END LIBRARY")
    return "\n".join(lines) + "\n"
