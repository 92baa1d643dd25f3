"""A sweep's progress: points per second and the time left (:mod:`avta.sim.sweep.rate`)."""

import pytest

from avta.sim.sweep.engine import run_sweep
from avta.sim.sweep.rate import Rate
from avta.sim.sweep.spec import parse_spec


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_rate_and_the_time_left_follow_the_points_done():
    clock = Clock()
    rate = Rate(10, clock=clock)
    assert rate.per_second == 0.0 and rate.seconds_left is None
    clock.now += 4.0
    assert rate.done() == "[1/10] 0.25 points/s, 36s left"
    clock.now += 4.0
    assert rate.done() == "[2/10] 0.25 points/s, 32s left"
    clock.now += 3592.0
    assert rate.done() == "[3/10] 0.000833 points/s, 2h20m left"
    for _ in range(7):
        text = rate.done()
    assert text.startswith("[10/10]") and text.endswith(", 0s left")


def test_minutes_and_a_bad_total():
    clock = Clock()
    rate = Rate(3, clock=clock)
    clock.now += 100.0
    assert rate.done() == "[1/3] 0.01 points/s, 3m20s left"
    with pytest.raises(ValueError, match="zero points or more"):
        Rate(-1)


def test_every_finished_point_says_the_rate_and_the_time_left(tmp_path):
    spec = parse_spec("base: default\nvary:\n  AXI_DATA_BITS: [64, 128]\nworkload: resnet18\n"
                      "input_size: 32\n", source="spec.yaml")
    lines = []
    result = run_sweep(spec, tmp_path, workers=0, log=lines.append)
    assert result.ran == 2
    progress = [line for line in lines if "points/s" in line]
    assert [line.split("]")[0] for line in progress] == ["[1/2", "[2/2"]
    assert progress[-1].split(": point")[0].endswith(", 0s left")
