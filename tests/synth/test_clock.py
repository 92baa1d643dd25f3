"""The clock of a configuration: the timing model is the fit of its points, it is within its
documented error on the points it never saw, and avta fpga's measurement wins where it exists."""

import json

import pytest

from avta.isa.config import Config, load_config
from avta.synth.clock import (DESIGN_HELD_OUT, LANE_HELD_OUT, TimingModel, clock_of, errors, fit,
                              measured_clock, record_measured)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    return tmp_path


def test_the_model_is_the_fit_of_its_points():
    assert fit() == TimingModel()


def test_held_out_points_are_within_three_percent():
    """docs/cli.md, the timing model: its error on the points the fit never saw."""
    held = [r for r in errors() if r["role"] == "held-out"]
    assert len(held) == len(LANE_HELD_OUT) + len(DESIGN_HELD_OUT)
    assert all(abs(r["error"]) < 0.03 for r in held), held


def test_a_wider_dot_product_is_a_longer_lane():
    model = TimingModel()
    cfgs = [Config.from_dict(load_config("tiny").to_dict() | {"LOG_BLOCK_IN": n}, name=f"k{n}")
            for n in (2, 4, 6)]
    lanes = [model.paths(c)["gemm"] for c in cfgs]
    assert lanes == sorted(lanes) and lanes[0] < lanes[-1]


def test_deeper_scratchpads_are_a_slower_clock(cache):
    tiny, default = load_config("tiny"), load_config("default")
    assert clock_of(default).mhz < clock_of(tiny).mhz
    assert clock_of(tiny).source == "timing model"


def test_a_measured_clock_wins_for_exactly_that_design(cache):
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-25k", 1, 46.4)
    record_measured(tiny, "ecp5-85k", 1, 45.5)
    clock = clock_of(tiny)
    assert (clock.mhz, clock.source) == (46.4, "avta fpga on ecp5-25k")
    assert clock_of(tiny, measured=False).source == "timing model"
    other = Config.from_dict(tiny.to_dict() | {"AXI_DATA_BITS": 128}, name="tiny")
    assert measured_clock(other) is None


def test_a_broken_record_is_ignored(cache):
    tiny = load_config("tiny")
    (cache / "fpga").mkdir()
    (cache / "fpga" / "clocks.json").write_text("not json")
    assert measured_clock(tiny) is None
    record_measured(tiny, "ecp5-25k", 1, 46.4)
    index = json.loads((cache / "fpga" / "clocks.json").read_text())
    for entry in index.values():
        entry["fmax_mhz"] = -3
    (cache / "fpga" / "clocks.json").write_text(json.dumps(index))
    assert measured_clock(tiny) is None
    record_measured(tiny, "ecp5-25k", 1, float("nan"))
    assert measured_clock(tiny) is None
