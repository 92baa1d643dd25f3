"""Layout objects: hierarchical placement in parent coordinates, flips, arrays, halos, reuse."""

import pytest

from avta.floorplan.geometry import Halo, Orientation, Rect
from avta.floorplan.layout import Block, Floorplan, Macro


def _ram(**kw):
    return Macro("ram", width=30, height=10, **kw)


def _die(width=1000, height=1000):
    return Block("top", width=width, height=height)


def _fp(die, **kw):
    return Floorplan("fp", die=die, dbu_per_micron=1000, **kw)


@pytest.mark.parametrize("orientation,rect,child_orientation", [
    # The block is 100 x 50 at (200, 300); its macro sits at (10, 20) as drawn.
    ("N", Rect(210, 320, 240, 330), "N"),
    ("FN", Rect(260, 320, 290, 330), "FN"),      # x mirrored: 100 - 10 - 30 = 60
    ("FS", Rect(210, 320, 240, 330), "FS"),      # y mirrored: 50 - 20 - 10 = 20
    ("S", Rect(260, 320, 290, 330), "S"),
])
def test_children_follow_their_parent_placement(orientation, rect, child_orientation):
    block = Block("blk", width=100, height=50)
    block.add("m", _ram(), x=10, y=20)
    die = _die()
    die.add("u", block, x=200, y=300, orientation=orientation)
    placed = _fp(die).find("u/m")
    assert placed.rect == rect
    assert placed.orientation is Orientation[child_orientation]
    assert placed.parent_path == "u"


def test_nested_flips_compose():
    inner = Block("inner", width=40, height=20)
    inner.add("m", _ram(), x=0, y=0, orientation="FS")
    outer = Block("outer", width=100, height=100)
    outer.add("i", inner, x=60, y=0, orientation="FN")
    die = _die()
    die.add("o", outer, x=0, y=0, orientation="FS")
    placed = _fp(die).find("o/i/m")
    # FN inside outer: the macro moves to x 60 + (40 - 30) = 70; FS of outer moves y to 100 - 10.
    assert placed.rect == Rect(70, 90, 100, 100)
    assert placed.orientation is Orientation.FN       # FS then FN then FS


def test_one_definition_instanced_twice_gives_distinct_paths():
    tile = Block("tile", width=50, height=50)
    tile.add("m", _ram(), x=0, y=0)
    die = _die()
    die.add("t0", tile, x=0, y=0)
    die.add("t1", tile, x=50, y=0, orientation="FN")
    paths = {p.path: p.rect for p in _fp(die).macros()}
    assert paths == {"t0/m": Rect(0, 0, 30, 10), "t1/m": Rect(70, 0, 100, 10)}
    assert die.macro_area == 2 * 300


def test_arrays_place_with_pitch_names_and_flips():
    block = _die()
    array = block.add_array("bank", _ram(), x=5, y=7, rows=2, cols=3, pitch_x=40, pitch_y=15,
                            flip_rows=True, flip_cols=True, count=5)
    assert len(array) == 5 and array.rows == 2 and array.cols == 3
    assert [i.name for i in array] == ["bank_0_0", "bank_0_1", "bank_0_2", "bank_1_0", "bank_1_1"]
    assert array.at(1, 1).rect == Rect(45, 22, 75, 32)
    assert [i.orientation.name for i in array] == ["N", "FN", "N", "FS", "S"]
    assert array.bbox == Rect(5, 7, 115, 32)
    with pytest.raises(IndexError, match="row 1, column 2"):
        array.at(1, 2)


def test_array_default_pitch_clears_the_halo():
    ram = _ram(halo=Halo.uniform(4))
    array = _die().add_array("a", ram, x=0, y=0, rows=1, cols=2)
    assert array.at(0, 1).x == 34


def test_array_arguments_are_checked():
    with pytest.raises(ValueError, match="pitch 20 x 10 is smaller"):
        _die().add_array("a", _ram(), x=0, y=0, rows=1, cols=2, pitch_x=20)
    with pytest.raises(ValueError, match="count = 7: must be 1..6"):
        _die().add_array("a", _ram(), x=0, y=0, rows=2, cols=3, count=7)
    with pytest.raises(ValueError, match="rows = 0"):
        _die().add_array("a", _ram(), x=0, y=0, rows=0, cols=3)


def test_halo_is_reported_in_die_coordinates():
    die = _die()
    die.add("m", _ram(halo=Halo(1, 2, 3, 4)), x=100, y=100, orientation="S")
    placed = _fp(die).find("m")
    assert placed.halo == Halo(3, 4, 1, 2)
    assert placed.halo_rect == Rect(97, 96, 131, 112)


@pytest.mark.parametrize("build,message", [
    (lambda: Block("a/b", width=1, height=1), "'a/b'"),
    (lambda: Block("blk", width=0, height=1), "width = 0"),
    (lambda: Macro("m", width=1.5, height=1), "width = 1.5"),
    (lambda: _die().add("1x", _ram(), x=0, y=0), "'1x'"),
    (lambda: _die().add("m", _ram(), x=0.5, y=0), "x = 0.5"),
    (lambda: _die().add("m", _ram(), x=0, y=0, region="fence"), "placement bounds belong"),
    (lambda: _die().add("b", _die(), x=0, y=0, halo=Halo(1)), "a halo belongs on a macro"),
    (lambda: _die().add("b", _die(), x=0, y=0, region="cage"), "region = 'cage'"),
    (lambda: _die().add("m", _ram(), x=0, y=0, orientation="R90"), "90 degrees"),
    (lambda: _fp(_die(), core_margin=600), "core margin 600 leaves no core"),
    (lambda: _fp(_die(), grid=(1,)), "grid = (1,)"),
])
def test_bad_arguments_are_refused_with_the_value(build, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_areas_and_utilization():
    logic = Block("logic", width=100, height=100, logic_area=3000)
    die = _die(200, 200)
    die.add("l", logic, x=0, y=0)
    die.add("m", _ram(), x=150, y=150)
    fp = _fp(die, core_margin=0)
    assert fp.macro_area == 300 and fp.logic_area == 3000
    assert fp.utilization == pytest.approx(3300 / 40000)
    assert fp.um(1500) == 1.5 and fp.um2(2_000_000) == 2.0
    with pytest.raises(KeyError, match="no instance 'x'"):
        fp.find("x")
