"""Helpers that size and arrange blocks: macro-array blocks, soft logic blocks, shelf packing.

These are what a floorplan script reaches for after the primitives of :mod:`.layout`: a block
holding an array of macros with the technology's spacing and halos, a soft block sized for its
standard cells, and a packer that puts blocks side by side in shelves of a given width. Every
size and position they produce is on the technology's site / row grid.
"""

import math

from .layout import Block, Orientation

__all__ = ["macro_array_block", "soft_block", "ShelfPacker"]


def macro_array_block(name, master, *, count, cols, technology, tag=None, names=None,
                      flip_rows=True):
    """A block holding ``count`` instances of ``master`` in ``cols`` columns.

    Neighbouring macros are ``max(spacing, halo)`` apart, and the same margin lines the block
    inside, so macros of two abutting blocks keep the spacing too and no halo leaves its block.
    ``flip_rows`` mirrors odd rows (FS) so macro rows share power pins, as is usual.
    """
    tech = technology
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"macro array {name}: count = {count!r} must be a positive integer")
    if not isinstance(cols, int) or not 1 <= cols <= count:
        raise ValueError(f"macro array {name}: cols = {cols!r} must be 1..{count}")
    halo = master.halo
    gap = max(tech.macro_spacing, halo.left, halo.right, halo.bottom, halo.top)
    pad_x, pad_y = tech.snap_x(gap), tech.snap_y(gap)
    pitch_x, pitch_y = tech.snap_x(master.width + gap), tech.snap_y(master.height + gap)
    rows = math.ceil(count / cols)
    width = 2 * pad_x + (cols - 1) * pitch_x + master.width
    height = 2 * pad_y + (rows - 1) * pitch_y + master.height
    block = Block(name, width=tech.snap_x(width), height=tech.snap_y(height), tag=tag)
    block.add_array(name, master, x=pad_x, y=pad_y, rows=rows, cols=cols, pitch_x=pitch_x,
                    pitch_y=pitch_y, flip_rows=flip_rows, count=count, names=names)
    return block


def soft_block(name, *, logic_area, technology, width=None, height=None, tag=None):
    """A block for ``logic_area`` (DBU^2) of standard cells at the technology's target density.

    Give ``width`` or ``height`` (DBU) and the other side is derived; give neither for a square.
    """
    tech = technology
    need = math.ceil(logic_area / tech.target_utilization)
    if width is not None and height is not None:
        raise ValueError(f"soft block {name}: give width or height, not both")
    if width is not None:
        width = tech.snap_x(width)
        height = tech.snap_y(max(1, math.ceil(need / width)))
    elif height is not None:
        height = tech.snap_y(height)
        width = tech.snap_x(max(1, math.ceil(need / height)))
    else:
        side = math.isqrt(need) + 1
        width, height = tech.snap_x(side), tech.snap_y(side)
    # Rounding one side down can leave the other short; grow until the cells fit.
    while width * height < need:
        height += tech.row_height
    return Block(name, width=width, height=height, tag=tag, logic_area=logic_area)


class ShelfPacker:
    """Places blocks left to right in shelves of a fixed width, bottom to top.

    :meth:`place` puts a fixed-size block on the current shelf (or opens a new one when it does
    not fit); :meth:`fill` makes a soft block that takes the rest of the current shelf at the
    shelf's height when its cells fit there, and a full-width strip on a new shelf otherwise.
    Positions are relative to the packer's origin; :attr:`placements` lists (block, x, y).
    """

    def __init__(self, width, *, technology):
        self._width = technology.snap_x(width)
        self._tech = technology
        self._placements = []
        self._x = 0
        self._y = 0
        self._shelf = 0

    width = property(lambda self: self._width)
    placements = property(lambda self: tuple(self._placements))

    @property
    def height(self):
        return self._y + self._shelf

    @property
    def used_width(self):
        return max((x + b.width for b, x, _ in self._placements), default=0)

    def new_shelf(self):
        if self._shelf:
            self._y += self._shelf
        self._x, self._shelf = 0, 0

    def place(self, block):
        if self._x and self._x + block.width > self._width:
            self.new_shelf()
        self._placements.append((block, self._x, self._y))
        self._x += block.width
        self._shelf = max(self._shelf, block.height)
        return self._placements[-1][1:]

    def fill(self, name, *, logic_area, tag=None):
        tech = self._tech
        need = math.ceil(logic_area / tech.target_utilization)
        room = self._width - self._x
        if self._shelf and room > 0 and room * self._shelf >= need:
            block = soft_block(name, logic_area=logic_area, technology=tech, height=self._shelf,
                               tag=tag)
            if block.height == self._shelf and block.width <= room:
                self.place(block)
                return block
        self.new_shelf()
        block = soft_block(name, logic_area=logic_area, technology=tech, width=self._width, tag=tag)
        self.place(block)
        self.new_shelf()
        return block

    def add_to(self, parent, *, x=0, y=0, region_for=(), orientation=Orientation.N):
        """Instantiate every placed block in ``parent`` at the packer's origin (x, y).

        Blocks whose names are in ``region_for`` get fence placement bounds.
        """
        return [parent.add(block.name, block, x=x + bx, y=y + by, orientation=orientation,
                           region="fence" if block.name in region_for else None)
                for block, bx, by in self._placements]
