"""The host steps of a network (quantize the model's input, dequantize its output), the
imported-model keys of the network format (requant bias_first/offset/scale/zero_point,
conv2d pad_value, add shift_a), their file round trip and their errors."""

import numpy as np
import pytest

from avta.runtime.net import (Graph, GraphError, HostInput, HostOutput, Node, from_device,
                              load, run_reference, save, to_device)
from avta.runtime.net.executor import dram_bytes, run_network
from avta.runtime.net.host_io import HostIOError
from avta.runtime.ops.requant import Requant


def _graph():
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)
    nodes = [Node("conv", "conv2d", ("x",), attrs={"pad": 1, "pad_value": -128}, weights=w,
                  bias=rng.integers(-999, 999, 4).astype(np.int32),
                  requant=Requant(5, (-128, 127), bias_first=True)),
             Node("twice", "add", ("conv", "conv"), attrs={"shift_a": 1},
                  requant=Requant(2, (-128, 127), offset=3)),
             Node("fc", "dense", ("twice",), weights=rng.integers(-9, 9, (5, 64), np.int8),
                  requant=Requant(0, (-128, 127), offset=-4, scale=0.01, zero_point=6))]
    return Graph("g", {"x": (2, 3, 4, 4)}, nodes, ["fc"],
                 host_inputs={"x": HostInput("image", (2, 3, 4, 4), "float32", 0.5, -3)},
                 host_outputs={"fc": HostOutput("logits", (2, 5), "float32", 0.25, 6)})


def test_quantize_and_dequantize_are_onnx_formulas():
    spec = HostInput("x", (1, 6), "float32", 0.5, -3)
    x = np.array([[0.25, 0.75, -1.0, 100.0, -100.0, 1.25]], np.float32)
    # x / 0.5 = 0.5, 1.5, -2, 200, -200, 2.5 → half to even 0, 2, -2, …, 2; + (-3); clipped
    np.testing.assert_array_equal(spec.apply(x, (1, 6, 1, 1)).reshape(-1),
                                  [-3, -1, -5, 127, -128, -1])
    out = HostOutput("y", (1, 3), "float32", 0.25, 6).apply(np.array([6, 10, -128], np.int8))
    np.testing.assert_array_equal(out, np.array([[0.0, 1.0, -33.5]], np.float32))
    assert out.dtype == np.float32
    u8 = HostInput("u", (2,), "uint8").apply(np.array([0, 255], np.uint8), (2, 1, 1, 1))
    np.testing.assert_array_equal(u8.reshape(-1), [-128, 127])
    np.testing.assert_array_equal(HostOutput("u", (2,), "uint8").apply(u8), [0, 255])
    with pytest.raises(HostIOError, match="input 'x' is float32 \\[1, 6\\]; got float64"):
        spec.apply(x.astype(np.float64), (1, 6, 1, 1))
    padded = HostInput("x", (1, 1, 1, 2), "float32", 0.5, 4, pad=1, pad_value=4)
    np.testing.assert_array_equal(padded.apply(np.float32([[[[1.0, -1.0]]]]), (1, 1, 3, 4))[0, 0],
                                  [[4, 4, 4, 4], [4, 6, 2, 4], [4, 4, 4, 4]])
    with pytest.raises(HostIOError, match="needs a positive scale"):
        HostInput("x", (1,), "float32")
    with pytest.raises(HostIOError, match="infinite in float32"):
        HostInput("x", (1,), "float32", 1e300, 0)
    for bad in (np.nan, np.inf):
        with pytest.raises(HostIOError, match="must be finite"):
            spec.apply(np.float32([[0.25, bad, 0, 0, 0, 0]]), (1, 6, 1, 1))


def test_round_trip_with_host_steps_and_the_new_keys(tmp_path):
    g = _graph()
    path, _ = save(g, tmp_path / "g.yaml")
    text = path.read_text()
    assert "pad_value: -128" in text and "shift_a: 1" in text and "bias_first: true" in text
    assert "host:" in text and "name: logits" in text and "zero_point: 6" in text
    again = load(path)
    assert again == g
    x = np.random.default_rng(1).normal(0, 20, (2, 3, 4, 4)).astype(np.float32)
    (name, value), = from_device(again, run_reference(again, to_device(again, x),
                                                      keep=False)).items()
    assert name == "logits" and value.shape == (2, 5) and value.dtype == np.float32


def test_the_executor_runs_a_scale_on_the_host(tiny_cfg):
    from avta.sim.fsim.backend import fsim_device
    g = _graph()
    x = to_device(g, np.random.default_rng(2).normal(0, 20, (2, 3, 4, 4)).astype(np.float32))
    run = run_network(fsim_device(tiny_cfg, dram_size=dram_bytes(tiny_cfg, g)), g, x)
    where = {r.name: (r.on, r.why) for r in run.layers}
    assert where["conv"][0] == where["twice"][0] == "device"
    assert where["fc"][0] == "host" and "real scale" in where["fc"][1]
    reference = run_reference(g, x, keep=False)
    np.testing.assert_array_equal(run.outputs["fc"], reference["fc"])


def test_bad_host_steps_and_attributes():
    g = _graph()
    with pytest.raises(GraphError, match="another number of values"):
        Graph("g", g.inputs, g.nodes, g.outputs,
              host_inputs={"x": HostInput("image", (2, 3, 4), "int8")})
    with pytest.raises(GraphError, match="not a graph output"):
        Graph("g", g.inputs, g.nodes, g.outputs,
              host_outputs={"conv": HostOutput("y", (2, 4, 4, 4))})
    with pytest.raises(GraphError, match="pad_value=5 must be one of 0, -128"):
        Node("c", "conv2d", ("x",), attrs={"pad_value": 5},
             weights=np.zeros((4, 3, 1, 1), np.int8))
    with pytest.raises(GraphError, match="shift_a=24 must be one of 0..23"):
        Node("a", "add", ("x", "y"), attrs={"shift_a": 24})
    assert Node("c", "conv2d", ("x",), attrs={"pad_value": 0},
                weights=np.zeros((4, 3, 1, 1), np.int8)).attrs == {"stride": 1, "pad": 0}


def test_a_padded_host_input_round_trips(tmp_path):
    g = Graph("p", {"x": (1, 2, 6, 6)}, [Node("pool", "max_pool", ("x",), attrs={"k": 2})],
              ["pool"], host_inputs={"x": HostInput("x", (1, 2, 4, 4), "float32", 0.25, 9,
                                                    pad=1, pad_value=9)})
    path, _ = save(g, tmp_path / "p.yaml")
    assert "pad: 1, pad_value: 9" in path.read_text()
    assert load(path) == g
    with pytest.raises(GraphError, match="another number of values"):
        Graph("p", {"x": (1, 2, 6, 6)}, g.nodes, ["pool"],
              host_inputs={"x": HostInput("x", (1, 2, 6, 6), "int8", pad=1)})
