"""Floorplanning: layout objects, checks, outputs, and the VTA floorplan generator.

A floorplan is written as a small Python program, as in the Intel Labs paper (§IV.B): define
blocks, fill them with macros whose sizes come from a technology description, instantiate and
flip them, check, and write the result for the physical-design tools.

>>> from avta.floorplan import Block, Floorplan, load_technology
>>> tech = load_technology("generic45")
>>> ram = tech.sram(1024, 64)                       # a legal SRAM macro of that technology
>>> bank = Block("bank", width=tech.snap_x(2 * ram.width + tech.dbu(20)),
...              height=tech.snap_y(ram.height + tech.dbu(20)))
>>> row = bank.add_array("ram", ram, x=tech.dbu(5.7), y=tech.dbu(5.6), rows=1, cols=2,
...                      pitch_x=tech.snap_x(ram.width + tech.dbu(8)))
>>> die = Block("top", width=tech.snap_x(2 * bank.width) + 2 * tech.core_margin,
...             height=bank.height + 2 * tech.core_margin)
>>> m = tech.core_margin
>>> _ = die.add("left", bank, x=m, y=m)
>>> _ = die.add("right", bank, x=m + bank.width, y=m, orientation="FN")   # mirrored copy
>>> fp = Floorplan("demo", die=die, dbu_per_micron=tech.dbu_per_micron, core_margin=m,
...                grid=tech.grid, technology=tech)
>>> [str(v) for v in fp.check()]
[]
>>> [p.path for p in fp.macros()]
['left/ram_0_0', 'left/ram_0_1', 'right/ram_0_0', 'right/ram_0_1']

Modules: :mod:`.geometry` (orientations, rectangles, halos), :mod:`.layout` (macros, blocks,
instances, arrays, the floorplan), :mod:`.tech` (technology descriptions and SRAM shapes),
:mod:`.checks`, :mod:`.pack` (array blocks, soft blocks, shelf packing), :mod:`.wires` (the
wire-length estimate), :mod:`.writers` (SVG, PNG, DEF, Tcl, Hammer YAML, JSON) and :mod:`.vta`
(the VTA generator behind ``avta floorplan``).
"""

from .checks import KINDS, Violation, check
from .geometry import Halo, Orientation, OrientationError, Rect
from .layout import REGION_TYPES, Block, Floorplan, Instance, InstanceArray, Macro, Placed
from .pack import ShelfPacker, macro_array_block, soft_block
from .tech import Technology, TechnologyError, load_technology, shipped_technologies
from .wires import Bus, WireReport, estimate_wires

__all__ = [
    "Orientation", "OrientationError", "Rect", "Halo",
    "Macro", "Block", "Instance", "InstanceArray", "Floorplan", "Placed", "REGION_TYPES",
    "check", "Violation", "KINDS",
    "Technology", "TechnologyError", "load_technology", "shipped_technologies",
    "macro_array_block", "soft_block", "ShelfPacker",
    "Bus", "WireReport", "estimate_wires",
]
