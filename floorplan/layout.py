"""Layout objects: leaf macros, hierarchical blocks, their instances, arrays, and the floorplan.

A floorplan is a tree. A :class:`Block` is a definition (like a Verilog module): a named rectangle
that holds instances of macros and of other blocks, each at a position in the block's own
coordinates. A :class:`Macro` is a leaf master whose size comes from a technology description (an
SRAM, say). An :class:`Instance` places one master inside a block; the same block definition may
be instantiated many times, flipped or not, which is how a tile is drawn once and repeated.
:class:`Floorplan` names the top block (the die) and flattens the tree into absolute positions.

Coordinates are integer database units (see :mod:`avta.floorplan.geometry`). Instance names are
identifiers; the hierarchy divider is ``/``, as in the DEF files this package writes.
"""

import re
from dataclasses import dataclass
from types import MappingProxyType

from .geometry import Halo, Orientation, Rect

__all__ = ["Macro", "Block", "Instance", "InstanceArray", "Floorplan", "Placed", "REGION_TYPES"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: Kinds of placement bounds: a fence keeps the block's cells in and every other cell out (DEF
#: FENCE, OpenDB EXCLUSIVE); a guide only attracts them (DEF GUIDE, OpenDB SUGGESTED).
REGION_TYPES = ("fence", "guide")


def _check_name(what, name):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{what} name {name!r}: use letters, digits and '_' (not starting with a "
                         f"digit); '/' is the hierarchy divider and cannot be part of a name")
    return name


def _check_size(what, key, value, *, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise ValueError(f"{what} {key} = {value!r}: must be a {'non-negative' if allow_zero else 'positive'} "
                         f"integer number of DBU")
    return value


class Macro:
    """A leaf master: a hard macro of fixed size (LEF ``CLASS BLOCK``), usually an SRAM.

    ``halo`` is the default keep-out of its instances; ``tag`` groups masters for colours and
    reports (``"wgt"``, ``"acc"``, ...); ``properties`` records where the size came from (words,
    bits, column mux, ...), read-only.
    """

    def __init__(self, name, *, width, height, halo=None, tag=None, properties=None):
        self._name = _check_name("macro master", name)
        self._width = _check_size(f"macro {name}", "width", width)
        self._height = _check_size(f"macro {name}", "height", height)
        if halo is not None and not isinstance(halo, Halo):
            raise TypeError(f"macro {name} halo = {halo!r}: expected a Halo")
        self._halo = halo or Halo()
        self._tag = tag
        self._properties = MappingProxyType(dict(properties or {}))

    name = property(lambda self: self._name)
    width = property(lambda self: self._width)
    height = property(lambda self: self._height)
    halo = property(lambda self: self._halo)
    tag = property(lambda self: self._tag)
    properties = property(lambda self: self._properties)
    area = property(lambda self: self._width * self._height)
    is_leaf = True

    def __repr__(self):
        return f"Macro({self._name!r}, {self._width}x{self._height})"


class Instance:
    """One placement of a master (a :class:`Macro` or a :class:`Block`) inside a block.

    ``x``, ``y`` are the lower-left corner of the placed box in the parent's coordinates, after
    orientation (as DEF's PLACED point). ``halo`` overrides the macro's default. ``region`` puts
    placement bounds on a block instance: ``"fence"`` or ``"guide"`` (see :data:`REGION_TYPES`).
    """

    def __init__(self, name, master, *, x, y, orientation=Orientation.N, halo=None, region=None):
        self._name = _check_name("instance", name)
        if not isinstance(master, (Macro, Block)):
            raise TypeError(f"instance {name}: master {master!r} is neither a Macro nor a Block")
        for key, value in (("x", x), ("y", y)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"instance {name} {key} = {value!r}: must be an integer DBU")
        self._master = master
        self._x, self._y = x, y
        self._orientation = Orientation.parse(orientation)
        if halo is not None and not isinstance(halo, Halo):
            raise TypeError(f"instance {name} halo = {halo!r}: expected a Halo")
        if halo is not None and not master.is_leaf:
            raise ValueError(f"instance {name}: a halo belongs on a macro, not on block "
                             f"{master.name} (give its macros halos instead)")
        self._halo = halo
        if region is not None and region not in REGION_TYPES:
            raise ValueError(f"instance {name} region = {region!r}: use one of {REGION_TYPES} or None")
        if region is not None and master.is_leaf:
            raise ValueError(f"instance {name}: placement bounds belong on a block, not on macro "
                             f"{master.name}")
        self._region = region

    name = property(lambda self: self._name)
    master = property(lambda self: self._master)
    x = property(lambda self: self._x)
    y = property(lambda self: self._y)
    orientation = property(lambda self: self._orientation)
    region = property(lambda self: self._region)
    is_leaf = property(lambda self: self._master.is_leaf)

    @property
    def halo(self):
        """The halo in the master's own frame (N); zero for blocks."""
        if self._halo is not None:
            return self._halo
        return self._master.halo if self._master.is_leaf else Halo()

    @property
    def rect(self):
        """The placed box in the parent's coordinates."""
        return Rect.of(self._x, self._y, self._master.width, self._master.height)

    def __repr__(self):
        return (f"Instance({self._name!r}, {self._master.name}, at ({self._x}, {self._y}) "
                f"{self._orientation.name})")


class InstanceArray:
    """A rows x cols array of one master added by :meth:`Block.add_array`; row-major order."""

    def __init__(self, name, rows, cols, instances):
        self._name, self._rows, self._cols = name, rows, cols
        self._instances = tuple(instances)

    name = property(lambda self: self._name)
    rows = property(lambda self: self._rows)
    cols = property(lambda self: self._cols)
    instances = property(lambda self: self._instances)

    @property
    def bbox(self):
        rects = [i.rect for i in self._instances]
        return Rect(min(r.x0 for r in rects), min(r.y0 for r in rects),
                    max(r.x1 for r in rects), max(r.y1 for r in rects))

    def at(self, row, col):
        index = row * self._cols + col
        if not (0 <= row < self._rows and 0 <= col < self._cols) or index >= len(self._instances):
            raise IndexError(f"array {self._name}: no element at row {row}, column {col}")
        return self._instances[index]

    def __iter__(self):
        return iter(self._instances)

    def __len__(self):
        return len(self._instances)


class Block:
    """A hierarchical definition: a named rectangle holding instances placed in its coordinates.

    ``logic_area`` is the standard-cell area (DBU^2) the block's own logic needs besides its
    children; the capacity check compares it with the free area. ``tag`` labels the block for
    colours and reports.
    """

    is_leaf = False

    def __init__(self, name, *, width, height, tag=None, logic_area=0):
        self._name = _check_name("block", name)
        self._width = _check_size(f"block {name}", "width", width)
        self._height = _check_size(f"block {name}", "height", height)
        self._logic_area = _check_size(f"block {name}", "logic_area", logic_area, allow_zero=True)
        self._tag = tag
        self._instances = []
        self._arrays = []

    name = property(lambda self: self._name)
    width = property(lambda self: self._width)
    height = property(lambda self: self._height)
    tag = property(lambda self: self._tag)
    logic_area = property(lambda self: self._logic_area)
    area = property(lambda self: self._width * self._height)
    instances = property(lambda self: tuple(self._instances))
    arrays = property(lambda self: tuple(self._arrays))
    halo = Halo()

    def add(self, name, master, *, x, y, orientation=Orientation.N, halo=None, region=None):
        """Place ``master`` at (x, y) of this block and return the :class:`Instance`.

        Names are not checked for uniqueness here: the checks report duplicates with both
        objects, so a script can build a whole floorplan and see every problem at once.
        """
        if master is self:
            raise ValueError(f"block {self._name} cannot contain an instance of itself")
        instance = Instance(name, master, x=x, y=y, orientation=orientation, halo=halo,
                            region=region)
        self._instances.append(instance)
        return instance

    def add_array(self, name, master, *, x, y, rows, cols, pitch_x=None, pitch_y=None,
                  orientation=Orientation.N, flip_rows=False, flip_cols=False, count=None,
                  names=None, halo=None):
        """Place ``rows`` x ``cols`` instances of ``master`` from (x, y) with the given pitch.

        The default pitch leaves each neighbour outside the other's halo. ``flip_rows`` mirrors
        every odd row about x (FS), as macro rows do to share power rails; ``flip_cols`` mirrors
        every odd column about y (FN). ``count`` stops early (the last row partly filled).
        ``names(row, col)`` names the elements; by default ``{name}_{row}_{col}``.
        """
        for key, value in (("rows", rows), ("cols", cols)):
            _check_size(f"array {name}", key, value)
        capacity = rows * cols
        count = capacity if count is None else count
        if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= capacity:
            raise ValueError(f"array {name} count = {count!r}: must be 1..{capacity} "
                             f"(rows x cols)")
        halo_ = halo or master.halo
        if pitch_x is None:
            pitch_x = master.width + max(halo_.left, halo_.right)
        if pitch_y is None:
            pitch_y = master.height + max(halo_.bottom, halo_.top)
        if pitch_x < master.width or pitch_y < master.height:
            raise ValueError(f"array {name}: pitch {pitch_x} x {pitch_y} is smaller than master "
                             f"{master.name} ({master.width} x {master.height}): elements would "
                             f"overlap")
        base = Orientation.parse(orientation)
        names = names or (lambda r, c: f"{name}_{r}_{c}")
        placed = []
        for index in range(count):
            row, col = divmod(index, cols)
            flip = Orientation((flip_cols and col % 2 == 1, flip_rows and row % 2 == 1))
            placed.append(self.add(names(row, col), master, x=x + col * pitch_x,
                                   y=y + row * pitch_y, orientation=base.then(flip), halo=halo))
        array = InstanceArray(name, rows, cols, placed)
        self._arrays.append(array)
        return array

    @property
    def macro_area(self):
        """Area of every macro below this block, at any depth."""
        return sum(i.master.area if i.is_leaf else i.master.macro_area for i in self._instances)

    @property
    def total_logic_area(self):
        """Standard-cell area of this block and every block below it."""
        return self._logic_area + sum(i.master.total_logic_area for i in self._instances
                                      if not i.is_leaf)

    def __repr__(self):
        return f"Block({self._name!r}, {self._width}x{self._height}, {len(self._instances)} instances)"


@dataclass(frozen=True)
class Placed:
    """One instance of the flattened tree, in absolute die coordinates."""
    path: str
    instance: Instance
    rect: Rect
    orientation: Orientation
    parent_path: str
    parent_rect: Rect
    depth: int

    master = property(lambda self: self.instance.master)
    is_leaf = property(lambda self: self.instance.is_leaf)
    region = property(lambda self: self.instance.region)

    @property
    def halo(self):
        """The halo in die coordinates (sides swapped by mirroring)."""
        return self.instance.halo.oriented(self.orientation)

    @property
    def halo_rect(self):
        return self.halo.around(self.rect)


class Floorplan:
    """A die (the top :class:`Block`) with its units, core margin and placement grid.

    ``grid`` is (site width, row height) in DBU: macros are expected on it. ``max_density`` is the
    highest standard-cell density the capacity check accepts in a block's free area.
    """

    def __init__(self, name, *, die, dbu_per_micron, core_margin=0, grid=None, max_density=1.0,
                 technology=None):
        self._name = _check_name("floorplan", name)
        if not isinstance(die, Block):
            raise TypeError(f"floorplan {name}: die = {die!r} must be a Block")
        self._die = die
        self._dbu = _check_size(f"floorplan {name}", "dbu_per_micron", dbu_per_micron)
        self._core_margin = _check_size(f"floorplan {name}", "core_margin", core_margin,
                                        allow_zero=True)
        if 2 * core_margin >= min(die.width, die.height):
            raise ValueError(f"floorplan {name}: core margin {core_margin} leaves no core in a "
                             f"{die.width} x {die.height} die")
        if grid is not None:
            if len(grid) != 2:
                raise ValueError(f"floorplan {name} grid = {grid!r}: expected (site width, row "
                                 f"height)")
            for value in grid:
                _check_size(f"floorplan {name}", "grid", value)
            grid = tuple(grid)
        self._grid = grid
        if not 0 < max_density <= 1:
            raise ValueError(f"floorplan {name} max_density = {max_density!r}: must be in (0, 1]")
        self._max_density = max_density
        self._technology = technology

    name = property(lambda self: self._name)
    die = property(lambda self: self._die)
    dbu_per_micron = property(lambda self: self._dbu)
    core_margin = property(lambda self: self._core_margin)
    grid = property(lambda self: self._grid)
    max_density = property(lambda self: self._max_density)
    technology = property(lambda self: self._technology)
    die_rect = property(lambda self: Rect(0, 0, self._die.width, self._die.height))
    core_rect = property(lambda self: self.die_rect.expanded(*(-self._core_margin,) * 4))

    def um(self, dbu):
        """Microns from database units."""
        return dbu / self._dbu

    def um2(self, dbu2):
        """Square microns from square database units."""
        return dbu2 / (self._dbu * self._dbu)

    def walk(self):
        """Every instance, parents before children, in absolute coordinates (:class:`Placed`)."""
        stack = [(self._die, "", self.die_rect, Orientation.N, 0)]
        while stack:
            block, prefix, frame, orient, depth = stack.pop()
            children = []
            for inst in block.instances:
                local = inst.rect.mirrored_in(block.width, block.height, orient)
                rect = local.translated(frame.x0, frame.y0)
                placed = Placed(prefix + inst.name, inst, rect, inst.orientation.then(orient),
                                prefix.rstrip("/"), frame, depth)
                yield placed
                if not inst.is_leaf:
                    children.append((inst.master, placed.path + "/", rect, placed.orientation,
                                     depth + 1))
            stack.extend(reversed(children))

    def macros(self):
        """The leaf instances (hard macros), in absolute coordinates."""
        return [p for p in self.walk() if p.is_leaf]

    def find(self, path):
        for placed in self.walk():
            if placed.path == path:
                return placed
        raise KeyError(f"floorplan {self._name} has no instance {path!r}")

    @property
    def macro_area(self):
        return self._die.macro_area

    @property
    def logic_area(self):
        return self._die.total_logic_area

    @property
    def utilization(self):
        """(macro area + standard-cell area) / core area."""
        return (self.macro_area + self.logic_area) / self.core_rect.area

    def check(self):
        """Every violation of the checks in :mod:`avta.floorplan.checks`."""
        from .checks import check
        return check(self)
