"""avta sweep's time and energy: each point's clock, latency, energy and EDP from its event
counts, the front over the chosen objectives, and its charts."""

import json

import pytest

from avta.cli import main
from avta.errors import UserError
from avta.sim.sweep.objective_chart import chart_pairs
from avta.sim.sweep.objectives import mark_front, parse_objectives


@pytest.fixture(scope="module")
def network(conv_dense_network):
    """A conv and a dense: a point runs in well under a second."""
    return conv_dense_network


@pytest.mark.parametrize("text", ["latency", "latency,latency", "latency,speed",
                                  "latency,energy,edp,area", ""])
def test_objectives_are_two_or_three_known_ones(text):
    with pytest.raises(UserError, match="two or three different ones"):
        parse_objectives(text)


def test_objectives_parse():
    assert parse_objectives("latency, energy,area") == ("latency", "energy", "area")


def test_a_front_over_three_objectives():
    rows = [{"status": "ok", "latency_us": t, "energy_uj": e, "area_mm2": a}
            for t, e, a in [(1, 5, 5), (5, 1, 5), (5, 5, 1), (2, 2, 2), (3, 3, 3), (1, 5, 5)]]
    rows.append({"status": "ok", "latency_us": 0.1, "energy_uj": 0.1, "area_mm2": 0.1,
                 "host_layers": 1})
    rows.append({"status": "ok", "cycles": 1, "area_mm2": 1})     # no time or energy
    flags = [r["pareto"] for r in mark_front(rows, ("latency", "energy", "area"))]
    assert flags == [True, True, True, True, False, True, False, False]
    # On two of them, (2, 2, 2) dominates (3, 3, 3) and neither extreme is dominated.
    flags = [r["pareto"] for r in mark_front(rows[:5], ("latency", "energy"))]
    assert flags == [True, True, False, True, False]


def test_chart_pairs_put_area_on_x_and_always_draw_latency_and_energy():
    assert chart_pairs(("area", "edp")) == [("edp", "area"), ("latency", "area"),
                                            ("energy", "area")]
    assert chart_pairs(("latency", "energy", "area")) == [("latency", "energy"),
                                                          ("latency", "area"),
                                                          ("energy", "area")]


def test_the_command_reports_time_and_energy(network, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path / "cache"))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"base: tiny\nvary:\n  LOG_BLOCK: [2, 3]\n  LOG_INP_BUFF_SIZE: [10, 12]\n"
                    f"workload: {network}\n")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "0",
                 "--objectives", "latency,energy,area"]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front of latency, energy, area (energy table horowitz45)" in printed
    rows = json.loads((out / "results.json").read_text())["rows"]
    for row in rows:
        assert row["clock_source"] == "timing model" and row["clock_mhz"] > 0
        assert row["latency_us"] == pytest.approx(row["cycles"] / row["clock_mhz"], rel=1e-4)
        parts = [v for k, v in row.items()
                 if k.startswith("energy_") and k.endswith("_uj") and k != "energy_uj"]
        assert row["energy_uj"] == pytest.approx(sum(parts))
        assert row["edp_js"] == pytest.approx(row["energy_uj"] * row["latency_us"] * 1e-12)
        assert row["n_macs"] > 0 and row["n_dram_bytes"] > 0
    assert any(r["pareto"] for r in rows)
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert {"clock_mhz", "latency_us", "energy_uj", "edp_js", "energy_dram_uj"} <= set(header)
    for name in ("front_latency_energy", "front_latency_area", "front_energy_area"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
    # Off the front means dominated on the three objectives by a point on it.
    keys = ("latency_us", "energy_uj", "area_mm2")
    front = [r for r in rows if r["pareto"]]
    for r in rows:
        if not r["pareto"]:
            assert any(all(f[k] <= r[k] for k in keys) for f in front)
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "0",
                 "--objectives", "latency"]) == 2
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "0",
                 "--tech", str(tmp_path / "none.yaml")]) == 2
