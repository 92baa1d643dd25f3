"""Every kind of violation, planted, found and reported with both objects and the amount."""

import pytest

from avta.floorplan.checks import KINDS, check
from avta.floorplan.geometry import Halo
from avta.floorplan.layout import Block, Floorplan, Macro

DBU = 1000       # so 1000 DBU = 1 um and the amounts read easily


def _ram(halo=0):
    return Macro("ram", width=10 * DBU, height=5 * DBU, halo=Halo.uniform(halo))


def _fp(die, *, spacing=2 * DBU, grid=None, margin=0, density=1.0):
    fp = Floorplan("fp", die=die, dbu_per_micron=DBU, core_margin=margin, grid=grid,
                   max_density=density)
    return fp, check(fp, spacing=spacing)


def _clean_die():
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("a", _ram(), x=10 * DBU, y=10 * DBU)
    die.add("b", _ram(), x=22 * DBU, y=10 * DBU)           # 2 um gap: exactly the spacing
    return die


def test_a_clean_floorplan_has_no_violations():
    assert _fp(_clean_die())[1] == []


def _only(violations, kind):
    found = [v for v in violations if v.kind == kind]
    assert len(found) == 1, violations
    assert kind in KINDS
    return found[0]


def test_overlapping_macros():
    die = _clean_die()
    die.add("c", _ram(), x=17 * DBU, y=12 * DBU)
    _, found = _fp(die, spacing=0)
    hits = [v for v in found if v.kind == "overlap"]
    assert {(v.first.path, v.second.path) for v in hits} == {("a", "c"), ("c", "b")}
    a_c = next(v for v in hits if v.first.path == "a")
    assert a_c.amount == pytest.approx(3 * 3) and a_c.unit == "um^2"     # 3 x 3 um
    assert (a_c.second.x0, a_c.second.y0, a_c.second.x1, a_c.second.y1) == (17, 12, 27, 17)
    assert "a (10, 10)-(20, 15) and c (17, 12)-(27, 17)" in str(a_c)
    assert "3 x 3 um = 9 um^2" in str(a_c)


def test_overlapping_sibling_blocks():
    die = Block("top", width=100 * DBU, height=100 * DBU)
    logic = Block("logic", width=20 * DBU, height=20 * DBU)
    die.add("l0", logic, x=0, y=0)
    die.add("l1", logic, x=15 * DBU, y=10 * DBU)
    v = _only(_fp(die)[1], "overlap")
    assert (v.first.path, v.second.path, v.amount) == ("l0", "l1", 50.0)


def test_macros_too_close():
    die = _clean_die()
    die.add("c", _ram(), x=10 * DBU, y=16 * DBU)           # 1 um above a; the spacing is 2
    v = _only(_fp(die)[1], "spacing")
    assert (v.first.path, v.second.path) == ("a", "c")
    assert v.amount == pytest.approx(1.0) and v.unit == "um"
    assert "1 um apart" in v.detail and "macro spacing 2 um" in v.detail


def test_macro_inside_a_halo():
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("a", _ram(halo=5 * DBU), x=10 * DBU, y=10 * DBU)
    die.add("b", _ram(), x=23 * DBU, y=10 * DBU)               # 3 um right of a; halo is 5
    v = _only(_fp(die, spacing=0)[1], "spacing")
    assert v.amount == pytest.approx(2.0)
    assert "inside the keep-out of a" in v.detail and "halo 5/5/5/5 um" in v.detail


def test_macros_of_different_blocks_are_checked_against_each_other():
    left = Block("left", width=20 * DBU, height=20 * DBU)
    left.add("m", _ram(), x=10 * DBU, y=0)                     # touches the right edge
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("l", left, x=0, y=0)
    die.add("r", left, x=20 * DBU, y=0, orientation="FN")      # its macro touches the left edge
    v = _only(_fp(die)[1], "spacing")
    assert (v.first.path, v.second.path) == ("l/m", "r/m") and v.amount == pytest.approx(2.0)


def test_child_outside_its_parent():
    block = Block("blk", width=20 * DBU, height=20 * DBU)
    block.add("m", _ram(), x=15 * DBU, y=0)                    # 10 wide: 5 um sticks out
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("u", block, x=10 * DBU, y=10 * DBU)
    v = _only(_fp(die)[1], "outside")
    assert (v.first.path, v.second.path, v.amount) == ("u/m", "u", 5.0)


def test_top_level_instance_outside_the_core():
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("m", _ram(), x=2 * DBU, y=50 * DBU)                # core starts at 5 um
    v = _only(_fp(die, margin=5 * DBU)[1], "outside")
    assert (v.first.path, v.second.path, v.amount) == ("m", "core", 3.0)


def test_duplicate_instance_names():
    die = _clean_die()
    die.add("a", _ram(), x=60 * DBU, y=60 * DBU)
    v = _only(_fp(die)[1], "duplicate-name")
    assert v.first.path == v.second.path == "a"
    assert (v.first.x0, v.second.x0) == (10, 60) and v.amount == 2


def test_macro_off_the_grid():
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("m", _ram(), x=10 * DBU + 100, y=7 * DBU)
    v = _only(_fp(die, grid=(200, 1400))[1], "off-grid")
    assert v.first.path == "m" and v.second is None
    assert v.amount == pytest.approx(0.1)                       # 7000 % 1400 = 0


def test_block_without_room_for_its_cells():
    logic = Block("logic", width=10 * DBU, height=10 * DBU, logic_area=90 * DBU * DBU)
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("l", logic, x=0, y=0)
    v = _only(_fp(die, density=0.7)[1], "capacity")
    assert v.first.path == "l" and v.amount == pytest.approx(20.0)   # 90 - 100 x 0.7


def test_placement_bounds_inside_placement_bounds():
    inner = Block("inner", width=10 * DBU, height=10 * DBU)
    outer = Block("outer", width=40 * DBU, height=40 * DBU)
    outer.add("i", inner, x=0, y=0, region="fence")
    die = Block("top", width=100 * DBU, height=100 * DBU)
    die.add("o", outer, x=0, y=0, region="guide")
    v = _only(_fp(die)[1], "region-nesting")
    assert (v.first.path, v.second.path) == ("o", "o/i")


def test_violations_serialise():
    die = _clean_die()
    die.add("a", _ram(), x=60 * DBU, y=60 * DBU)
    v = _fp(die)[1][0]
    data = v.to_dict()
    assert data["kind"] == "duplicate-name" and data["first"]["path"] == "a"
