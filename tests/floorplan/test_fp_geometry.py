"""Orientations (one canonical value, every naming), rectangles and halos."""

import pytest

from avta.floorplan.geometry import Halo, Orientation, OrientationError, Rect

# One row per orientation: DEF name, OpenROAD name, Hammer name, flip_x, flip_y.
NAMES = [
    ("N", "R0", "r0", False, False),
    ("S", "R180", "r180", True, True),
    ("FN", "MY", "my", True, False),
    ("FS", "MX", "mx", False, True),
]


@pytest.mark.parametrize("def_name,openroad,hammer,flip_x,flip_y", NAMES)
def test_names_map_to_one_orientation(def_name, openroad, hammer, flip_x, flip_y):
    o = Orientation.parse(def_name)
    assert Orientation.parse(openroad) is o
    assert Orientation.parse(hammer) is o
    assert Orientation.parse(openroad.lower()) is o
    assert (o.def_name, o.openroad_name, o.hammer_name) == (def_name, openroad, hammer)
    assert (o.flip_x, o.flip_y) == (flip_x, flip_y)


@pytest.mark.parametrize("name", ["E", "W", "FE", "FW", "R90", "R270", "MXR90", "MYR90"])
def test_quarter_turns_are_refused_with_a_reason(name):
    with pytest.raises(OrientationError, match="90 degrees"):
        Orientation.parse(name)


def test_unknown_names_show_the_value():
    with pytest.raises(OrientationError, match="'up'"):
        Orientation.parse("up")
    with pytest.raises(OrientationError, match="3"):
        Orientation.parse(3)


@pytest.mark.parametrize("inner,outer,expected", [
    ("N", "FS", "FS"), ("FS", "FS", "N"), ("FN", "FS", "S"), ("S", "FN", "FS"), ("FN", "N", "FN"),
])
def test_composition_is_the_exclusive_or_of_mirrors(inner, outer, expected):
    assert Orientation[inner].then(Orientation[outer]) is Orientation[expected]


def test_rect_measures_and_intersections():
    a = Rect.of(0, 0, 10, 4)
    assert (a.width, a.height, a.area, a.center) == (10, 4, 40, (5.0, 2.0))
    assert a.intersection(Rect(8, 1, 20, 3)) == Rect(8, 1, 10, 3)
    assert a.intersection(Rect(10, 0, 12, 4)) is None        # touching is not overlapping
    assert a.contains(Rect(1, 1, 9, 3)) and not a.contains(Rect(1, 1, 11, 3))
    assert a.protrusion(Rect(-3, 1, 9, 6)) == 3


def test_rect_rejects_bad_coordinates():
    with pytest.raises(ValueError, match="negative size"):
        Rect(5, 0, 4, 1)
    with pytest.raises(TypeError, match="1.5"):
        Rect(0, 0, 1.5, 1)


@pytest.mark.parametrize("orientation,expected", [
    ("N", Rect(1, 2, 4, 3)), ("FN", Rect(6, 2, 9, 3)), ("FS", Rect(1, 7, 4, 8)),
    ("S", Rect(6, 7, 9, 8)),
])
def test_rect_mirrors_inside_its_box(orientation, expected):
    assert Rect(1, 2, 4, 3).mirrored_in(10, 10, Orientation[orientation]) == expected


def test_halo_sides_follow_mirroring():
    halo = Halo(1, 2, 3, 4)
    assert halo.oriented(Orientation.N) == halo
    assert halo.oriented(Orientation.FN) == Halo(3, 2, 1, 4)
    assert halo.oriented(Orientation.FS) == Halo(1, 4, 3, 2)
    assert halo.oriented(Orientation.S) == Halo(3, 4, 1, 2)
    assert halo.around(Rect(10, 10, 20, 20)) == Rect(9, 8, 23, 24)
    with pytest.raises(ValueError, match="-1"):
        Halo(left=-1)
