"""The network reference: each node is its operator reference, and a node's accumulators
requantized are its output."""

import numpy as np
import pytest

from avta.runtime.net.graph import Graph, GraphError, Node
from avta.runtime.net.reference import (accumulate, random_input, requantize, run_node,
                                        run_reference)
from avta.runtime.ops.reference import add_ref, conv2d_ref, depthwise_ref, max_pool_ref
from avta.runtime.ops.requant import Requant


def block():
    rng = np.random.default_rng(3)
    nodes = [
        Node("c1", "conv2d", ["x"], attrs=dict(pad=1), weights=rng.integers(
            -30, 30, (8, 8, 3, 3), dtype=np.int8), bias=rng.integers(-5, 5, 8, dtype=np.int32),
             requant=Requant(8, (0, 127))),
        Node("dw", "depthwise", ["c1"], attrs=dict(pad=1), weights=rng.integers(
            -30, 30, (8, 1, 3, 3), dtype=np.int8), requant=Requant(6, (-128, 127))),
        Node("sum", "add", ["dw", "x"], requant=Requant(1, (0, 127))),
        Node("mp", "max_pool", ["sum"], attrs=dict(k=2)),
    ]
    return Graph("block", {"x": (2, 8, 6, 6)}, nodes, ["mp"])


def test_each_node_is_its_operator_reference():
    g = block()
    x = random_input(g, 1)
    out = run_reference(g, x)
    assert set(out) == {"x", "c1", "dw", "sum", "mp"}
    c1, dw = g.node("c1"), g.node("dw")
    expect = conv2d_ref(x, c1.weights, c1.bias, pad=1, requant=c1.requant)
    assert np.array_equal(out["c1"], expect)
    expect = depthwise_ref(expect, dw.weights, pad=1, requant=dw.requant)
    assert np.array_equal(out["dw"], expect)
    expect = add_ref(expect, x, requant=Requant(1, (0, 127)))
    assert np.array_equal(out["sum"], expect)
    assert np.array_equal(out["mp"], max_pool_ref(expect, k=2, stride=2, pad=0))
    assert all(a.dtype == np.int8 for a in out.values())


def test_only_the_outputs_are_kept_on_request():
    g = block()
    x = random_input(g, 1)
    small = run_reference(g, x, keep=False)
    assert list(small) == ["mp"] and np.array_equal(small["mp"], run_reference(g, x)["mp"])


def test_dense_flattens_its_input():
    w = np.random.default_rng(0).integers(-9, 9, (5, 3 * 2 * 2), dtype=np.int8)
    g = Graph("fc", {"x": (2, 3, 2, 2)}, [Node("fc", "dense", ["x"], weights=w,
                                               bias=np.arange(5, dtype=np.int32))], ["fc"])
    x = random_input(g, 2)
    out = run_reference(g, x)["fc"]
    acc = x.reshape(2, -1).astype(np.int64) @ w.astype(np.int64).T + np.arange(5)
    assert out.shape == (2, 5, 1, 1)
    assert np.array_equal(out[:, :, 0, 0], acc.astype(np.int8))       # low 8 bits, no clip


@pytest.mark.parametrize("network", ["resnet50", "mobilenet1.0"])
def test_accumulators_requantized_are_the_outputs(small_networks, network):
    """Calibration looks at :func:`accumulate`; what it sees must be what the reference does."""
    g = small_networks[network]
    values = run_reference(g, random_input(g, 11))
    kinds = set()
    for node in g.nodes:
        inputs = [values[t] for t in node.inputs]
        out = requantize(node, accumulate(node, inputs))
        assert np.array_equal(out, values[node.output]), node.name
        kinds.add(node.op)
    assert kinds >= {"conv2d", "max_pool", "global_avg_pool", "add", "dense"} or \
        kinds >= {"conv2d", "depthwise", "global_avg_pool", "dense"}


def test_avg_pool_accumulates_window_sums():
    node = Node("ap", "avg_pool", ["x"], attrs=dict(k=2), requant=Requant(2))
    x = np.arange(16, dtype=np.int8).reshape(1, 1, 4, 4)
    assert accumulate(node, [x])[0, 0].tolist() == [[10, 18], [42, 50]]
    assert np.array_equal(run_node(node, [x]), requantize(node, accumulate(node, [x])))


def test_inputs_are_checked():
    g = block()
    with pytest.raises(GraphError, match="input 'x' must be int8 \\[2, 8, 6, 6\\], not int16"):
        run_reference(g, np.zeros((2, 8, 6, 6), np.int16))
    with pytest.raises(GraphError, match="not int8 \\[1, 8, 6, 6\\]"):
        run_reference(g, np.zeros((1, 8, 6, 6), np.int8))
    with pytest.raises(GraphError, match="no array for input\\(s\\) \\['x'\\]"):
        run_reference(g, {"y": np.zeros((2, 8, 6, 6), np.int8)})
