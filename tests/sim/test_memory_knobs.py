"""The memory-knob vocabulary every simulated memory shares: checked values, JSON round trip."""

import pytest

from avta.sim.memory_knobs import MAX_BACKPRESSURE, MemoryKnobs


def test_round_trip_through_json_values():
    knobs = MemoryKnobs.random(seed=7)
    assert MemoryKnobs.from_dict(knobs.to_dict()) == knobs
    assert knobs.to_dict()["latency"] == [1, 40]


@pytest.mark.parametrize("values, message", [
    ({"latency": (5, 2)}, "latency must be"),
    ({"latency": (-1, 2)}, "latency must be"),
    ({"backpressure": 1.0}, "backpressure is a probability"),
    ({"backpressure": MAX_BACKPRESSURE + 0.01}, "backpressure is a probability"),
    ({"backpressure": -0.1}, "backpressure is a probability"),
    ({"outstanding": 0}, "outstanding must be"),
    ({"write_latency": -1}, "write_latency"),
    ({"latency": (0, 1 << 32)}, "latencies"),
])
def test_out_of_range_knobs_are_errors_not_capped(values, message):
    """A knob the model cannot honour is refused, not silently capped."""
    with pytest.raises(ValueError, match=message):
        MemoryKnobs(**values)


def test_unknown_knobs_are_named():
    with pytest.raises(ValueError, match="unknown memory knobs .'stall'."):
        MemoryKnobs.from_dict({"stall": 0.3})
