"""Slow: synthesis of the calibration and held-out points (default takes about 5 minutes on
two cores, wide about 25; every result is cached afterwards) and the calibrated model's error on them and on the
held-out point. ``pytest -m slow tests/synth``."""

from dataclasses import asdict

import pytest

from avta.floorplan.tech import load_technology
from avta.floorplan.vta import LogicModel
from avta.synth.calibrate import calibrate

pytestmark = pytest.mark.slow

TECH = load_technology("generic45")


@pytest.fixture(scope="module")
def calibration():
    return calibrate(TECH)


def test_the_shipped_model_is_the_fit(calibration):
    """LogicModel's defaults are what `avta area --calibrate` fits (rerun it and update
    floorplan/vta/logic.py when the RTL changes)."""
    assert asdict(calibration.model) == asdict(LogicModel())


def test_the_model_is_close_on_calibration_and_held_out_points(calibration):
    totals = {r["config"]: r for r in calibration.rows if r["block"] == "total"}
    assert {r["role"] for r in totals.values()} == {"calibrated", "held-out"}
    for name, row in totals.items():
        assert abs(row["error"]) < 0.10, row
    for row in calibration.rows:
        assert abs(row["error"]) < 0.30, row
