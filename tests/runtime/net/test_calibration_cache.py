"""avta.runtime.net.calibration_cache: a network's shifts chosen once and read back, the same
graph as calibrating again; a changed weight or input calibrates again; a damaged entry too."""

import json

import pytest

from avta.runtime.net import build
from avta.runtime.net.builders import calibrated
from avta.runtime.net.calibrate import calibrate
from avta.runtime.net.calibration_cache import calibrate_cached
from avta.runtime.net.reference import random_input


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    monkeypatch.delenv("AVTA_PROGRAM_CACHE", raising=False)
    return tmp_path / "calibration"


def _net():
    return build("resnet18", input_size=32, calibrate=False)


def test_shifts_read_back_give_the_calibrated_graph(cache, monkeypatch):
    graph = _net()
    x = random_input(graph, [0, 1])
    want = calibrate(graph, x)
    assert calibrate_cached(graph, x) == want
    assert len(list(cache.glob("*.json"))) == 1
    import avta.runtime.net.calibration_cache as module

    def no_calibration(*args, **kwargs):
        raise AssertionError("calibrated again although the shifts were on disk")
    monkeypatch.setattr(module, "calibrate", no_calibration)
    assert calibrate_cached(graph, x) == want
    assert calibrated(graph, 0) == build("resnet18", input_size=32)


def test_a_changed_weight_or_input_calibrates_again(cache):
    graph = _net()
    x = random_input(graph, [0, 1])
    calibrate_cached(graph, x)
    node = graph.nodes[0]
    weights = node.weights.copy()
    weights[0, 0, 0, 0] ^= 1
    changed = graph.replace_nodes({node.name: node.replace(weights=weights)})
    assert calibrate_cached(changed, x) == calibrate(changed, x)
    x2 = x.copy()
    x2.flat[0] ^= 1
    calibrate_cached(graph, x2)
    assert len(list(cache.glob("*.json"))) == 3


@pytest.mark.parametrize("damage", ["truncated", "unknown node", "shift out of range",
                                    "shift a string"])
def test_a_damaged_entry_calibrates_again(cache, damage):
    graph = _net()
    x = random_input(graph, [0, 1])
    want = calibrate_cached(graph, x)
    (path,) = cache.glob("*.json")
    record = json.loads(path.read_text())
    name = next(iter(record["shifts"]))
    if damage == "truncated":
        path.write_text(path.read_text()[:20])
    else:
        record["shifts"] = {"unknown node": {"nowhere": 3},
                            "shift out of range": {name: 99},
                            "shift a string": {name: "3"}}[damage]
        path.write_text(json.dumps(record))
    assert calibrate_cached(graph, x) == want
    assert json.loads(path.read_text())["shifts"] == \
        {n.name: n.requant.shift for n in want.nodes if n.requant is not None}
