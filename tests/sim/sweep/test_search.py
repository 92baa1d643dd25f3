"""``avta sweep --search N`` (:mod:`avta.sim.sweep.search`): NSGA-II over the spec's grid, at
most N points, through the sweep's cache; and the hypervolume that compares a front with the
grid's."""

import pytest

from avta.cli import main
from avta.sim.sweep.engine import run_sweep
from avta.sim.sweep.search import grid_index, hypervolume, search
from avta.sim.sweep.spec import parse_spec

_VOLATILE = ("seconds", "cached", "pareto")


@pytest.fixture(scope="module")
def spec(conv_dense_network):
    """18 tiny variants of a two-layer network (a conv and a dense), each well under a second."""
    path = conv_dense_network
    text = (f"base: tiny\nvary:\n  LOG_BLOCK: [2, 3]\n  AXI_DATA_BITS: [64, 128, 256]\n"
            f"  LOG_ACC_BUFF_SIZE: [11, 12, 13]\nworkload: {path}\n")
    return parse_spec(text, source="spec.yaml")


def _stable(row):
    return {k: v for k, v in row.items() if k not in _VOLATILE}


def test_grid_index_is_the_points_order(spec):
    keys = list(spec.vary)
    for point in spec.points():
        positions = {k: spec.vary[k].index(point.values[k]) for k in keys}
        assert grid_index(spec, positions) == point.index


def test_a_search_takes_at_most_n_points_through_the_cache(spec, tmp_path):
    found = search(spec, tmp_path, 8, workers=0, seed=3)
    assert len(found.rows) == 8 == found.ran + found.cached + found.invalid
    assert any(r["pareto"] for r in found.rows)
    grid = run_sweep(spec, tmp_path, workers=0)          # the rest of the grid, no rerun
    assert grid.cached == 8 and grid.ran == 10
    by_index = {r["index"]: r for r in grid.rows}
    assert all(_stable(r) == _stable(by_index[r["index"]]) for r in found.rows)
    # The search's front lies within the grid's hypervolume, and the whole grid found it all.
    ok = [r for r in grid.rows if r["status"] == "ok"]
    ref = (1.1 * max(r["cycles"] for r in ok), 1.1 * max(r["area_mm2"] for r in ok))
    assert 0 < hypervolume(found.rows, ref) <= hypervolume(grid.rows, ref) < 1
    again = search(spec, tmp_path, 100, workers=0, seed=3)   # more than the space: all of it
    assert len(again.rows) == 18 and again.ran == 0


def test_hypervolume_of_a_hand_made_front():
    rows = [{"status": "ok", "host_layers": 0, "cycles": c, "area_mm2": a}
            for c, a in ((2, 8), (4, 4), (8, 2), (6, 6))]        # (6, 6) is dominated
    rows.append({"status": "ok", "host_layers": 1, "cycles": 1, "area_mm2": 1})
    rows.append({"status": "invalid"})
    # (4-2)*(10-8) + (8-4)*(10-4) + (10-8)*(10-2) = 4 + 24 + 16 = 44 of 100
    assert hypervolume(rows, (10, 10)) == pytest.approx(0.44)
    assert hypervolume([], (10, 10)) == 0.0
    with pytest.raises(ValueError, match="must be positive"):
        hypervolume(rows, (0, 10))


def test_the_command_refuses_a_bad_count(tmp_path, capsys, spec):
    path = tmp_path / "spec.yaml"
    path.write_text(f"base: tiny\nvary:\n  LOG_BLOCK: [2, 3]\nworkload: {spec.workload}\n")
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--search", "0"]) == 2
    assert "--search 0" in capsys.readouterr().err
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--workers", "0",
                 "--search", "2"]) == 0
    assert "2 points of 2 searched (2 run" in capsys.readouterr().out
