"""avta.runtime.net.builders.timing_graph: a built-in network as a timing-only run needs it,
without drawing its weights. Cycles depend on the shifts (a shift of 0 emits no SHR) and on the
biases' bound (build_conv2d), never on the weights' values: the timing graph is the calibrated
network with every weight zero, its biases and shifts read from a record keyed by the builder's
arguments; its programs' cycles equal the real network's layer for layer; a damaged record or
another argument builds the real network again."""

import json

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.runtime.net import build, random_input
from avta.runtime.net.builders import timing_graph
from avta.runtime.net.executor import dram_bytes, run_network
from avta.sim.targets import make_device


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    monkeypatch.delenv("AVTA_PROGRAM_CACHE", raising=False)
    return tmp_path / "networks"


def _no_drawing(monkeypatch):
    import avta.runtime.net.builders as module

    def drawn(*args, **kwargs):
        raise AssertionError("drew weights although the network's record was on disk")
    monkeypatch.setattr(module._Net, "drawn_weights", drawn)


def _same_but_weights(a, b):
    assert [n.name for n in a.nodes] == [n.name for n in b.nodes]
    for x, y in zip(a.nodes, b.nodes):
        assert (x.op, x.inputs, x.output, x.attrs, x.requant) == \
            (y.op, y.inputs, y.output, y.attrs, y.requant), x.name
        assert (x.bias is None) == (y.bias is None) and \
            (x.bias is None or np.array_equal(x.bias, y.bias)), x.name
        assert (x.weights is None) == (y.weights is None), x.name
        if x.weights is not None:
            assert x.weights.shape == y.weights.shape and x.weights.dtype == y.weights.dtype


def _cycles(graph, cfg):
    device = make_device(cfg, "fsim", dram_bytes(cfg, graph), timing_only=True)
    run = run_network(device, graph, random_input(graph, seed=0))
    return [(layer.name, layer.cycles, layer.insns, layer.counters) for layer in run.layers]


@pytest.mark.parametrize("name", ["resnet18", "mobilenet1.0"])
def test_the_timing_graph_is_the_network_but_its_weights(cache, monkeypatch, name):
    real = build(name, input_size=32, seed=3)
    first = timing_graph(name, input_size=32, seed=3)      # builds the real one, records it
    assert first == real
    assert len(list(cache.glob("*.json"))) == 1
    _no_drawing(monkeypatch)
    graph = timing_graph(name, input_size=32, seed=3)
    _same_but_weights(graph, real)
    assert not any(node.weights.any() for node in graph.nodes if node.weights is not None)
    assert _cycles(graph, load_config("default")) == _cycles(real, load_config("default"))


def test_the_shifts_change_the_cycles():
    """Why the timing graph keeps the calibrated shifts: without them the streams differ."""
    raw = build("resnet18", input_size=32, calibrate=False)
    real = build("resnet18", input_size=32)
    assert _cycles(raw, load_config("tiny")) != _cycles(real, load_config("tiny"))


def test_another_argument_is_another_record(cache, monkeypatch):
    timing_graph("resnet18", input_size=32, seed=0)
    timing_graph("resnet18", input_size=64, seed=0)
    timing_graph("resnet18", input_size=32, seed=1)
    assert len(list(cache.glob("*.json"))) == 3
    _no_drawing(monkeypatch)
    with pytest.raises(AssertionError, match="drew weights"):
        timing_graph("resnet18", input_size=32, seed=2)


@pytest.mark.parametrize("damage", [
    lambda r: "not json",
    lambda r: json.dumps({**r, "key": "0" * 32}),
    lambda r: json.dumps({**r, "shifts": {**r["shifts"], "conv1": "9"}}),
    lambda r: json.dumps({**r, "shifts": {**r["shifts"], "nowhere": 3}}),
    lambda r: json.dumps({**r, "biases": {**r["biases"], "fc": r["biases"]["fc"][:-1]}}),
    lambda r: json.dumps({**r, "biases": {**r["biases"], "fc": [2 ** 40] * 1000}}),
    lambda r: json.dumps({k: v for k, v in r.items() if k != "biases"}),
])
def test_a_damaged_record_builds_the_network_again(cache, damage):
    want = timing_graph("resnet18", input_size=32)
    [path] = cache.glob("*.json")
    path.write_text(damage(json.loads(path.read_text())))
    assert timing_graph("resnet18", input_size=32) == build("resnet18", input_size=32)
    _same_but_weights(timing_graph("resnet18", input_size=32), want)


def test_without_the_cache_the_real_network(monkeypatch, tmp_path):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    monkeypatch.setenv("AVTA_PROGRAM_CACHE", "0")
    assert timing_graph("resnet18", input_size=32) == build("resnet18", input_size=32)
    assert not (tmp_path / "networks").exists()


def test_load_network_for_timing_only(cache):
    from avta.sim.targets import load_network
    cfg = load_config("tiny")
    real = load_network("resnet18", 32, 5, cfg)
    assert load_network("resnet18", 32, 5, cfg, timing_only=True) == real    # records it
    graph = load_network("resnet18", 32, 5, cfg, timing_only=True)
    _same_but_weights(graph, real)
    assert not any(node.weights.any() for node in graph.nodes if node.weights is not None)
