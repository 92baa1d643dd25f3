"""Integer geometry for floorplans: orientations, rectangles and halos.

All coordinates are integers in database units (DBU), as in DEF: a floorplan is exact, and two
macros either touch or they do not. :class:`~avta.floorplan.layout.Floorplan` carries the number of
DBU per micron and the writers convert.

Orientations
------------
A macro may be placed in four orientations. They have two families of names, and this module
keeps one canonical value per orientation (a pair of mirror flags) and maps every name to it:

======  =========  =======  ===============================================
DEF     OpenROAD   Hammer   meaning
======  =========  =======  ===============================================
N       R0         r0       as drawn
S       R180       r180     rotated half a turn (mirrored in x and in y)
FN      MY         my       mirrored about the y axis (x -> -x)
FS      MX         mx       mirrored about the x axis (y -> -y)
======  =========  =======  ===============================================

The quarter-turn orientations (DEF E, W, FE, FW; OpenROAD R90, R270, MXR90, MYR90) are refused:
SRAM macros must keep their poly direction, and OpenROAD's ``place_macro`` accepts only the four
above. Because every allowed orientation is a pair of mirrors, none of them swaps width and
height, and composing two orientations is an exclusive-or of their flags.
"""

import enum
from dataclasses import dataclass

__all__ = ["Orientation", "Rect", "Halo", "OrientationError"]


class OrientationError(ValueError):
    """An orientation name that is not one of the four supported ones."""


class Orientation(enum.Enum):
    """One of the four placements that keep poly direction; value = (flip_x, flip_y)."""
    N = (False, False)
    FN = (True, False)
    FS = (False, True)
    S = (True, True)

    @property
    def flip_x(self):
        """True when x is mirrored inside the object's box (FN and S)."""
        return self.value[0]

    @property
    def flip_y(self):
        """True when y is mirrored inside the object's box (FS and S)."""
        return self.value[1]

    @property
    def def_name(self):
        return self.name

    @property
    def openroad_name(self):
        """The OpenDB name that ``place_macro -orientation`` takes."""
        return _OPENROAD[self]

    @property
    def hammer_name(self):
        """The lower-case name of Hammer's placement constraints."""
        return _OPENROAD[self].lower()

    def then(self, outer):
        """The orientation of an object placed ``self`` inside a parent placed ``outer``."""
        return Orientation((self.flip_x != outer.flip_x, self.flip_y != outer.flip_y))

    @classmethod
    def parse(cls, name):
        """An :class:`Orientation` from any DEF, OpenROAD or Hammer name (case-insensitive)."""
        if isinstance(name, Orientation):
            return name
        if not isinstance(name, str):
            raise OrientationError(f"orientation {name!r}: expected a name such as N, FS, R0 or MX")
        key = name.strip().upper()
        if key in _BY_NAME:
            return _BY_NAME[key]
        if key in _QUARTER_TURNS:
            raise OrientationError(
                f"orientation {name!r} turns the object by 90 degrees: macros must keep their poly "
                f"direction (OpenROAD place_macro accepts only R0, MY, MX and R180); use N, S, FN "
                f"or FS")
        raise OrientationError(f"orientation {name!r} is unknown: use one of N, S, FN, FS (DEF) or "
                               f"R0, R180, MY, MX (OpenROAD)")


_OPENROAD = {Orientation.N: "R0", Orientation.S: "R180", Orientation.FN: "MY",
             Orientation.FS: "MX"}
_BY_NAME = {o.name: o for o in Orientation} | {v: k for k, v in _OPENROAD.items()}
_QUARTER_TURNS = {"E", "W", "FE", "FW", "R90", "R270", "MXR90", "MYR90", "MX90", "MY90"}


@dataclass(frozen=True)
class Rect:
    """A closed rectangle [x0, x1] x [y0, y1] in DBU with x0 <= x1 and y0 <= y1."""
    x0: int
    y0: int
    x1: int
    y1: int

    def __post_init__(self):
        for key in ("x0", "y0", "x1", "y1"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Rect {key} = {value!r}: coordinates are integer DBU")
        if self.x1 < self.x0 or self.y1 < self.y0:
            raise ValueError(f"Rect ({self.x0}, {self.y0})-({self.x1}, {self.y1}) has negative size")

    @classmethod
    def of(cls, x, y, width, height):
        """The rectangle with lower-left corner (x, y) and the given size."""
        return cls(x, y, x + width, y + height)

    width = property(lambda self: self.x1 - self.x0)
    height = property(lambda self: self.y1 - self.y0)
    area = property(lambda self: self.width * self.height)
    center = property(lambda self: ((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2),
                      doc="centre as floats (it can fall on half a DBU)")

    def translated(self, dx, dy):
        return Rect(self.x0 + dx, self.y0 + dy, self.x1 + dx, self.y1 + dy)

    def expanded(self, left, bottom, right, top):
        """This rectangle grown by a margin on each side."""
        return Rect(self.x0 - left, self.y0 - bottom, self.x1 + right, self.y1 + top)

    def intersection(self, other):
        """The common rectangle with positive area, or None when they only touch or are apart."""
        x0, y0 = max(self.x0, other.x0), max(self.y0, other.y0)
        x1, y1 = min(self.x1, other.x1), min(self.y1, other.y1)
        if x0 < x1 and y0 < y1:
            return Rect(x0, y0, x1, y1)
        return None

    def contains(self, other):
        return (self.x0 <= other.x0 and self.y0 <= other.y0 and other.x1 <= self.x1
                and other.y1 <= self.y1)

    def protrusion(self, other):
        """How far ``other`` sticks out of this rectangle (0 when it is inside)."""
        return max(0, self.x0 - other.x0, self.y0 - other.y0, other.x1 - self.x1,
                   other.y1 - self.y1)

    def mirrored_in(self, width, height, orientation):
        """This rectangle, given in a box of ``width`` x ``height``, after orienting the box."""
        x0, x1 = (width - self.x1, width - self.x0) if orientation.flip_x else (self.x0, self.x1)
        y0, y1 = (height - self.y1, height - self.y0) if orientation.flip_y else (self.y0, self.y1)
        return Rect(x0, y0, x1, y1)

    def __str__(self):
        return f"({self.x0}, {self.y0})-({self.x1}, {self.y1})"


@dataclass(frozen=True)
class Halo:
    """A keep-out margin around a macro, per side, in DBU, given as the master is drawn (N).

    No other macro may sit inside it (the spacing check); standard cells are kept out of it by the
    tools (DEF ``+ HALO``). :meth:`oriented` swaps the sides when the macro is mirrored.
    """
    left: int = 0
    bottom: int = 0
    right: int = 0
    top: int = 0

    def __post_init__(self):
        for key in ("left", "bottom", "right", "top"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Halo {key} = {value!r}: must be a non-negative integer DBU")

    @classmethod
    def uniform(cls, margin):
        return cls(margin, margin, margin, margin)

    def oriented(self, orientation):
        """The halo as seen after placing its macro with ``orientation``."""
        left, right = (self.right, self.left) if orientation.flip_x else (self.left, self.right)
        bottom, top = (self.top, self.bottom) if orientation.flip_y else (self.bottom, self.top)
        return Halo(left, bottom, right, top)

    def around(self, rect):
        return rect.expanded(self.left, self.bottom, self.right, self.top)

    @property
    def is_zero(self):
        return not (self.left or self.bottom or self.right or self.top)
