"""Floorplan checks. Each violation names both objects, where they are, and by how much.

=================  ==========================================================  ==============
kind               rule                                                        amount
=================  ==========================================================  ==============
overlap            two macros, or two sibling instances one of which is a      overlap area,
                   block, share area                                           um^2
spacing            two macros closer than the technology's macro spacing, or   shortfall, um
                   one inside the other's halo
outside            an instance not inside its parent block; a top-level        protrusion, um
                   instance not inside the core (die minus the core margin)
duplicate-name     two instances of one block with the same name               copies
off-grid           a macro whose corner is off the site / row grid             offset, um
capacity           a block's standard cells exceed its free area x max density excess, um^2
region-nesting     placement bounds inside placement bounds (DEF groups cannot  --
                   nest: a cell would belong to two)
=================  ==========================================================  ==============

Macros are compared over the whole flattened die (a sweep along x), so macros of neighbouring
blocks are checked against each other too; pairs involving a block are compared only with their
siblings, the place where two blocks can be told apart.
"""

from dataclasses import dataclass

__all__ = ["Violation", "ObjectRef", "check", "KINDS"]

KINDS = ("overlap", "spacing", "outside", "duplicate-name", "off-grid", "capacity",
         "region-nesting")


@dataclass(frozen=True)
class ObjectRef:
    """An object of a violation: its hierarchical path and box in microns."""
    path: str
    x0: float
    y0: float
    x1: float
    y1: float

    def __str__(self):
        return f"{self.path} ({self.x0:g}, {self.y0:g})-({self.x1:g}, {self.y1:g})"


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``kind`` (see :data:`KINDS`), the objects, the amount and its unit."""
    kind: str
    first: ObjectRef
    second: ObjectRef | None
    amount: float
    unit: str
    detail: str

    def __str__(self):
        objects = f"{self.first} and {self.second}" if self.second else str(self.first)
        return f"{self.kind}: {objects}: {self.detail}"

    def to_dict(self):
        return {"kind": self.kind, "first": vars(self.first).copy(),
                "second": vars(self.second).copy() if self.second else None,
                "amount": self.amount, "unit": self.unit, "detail": self.detail}


def check(floorplan, *, spacing=None):
    """All violations in ``floorplan``. ``spacing`` (DBU) overrides the technology's."""
    if spacing is None:
        tech = floorplan.technology
        spacing = tech.macro_spacing if tech is not None else 0
    placed = list(floorplan.walk())
    ref = _ref_factory(floorplan)
    out = []
    out += _duplicates(placed, ref)
    out += _outside(floorplan, placed, ref)
    out += _macro_pairs(floorplan, [p for p in placed if p.is_leaf], spacing, ref)
    out += _sibling_blocks(floorplan, placed, ref)
    out += _off_grid(floorplan, placed, ref)
    out += _capacity(floorplan, placed, ref)
    out += _nesting(placed, ref)
    return out


def _ref_factory(fp):
    def ref(path, rect):
        return ObjectRef(path, round(fp.um(rect.x0), 4), round(fp.um(rect.y0), 4),
                         round(fp.um(rect.x1), 4), round(fp.um(rect.y1), 4))
    return ref


def _duplicates(placed, ref):
    seen, out = {}, []
    for p in placed:
        first = seen.setdefault(p.path, p)
        if first is not p:
            copies = sum(1 for q in placed if q.path == p.path)
            out.append(Violation("duplicate-name", ref(first.path, first.rect), ref(p.path, p.rect),
                                 copies, "copies",
                                 f"{copies} instances of {p.parent_path or 'the die'} are named "
                                 f"{p.instance.name!r}; instance names must be unique"))
    return out


def _outside(fp, placed, ref):
    core = fp.core_rect
    out = []
    for p in placed:
        parent, parent_name = (core, "core") if p.depth == 0 else (p.parent_rect, p.parent_path)
        excess = parent.protrusion(p.rect)
        if excess:
            out.append(Violation("outside", ref(p.path, p.rect), ref(parent_name, parent),
                                 fp.um(excess), "um",
                                 f"sticks out of {parent_name} by {fp.um(excess):g} um"))
    return out


def _macro_pairs(fp, macros, spacing, ref):
    """Overlap and spacing between macros anywhere in the die, by a sweep along x."""
    reach = spacing + max((max(m.halo.left, m.halo.right) for m in macros), default=0)
    order = sorted(macros, key=lambda m: m.rect.x0)
    out = []
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            if b.rect.x0 >= a.rect.x1 + reach:
                break
            out += _pair(fp, a, b, spacing, ref)
    return out


def _pair(fp, a, b, spacing, ref):
    common = a.rect.intersection(b.rect)
    if common is not None:
        return [Violation("overlap", ref(a.path, a.rect), ref(b.path, b.rect),
                          fp.um2(common.area), "um^2",
                          f"overlap by {fp.um(common.width):g} x {fp.um(common.height):g} um "
                          f"= {fp.um2(common.area):g} um^2")]
    # Each side's keep-out is the larger of the macro spacing and the halo facing the other
    # macro; a rectangle test, so the shortfall is the smaller move that clears it.
    worst = None
    for one, other in ((a, b), (b, a)):
        h = one.halo
        keep = one.rect.expanded(max(spacing, h.left), max(spacing, h.bottom),
                                 max(spacing, h.right), max(spacing, h.top))
        hit = keep.intersection(other.rect)
        if hit is not None:
            short = min(hit.width, hit.height)
            if worst is None or short > worst[0]:
                worst = (short, one)
    if worst is None:
        return []
    short, one = worst
    gap_x = max(b.rect.x0 - a.rect.x1, a.rect.x0 - b.rect.x1)
    gap_y = max(b.rect.y0 - a.rect.y1, a.rect.y0 - b.rect.y1)
    gap = max(gap_x, gap_y)
    return [Violation("spacing", ref(a.path, a.rect), ref(b.path, b.rect), fp.um(short), "um",
                      f"{fp.um(gap):g} um apart, inside the keep-out of {one.path} (macro spacing "
                      f"{fp.um(spacing):g} um, halo {_halo_um(fp, one)}) by {fp.um(short):g} um")]


def _halo_um(fp, p):
    h = p.halo
    return f"{fp.um(h.left):g}/{fp.um(h.bottom):g}/{fp.um(h.right):g}/{fp.um(h.top):g} um l/b/r/t"


def _sibling_blocks(fp, placed, ref):
    by_parent = {}
    for p in placed:
        by_parent.setdefault(p.parent_path, []).append(p)
    out = []
    for siblings in by_parent.values():
        for i, a in enumerate(siblings):
            for b in siblings[i + 1:]:
                if a.is_leaf and b.is_leaf:
                    continue
                common = a.rect.intersection(b.rect)
                if common is not None:
                    out.append(Violation(
                        "overlap", ref(a.path, a.rect), ref(b.path, b.rect), fp.um2(common.area),
                        "um^2", f"overlap by {fp.um(common.width):g} x {fp.um(common.height):g} "
                                f"um = {fp.um2(common.area):g} um^2"))
    return out


def _off_grid(fp, placed, ref):
    if fp.grid is None:
        return []
    step_x, step_y = fp.grid
    out = []
    for p in placed:
        if not p.is_leaf:
            continue
        dx, dy = p.rect.x0 % step_x, p.rect.y0 % step_y
        if dx or dy:
            out.append(Violation("off-grid", ref(p.path, p.rect), None,
                                 fp.um(max(dx, dy)), "um",
                                 f"corner is {fp.um(dx):g} um off the {fp.um(step_x):g} um site "
                                 f"grid and {fp.um(dy):g} um off the {fp.um(step_y):g} um rows"))
    return out


def _capacity(fp, placed, ref):
    out = []
    blocks = [(fp.die.name, fp.die, fp.core_rect)] + [(p.path, p.master, p.rect)
                                                      for p in placed if not p.is_leaf]
    for path, block, rect in blocks:
        if not block.logic_area:
            continue
        used = sum(i.master.area for i in block.instances)
        free = block.area - used
        room = free * fp.max_density
        if block.logic_area > room:
            excess = block.logic_area - room
            out.append(Violation("capacity", ref(path, rect), None, fp.um2(excess), "um^2",
                                 f"needs {fp.um2(block.logic_area):g} um^2 of standard cells, "
                                 f"free area {fp.um2(free):g} um^2 x density "
                                 f"{fp.max_density:g} holds {fp.um2(room):g} um^2"))
    return out


def _nesting(placed, ref):
    fenced = {p.path: p for p in placed if p.region is not None}
    out = []
    for path, p in fenced.items():
        parent = p.parent_path
        while parent:
            if parent in fenced:
                q = fenced[parent]
                out.append(Violation("region-nesting", ref(q.path, q.rect), ref(p.path, p.rect), 0,
                                     "-", f"{p.path} has placement bounds inside those of "
                                          f"{q.path}; DEF groups cannot nest"))
                break
            parent = parent.rpartition("/")[0]
    return out

