"""The two VTA floorplan styles of the Intel Labs paper (§IV.B).

*functional* groups by design function, as the original VTA hierarchy does: one block of all WGT
macros, one GEMM block, one ACC block, and so on, packed in shelves from the bottom up (WGT,
then the GEMM strip, then the other memories with the ALU and control logic).

*tiled* groups around the accumulator: a tile holds one slice of ACC output lanes with the WGT
columns and the GEMM and ALU lanes that produce them. One tile block is defined and instantiated
in a grid; the rows below the shared spine (INP, OUT, UOP and the control logic, which every tile
uses) are mirrored (FS) so that every tile has its ACC macros next to the spine.

Both builders try a handful of shapes and keep the one with the smallest die area, slightly
favouring square dies. Both return ``(die block, groups)``; ``groups`` says where each function
went, for the wire estimate:

* ``groups["logic"][f]`` for ``f`` in gemm, alu, ctrl: the block paths of its lane slices, in
  lane order (one per tile, or a single block);
* ``groups["memory"][m]`` for each scratchpad: one entry per macro column, in column (lane)
  order, of ``(slice, paths)``: the logic slice it feeds and the paths of its banks.
"""

import itertools
import math

from ..layout import Block, Orientation
from .inventory import TILED
from ..pack import ShelfPacker, macro_array_block, soft_block

__all__ = ["build_functional", "build_tiled", "STYLES"]

SHARED = ("inp", "out", "uop")
#: The step of the spine widths the tiled style tries, in µm. At 10 µm a bigger ACC on ``tiny``
#: got a smaller die (0.5167 → 0.5165 mm², LOG_ACC_BUFF_SIZE 13 → 14) once the micro-ops took
#: four macros: its tile's width gave it a spine width the grid did not offer the smaller one.
#: At 5 µm the search is about a quarter slower and the dies a little smaller.
SPINE_STEP_UM = 5


def _memory_block(name, plan, inventory, technology, *, cols, columns=None):
    """A macro-array block of ``plan``'s macros (of ``columns``), named as the inventory says.

    Inside a tile, columns are numbered from 0 (the tile is one definition used by every tile);
    the global column is ``tile x columns per tile + local column``.
    """
    slots = plan.slots(columns)
    first = slots[0].column
    cols = min(cols, len(slots))

    def names(row, col):
        slot = slots[row * cols + col]
        return f"{plan.memory}_c{slot.column - first}_b{slot.bank}"

    return macro_array_block(name, plan.master, count=len(slots), cols=cols,
                             technology=technology, tag=plan.memory, names=names)


#: The widest die the styles choose when one within it exists: 2:1.
MAX_ASPECT = 2.0


def _score(width, height):
    """How a candidate die ranks (smaller is better): its area among dies within
    :data:`MAX_ASPECT`, which all rank before longer ones (those by area times a penalty on
    their aspect). Area first keeps a bigger memory from ever winning a smaller die by a luckier
    aspect ratio."""
    aspect = max(width, height) / min(width, height)
    if aspect <= MAX_ASPECT:
        return (0, width * height)
    return (1, width * height * aspect ** 0.75)


def _square_cols(plan, technology, count=None):
    """Columns that make an array of ``count`` macros of ``plan`` closest to square."""
    count = count or plan.count
    w, h = plan.master.width, plan.master.height
    return max(1, min(count, round(math.sqrt(count * h / w))))


def _die(name, content_width, content_height, technology):
    margin = technology.core_margin
    return Block(name, width=content_width + 2 * margin, height=content_height + 2 * margin)


def build_functional(design, inventory, areas, technology):
    """The functional floorplan: one block per function. ``areas`` maps logic -> DBU^2."""
    tech = technology
    total = sum(p.count * p.master.area for p in inventory.plans.values())
    total += sum(a / tech.target_utilization for a in areas.values())
    best = None
    for factor in (0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.4, 1.6):
        width = tech.snap_x(int(math.sqrt(total) * factor))
        packer = ShelfPacker(width, technology=tech)
        packer.place(_fit_width("wgt", inventory, tech, width, wide=True))
        packer.new_shelf()
        packer.fill("gemm", logic_area=areas["gemm"], tag="gemm")
        for memory in ("acc", "out", "inp", "uop"):
            packer.place(_fit_width(memory, inventory, tech, width))
        packer.fill("alu", logic_area=areas["alu"], tag="alu")
        packer.fill("ctrl", logic_area=areas["ctrl"], tag="ctrl")
        score = _score(packer.used_width, packer.height)
        if best is None or score < best[0]:
            best = (score, packer)
    packer = best[1]
    die = _die(design, tech.snap_x(packer.used_width), tech.snap_y(packer.height), tech)
    margin = tech.core_margin
    packer.add_to(die, x=margin, y=margin, region_for=("gemm", "alu", "ctrl"))
    groups = {"logic": {name: [name] for name in ("gemm", "alu", "ctrl")},
              "memory": {m: _columns(inventory[m], f"{m}/", 0, range(inventory[m].columns))
                         for m in inventory.plans}}
    return die, groups


def _columns(plan, prefix, slice_index, columns):
    """(slice, bank paths) of each of ``columns``, numbered from the first, under ``prefix``."""
    first = columns[0]
    return [(slice_index, tuple(f"{prefix}{plan.memory}_c{c - first}_b{b}"
                                for b in range(plan.banks))) for c in columns]


def _fit_width(memory, inventory, technology, width, *, wide=False):
    """The memory's array block, as square as it can be (or as ``wide``) within ``width``."""
    plan = inventory[memory]
    gap = max(technology.macro_spacing, plan.master.halo.right)
    pitch, pad = technology.snap_x(plan.master.width + gap), technology.snap_x(gap)
    fit = max(1, (width - 2 * pad - plan.master.width) // pitch + 1)
    cols = min(plan.count, fit) if wide else min(fit, _square_cols(plan, technology))
    return _memory_block(memory, plan, inventory, technology, cols=cols)


def _col_candidates(count, square):
    """Column counts to try for an array of ``count`` macros whose squarest is ``square``."""
    return sorted({max(1, min(count, round(square * f))) for f in (0.5, 0.7, 1.0, 1.4, 2.0)})


def _tile(inventory, areas, technology, wgt_cols, acc_cols):
    """The tile definition: ACC macros at the bottom, GEMM | ALU, WGT macros on top."""
    tech = technology
    wgt_plan, acc_plan = inventory["wgt"], inventory["acc"]
    per_wgt, per_acc = inventory.columns_per_tile("wgt"), inventory.columns_per_tile("acc")
    wgt = _memory_block("wgt", wgt_plan, inventory, tech, cols=wgt_cols, columns=range(per_wgt))
    acc = _memory_block("acc", acc_plan, inventory, tech, cols=acc_cols, columns=range(per_acc))
    width = max(wgt.width, acc.width)
    gemm_area, alu_area = areas["gemm"] / inventory.tiles, areas["alu"] / inventory.tiles
    gemm_w = tech.snap_x(int(width * gemm_area / (gemm_area + alu_area)))
    gemm = soft_block("gemm", logic_area=math.ceil(gemm_area), technology=tech, width=gemm_w,
                      tag="gemm")
    alu = soft_block("alu", logic_area=math.ceil(alu_area), technology=tech,
                     width=max(tech.site_width, width - gemm.width), tag="alu")
    strip = max(gemm.height, alu.height)
    gemm = soft_block("gemm", logic_area=math.ceil(gemm_area), technology=tech, height=strip,
                      tag="gemm")
    alu = soft_block("alu", logic_area=math.ceil(alu_area), technology=tech, height=strip,
                     tag="alu")
    width = max(width, gemm.width + alu.width)
    tile = Block("tile", width=width, height=acc.height + strip + wgt.height, tag="tile")
    tile.add("acc", acc, x=_centre(width, acc.width, tech), y=0)
    tile.add("gemm", gemm, x=0, y=acc.height, region="fence")
    tile.add("alu", alu, x=gemm.width, y=acc.height, region="fence")
    tile.add("wgt", wgt, x=_centre(width, wgt.width, tech), y=acc.height + strip)
    return tile


def _centre(outer, inner, technology):
    """The x that centres ``inner`` in ``outer``, rounded down to a site."""
    return (outer - inner) // 2 // technology.site_width * technology.site_width


def _spine(inventory, areas, technology, width):
    """The shared memories and the control logic packed in shelves of ``width``: the order of
    the memories that leaves the lowest spine."""
    best = None
    for order in itertools.permutations(SHARED):
        packer = ShelfPacker(width, technology=technology)
        for memory in order:
            packer.place(_fit_width(memory, inventory, technology, width))
        packer.fill("ctrl", logic_area=areas["ctrl"], tag="ctrl")
        if best is None or (packer.height, packer.used_width) < (best.height, best.used_width):
            best = packer
    return best


def build_tiled(design, inventory, areas, technology, *, rows=None):
    """The ACC-centric floorplan: a grid of identical tiles around a shared spine.

    ``rows`` fixes the number of tile rows (by default the best scoring one); the rows below the
    spine, ``rows // 2`` of them, are mirrored.
    """
    tech = technology
    tiles = inventory.tiles
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int)
                             or not 1 <= rows <= tiles):
        raise ValueError(f"tile rows = {rows!r}: must be 1..{tiles} (the number of tiles)")
    total = sum(p.count * p.master.area for p in inventory.plans.values())
    total += sum(a / tech.target_utilization for a in areas.values())
    per_tile = inventory.columns_per_tile("wgt") * inventory["wgt"].banks
    candidates = sorted({max(1, min(per_tile, round(per_tile ** 0.5 * f)))
                         for f in (0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0)} | {per_tile})
    acc_count = inventory.columns_per_tile("acc") * inventory["acc"].banks
    acc_candidates = _col_candidates(acc_count, _square_cols(inventory["acc"], tech, acc_count))
    # Spine widths on a fixed grid (SPINE_STEP_UM), the same for every configuration, so that
    # a bigger memory is not packed at widths a smaller one never tried.
    step = tech.snap_x(SPINE_STEP_UM * tech.dbu_per_micron)
    spine_widths = range(step * max(1, int(math.sqrt(total) * 0.5) // step),
                         int(math.sqrt(total) * 2.0) + step, step)
    spines = {}
    best = None
    for wgt_cols, acc_cols in itertools.product(candidates, acc_candidates):
        tile = _tile(inventory, areas, tech, wgt_cols, acc_cols)
        for grid_rows in ([rows] if rows else range(1, tiles + 1)):
            cols = math.ceil(tiles / grid_rows)
            if (grid_rows - 1) * cols >= tiles:
                continue
            # A grid narrower than the shared memories may still be best with a wider spine.
            for spine_width in {cols * tile.width, *spine_widths}:
                if spine_width not in spines:
                    spines[spine_width] = _spine(inventory, areas, tech, spine_width)
                spine = spines[spine_width]
                width = max(cols * tile.width, spine.used_width)
                height = grid_rows * tile.height + spine.height
                score = _score(width, height)
                if best is None or score < best[0]:
                    best = (score, tile, grid_rows, cols, spine, width, height)
    if best is None:
        raise ValueError(f"tile rows = {rows}: {tiles} tiles in {rows} rows of "
                         f"{math.ceil(tiles / rows)} leave a row empty; choose fewer rows")
    _, tile, rows, cols, spine, width, height = best
    die = _die(design, tech.snap_x(width), tech.snap_y(height), tech)
    margin = tech.core_margin
    below = rows // 2
    groups = {"logic": {"gemm": [], "alu": [], "ctrl": ["ctrl"]},
              "memory": {m: [] for m in inventory.plans}}
    for t in range(tiles):
        row, col = divmod(t, cols)
        if row < below:
            y, orientation = margin + row * tile.height, Orientation.FS
        else:
            y, orientation = margin + spine.height + row * tile.height, Orientation.N
        die.add(f"tile_{t}", tile, x=margin + col * tile.width, y=y, orientation=orientation)
        for function in ("gemm", "alu"):
            groups["logic"][function].append(f"tile_{t}/{function}")
        for memory in TILED:
            per = inventory.columns_per_tile(memory)
            groups["memory"][memory] += _columns(inventory[memory], f"tile_{t}/{memory}/", t,
                                                 range(t * per, (t + 1) * per))
    spine.add_to(die, x=margin, y=margin + below * tile.height, region_for=("ctrl",))
    for memory in SHARED:
        groups["memory"][memory] = _columns(inventory[memory], f"{memory}/", 0,
                                            range(inventory[memory].columns))
    return die, groups


STYLES = {"functional": build_functional, "tiled": build_tiled}
