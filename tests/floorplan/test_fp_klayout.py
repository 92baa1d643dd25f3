"""The DEF and LEF that ``avta floorplan`` writes, read back by KLayout (a real LEF/DEF reader,
not ours): every placed macro's name, position, orientation and size, every fenced block's
region, the die, and every block abstract's size agree with the floorplan."""

from pathlib import Path

import klayout.db as kdb
import pytest

from avta.floorplan.cli import write_vta_floorplan
from avta.floorplan.geometry import Orientation
from avta.floorplan.vta import build_floorplan
from avta.floorplan.writers import floorplan_to_lef
from avta.floorplan.writers.lef_ import block_macro_name
from avta.isa.config import load_config

#: KLayout's simple transformation codes (r0, r180, m0, m90) as DEF orientations: m0 mirrors
#: y (FS), m90 mirrors x (FN).
KLAYOUT_ORIENTATION = {kdb.Trans.R0.rot: Orientation.N, kdb.Trans.R180.rot: Orientation.S,
                       kdb.Trans.M0.rot: Orientation.FS, kdb.Trans.M90.rot: Orientation.FN}


def _reader_options(floorplan, lef_files=()):
    config = kdb.LEFDEFReaderConfiguration()
    config.dbu = 1 / floorplan.dbu_per_micron
    config.lef_files = [str(Path(p).resolve()) for p in lef_files]
    config.read_lef_with_def = False
    config.produce_cell_outlines = True
    config.cell_outline_layer = "OUTLINE"
    config.produce_regions = True
    config.region_layer = "REGIONS"
    config.instance_property_name = "name"
    options = kdb.LoadLayoutOptions()
    options.lefdef_config = config
    return options


def _layer(layout, name):
    """The index of the layer KLayout named ``name`` (it numbers the layers it creates)."""
    (index,) = [i for i in layout.layer_indexes() if layout.get_info(i).name == name]
    return index


def _box(rect):
    return kdb.Box(rect.x0, rect.y0, rect.x1, rect.y1)


@pytest.fixture(scope="module", params=[("default", "tiled"), ("default", "functional"),
                                        ("tiny", "tiled")])
def read_back(request, tmp_path_factory):
    config, style = request.param
    plan = build_floorplan(load_config(config), style)
    _, paths = write_vta_floorplan(plan, tmp_path_factory.mktemp(f"{config}-{style}"))
    layout = kdb.Layout()
    layout.read(str(paths["def"]), _reader_options(plan.floorplan, [paths["lef"]]))
    return plan.floorplan, layout, paths


def test_every_macro_instance_is_placed_as_the_floorplan_says(read_back):
    fp, layout, _ = read_back
    top = layout.top_cell()
    assert top.name == fp.name
    expected = {p.path: p for p in fp.macros()}
    seen = {}
    for inst in top.each_inst():
        name = inst.property("name")
        assert name not in seen, f"{name} placed twice"
        seen[name] = inst
    assert sorted(seen) == sorted(expected)
    for name, inst in seen.items():
        placed = expected[name]
        assert inst.cell.name == placed.master.name, name
        assert KLAYOUT_ORIENTATION[inst.trans.rot] is placed.orientation, name
        # The cell's outline is the LEF SIZE; placed, it covers the floorplan's rectangle.
        assert inst.cell.bbox() == kdb.Box(0, 0, placed.master.width, placed.master.height), name
        assert inst.bbox() == _box(placed.rect), name


def test_die_and_fenced_regions_agree(read_back):
    fp, layout, _ = read_back
    top = layout.top_cell()
    outline = top.shapes(_layer(layout, "OUTLINE"))
    assert [s.box for s in outline.each()] == [_box(fp.die_rect)]
    regions = sorted(str(s.bbox()) for s in top.shapes(_layer(layout, "REGIONS")).each())
    fenced = sorted(str(_box(p.rect)) for p in fp.walk() if p.region)
    assert regions == fenced and fenced


def test_the_lef_holds_every_master_at_its_size(read_back):
    fp, _, paths = read_back
    layout = kdb.Layout()
    layout.read(str(paths["lef"]), _reader_options(fp))
    cells = {c.name: c.bbox() for c in layout.each_cell()}
    expected = {}
    for placed in fp.walk():
        master = placed.master
        name = master.name if master.is_leaf else block_macro_name(fp, master)
        expected[name] = kdb.Box(0, 0, master.width, master.height)
    assert cells == expected


def test_two_blocks_of_one_name_and_different_sizes_are_refused():
    from avta.floorplan.layout import Block, Floorplan, Macro
    die = Block("die", width=100_000, height=100_000)
    for i, width in enumerate((10_000, 20_000)):
        block = Block("slice", width=width, height=10_000)
        block.add("m", Macro("ram", width=1000, height=1000), x=0, y=0)
        die.add(f"s{i}", block, x=0, y=20_000 * i)
    with pytest.raises(ValueError, match="block definitions are both named die_slice"):
        floorplan_to_lef(Floorplan("die", die=die, dbu_per_micron=1000))
