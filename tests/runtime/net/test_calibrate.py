"""Calibration: the chosen shift is the smallest that keeps the 99.9th percentile within the
clip, so outputs use the top octave of the range; the spread report counts what it should."""

import numpy as np
import pytest

from avta.runtime.net.calibrate import (Spread, activation_spread, calibrate, choose_shift,
                                        spread_table, unhealthy)
from avta.runtime.net.graph import Graph, Node
from avta.runtime.net.reference import random_input
from avta.runtime.ops.requant import Requant


def _level(acc, shift, bias, relu):
    out = (acc >> shift if shift >= 0 else acc << -shift) + bias
    return np.percentile(out if relu else np.abs(out), 99.9)


@pytest.mark.parametrize("scale", [1, 37, 1000, 2 ** 20])
@pytest.mark.parametrize("clip", [(0, 127), (-128, 127), None])
def test_the_shift_is_the_smallest_that_fits(scale, clip):
    rng = np.random.default_rng(scale)
    acc = np.round(rng.normal(0, scale, 10_000)).astype(np.int64)
    bias = rng.integers(-8, 9, 10_000)
    shift = choose_shift(acc, bias, clip)
    relu = clip is not None and clip[0] >= 0
    assert _level(acc, shift, bias, relu) <= 127
    if shift > -8:
        assert _level(acc, shift - 1, bias, relu) > 127
    if scale >= 1000:
        assert 64 - 8 <= _level(acc, shift, bias, relu) <= 127      # the top octave


def test_small_accumulators_shift_left():
    acc = np.arange(-10, 11)
    shift = choose_shift(acc)
    assert shift == -3 and np.abs(acc << 3).max() <= 127


def test_all_zero_accumulators():
    assert choose_shift(np.zeros(10, np.int64)) == 0


def test_calibrate_sets_only_shifts():
    rng = np.random.default_rng(0)
    nodes = [Node("c", "conv2d", ["x"], attrs=dict(pad=1),
                  weights=rng.integers(-127, 128, (16, 16, 3, 3), dtype=np.int8),
                  bias=rng.integers(-8, 9, 16, dtype=np.int32), requant=Requant(0, (0, 127))),
             Node("p", "max_pool", ["c"], attrs=dict(k=2)),
             Node("g", "global_avg_pool", ["p"], requant=Requant(0, (0, 127)))]
    g = Graph("g", {"x": (1, 16, 8, 8)}, nodes, ["g"])
    x = random_input(g, 0)
    cal = calibrate(g, x)
    assert cal.node("c").requant.shift > 8 and cal.node("g").requant.shift >= 0
    assert cal.node("c").requant.clip == (0, 127)
    assert cal.node("p") == g.node("p")
    assert np.array_equal(cal.node("c").weights, g.node("c").weights)
    spreads = {s.node: s for s in activation_spread(cal, x)}
    assert spreads["c"].at_high <= 0.01 and spreads["c"].zeros < 0.8
    only = calibrate(g, x, only={"c"})
    assert only.node("g").requant.shift == 0 and only.node("c") == cal.node("c")


def test_spread_counts():
    node = Node("a", "add", ["x", "y"], requant=Requant(0, (0, 127)))
    g = Graph("g", {"x": (1, 1, 2, 2), "y": (1, 1, 2, 2)}, [node], ["a"])
    x = np.array([0, 10, 127, -5], np.int8).reshape(1, 1, 2, 2)
    y = np.array([0, 10, 100, -5], np.int8).reshape(1, 1, 2, 2)
    (s,) = activation_spread(g, {"x": x, "y": y})     # outputs 0, 20, 127, 0
    assert (s.at_low, s.at_high, s.zeros) == (0.5, 0.25, 0.5)
    assert s.relu and s.saturated == 0.25 and s.shift == 0
    assert s.std == pytest.approx(np.std([0, 20, 127, 0]))
    assert [reason for _, reason in unhealthy([s])] == ["25.0% saturated"]
    assert "a" in spread_table([s])
    flat = Spread("f", "conv2d", (1,), (-128, 127), 0.0, 0.0, 0.95, 0.5, 0.0, 3)
    assert [reason for _, reason in unhealthy([flat])] == ["95.0% zeros", "std 0.50"]
