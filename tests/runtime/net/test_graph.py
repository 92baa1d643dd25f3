"""The network graph: shapes inferred, nodes ordered, MACs counted, and every broken rule an
error that names the node and the rule."""

import numpy as np
import pytest

from avta.errors import UserError
from avta.runtime.net.graph import Graph, GraphBuilder, GraphError, Node
from avta.runtime.ops.requant import Requant

RELU = Requant(4, (0, 127))


def w8(*shape, seed=0):
    return np.random.default_rng(seed).integers(-8, 8, size=shape, dtype=np.int8)


def b32(n):
    return np.arange(n, dtype=np.int32) - n // 2


def small_nodes():
    """Every node kind once: a residual block with a depthwise, pools and a dense head."""
    return [
        Node("stem", "conv2d", ["data"], attrs=dict(stride=2, pad=1), weights=w8(16, 3, 3, 3),
             bias=b32(16), requant=RELU),
        Node("dw", "depthwise", ["stem"], attrs=dict(pad=1), weights=w8(16, 1, 3, 3),
             requant=RELU),
        Node("res", "add", ["dw", "stem"], requant=Requant(1, (0, 127))),
        Node("mp", "max_pool", ["res"], attrs=dict(k=2)),
        Node("ap", "avg_pool", ["mp"], attrs=dict(k=3, stride=1, pad=1),
             requant=Requant(3, (-128, 127))),
        Node("gap", "global_avg_pool", ["ap"], requant=Requant(4, (0, 127))),
        Node("fc", "dense", ["gap"], weights=w8(10, 16), bias=b32(10),
             requant=Requant(2, (-127, 127), use_clp=True)),
    ]


def small_graph():
    return Graph("small", {"data": (2, 3, 16, 16)}, small_nodes(), ["fc"])


def test_shapes_macs_and_order():
    g = small_graph()
    assert [n.name for n in g.topological()] == ["stem", "dw", "res", "mp", "ap", "gap", "fc"]
    assert g.shapes == {"data": (2, 3, 16, 16), "stem": (2, 16, 8, 8), "dw": (2, 16, 8, 8),
                        "res": (2, 16, 8, 8), "mp": (2, 16, 4, 4), "ap": (2, 16, 4, 4),
                        "gap": (2, 16, 1, 1), "fc": (2, 10, 1, 1)}
    assert g.output_shape("fc") == (2, 10, 1, 1)
    assert g.macs("stem") == 2 * 16 * 8 * 8 * 3 * 3 * 3
    assert g.macs("dw") == 2 * 16 * 8 * 8 * 3 * 3
    assert g.macs("fc") == 2 * 10 * 16
    assert all(g.macs(n) == 0 for n in ("res", "mp", "ap", "gap"))
    assert g.macs() == 2 * 16 * 64 * 27 + 2 * 16 * 64 * 9 + 320
    assert g.params() == 16 * 27 + 16 + 16 * 9 + 160 + 10
    assert g.producer("data") is None and g.producer("res").name == "res"
    assert [n.name for n in g.consumers("stem")] == ["dw", "res"]
    assert g.node("mp").attrs == {"k": 2, "stride": 2, "pad": 0}     # stride defaults to k
    assert g.node("dw").attrs == {"stride": 1, "pad": 1}
    rows = g.layers()
    assert rows[0]["weights"] == (16, 3, 3, 3) and rows[-1]["output"] == (2, 10, 1, 1)
    assert "fc" in g.summary()


def test_nodes_in_any_order_are_sorted_topologically():
    nodes = small_nodes()
    g = Graph("small", {"data": (2, 3, 16, 16)}, nodes[::-1], ["fc"])
    order = [n.name for n in g.nodes]
    for node in g.nodes:
        for tensor in node.inputs:
            if tensor != "data":
                assert order.index(tensor) < order.index(node.name)
    assert g == small_graph()       # equality compares the (topological) node lists


def test_builder_matches_the_graph():
    b = GraphBuilder("small")
    x = b.input("data", (2, 3, 16, 16))
    for node in small_nodes():
        b.add_node(node)
    assert b.shape("fc") == (2, 10, 1, 1)
    assert b.build(["fc"]) == small_graph()
    assert x == "data"


def test_equality_sees_weights_and_requant():
    g = small_graph()
    stem = g.node("stem")
    w = stem.weights.copy()
    w[0, 0, 0, 0] += 1
    assert g.replace_nodes({"stem": stem.replace(weights=w)}) != g
    assert g.replace_nodes({"stem": stem.replace(requant=Requant(5, (0, 127)))}) != g
    assert g.replace_nodes({"stem": stem.replace()}) == g


def test_node_arrays_are_frozen_copies():
    w = w8(4, 3, 1, 1)
    node = Node("c", "conv2d", ["x"], weights=w)
    w[0, 0, 0, 0] = 99
    assert node.weights[0, 0, 0, 0] != 99


def test_a_replaced_node_shares_the_frozen_arrays_it_keeps():
    """A node's arrays are copied once (ResNet-18's weights are 11 MB): a replaced node, e.g.
    with the calibrated shifts, holds the same read-only arrays, and a new array is copied."""
    node = Node("c", "conv2d", ["x"], weights=w8(4, 3, 1, 1), bias=np.arange(4, dtype=np.int32))
    shifted = node.replace(requant=Requant(3))
    assert shifted.weights is node.weights and shifted.bias is node.bias
    assert not shifted.weights.flags.writeable
    bias = np.zeros(4, np.int32)
    assert node.replace(bias=bias).bias is not bias
    with pytest.raises(ValueError):
        node.weights[0, 0, 0, 0] = 1
    assert node.requant == Requant()          # a kind with a requantization gets the identity


def _graph_with(node, shape=(1, 3, 8, 8), extra=()):
    return Graph("g", {"x": shape}, [*extra, node], [node.output])


# (what to build, a fragment the message must contain); every message names the node.
BAD = [
    # dangling tensors
    (lambda: Graph("g", {"x": (1, 3, 8, 8)}, [Node("p", "max_pool", ["y"], attrs=dict(k=2))],
                   ["p"]), "max_pool node 'p' reads tensor 'y', which is neither a graph input"),
    (lambda: Graph("g", {"x": (1, 3, 8, 8)}, [Node("p", "max_pool", ["x"], attrs=dict(k=2))],
                   ["q"]), "output 'q' is neither an input nor produced"),
    (lambda: Node("s", "add", ["x"]), "add node 's' has 1 input(s) ['x']; add takes 2"),
    # shape mismatches
    (lambda: _graph_with(Node("c", "conv2d", ["x"], weights=w8(4, 5, 3, 3))),
     "conv2d node 'c': weights [O, C, KH, KW] = [4, 5, 3, 3] have C=5 but input 'x' has C=3"),
    (lambda: _graph_with(Node("d", "depthwise", ["x"], weights=w8(4, 1, 3, 3))),
     "depthwise node 'd': weights [C, 1, KH, KW] = [4, 1, 3, 3] do not fit input 'x' with C=3"),
    (lambda: _graph_with(Node("f", "dense", ["x"], weights=w8(10, 100))),
     "dense node 'f': weights [O, K] = [10, 100] have K=100 but input 'x' [1, 3, 8, 8] "
     "flattens to K=C*H*W=192"),
    (lambda: _graph_with(Node("a", "add", ["x", "p"]),
                         extra=[Node("p", "max_pool", ["x"], attrs=dict(k=2))]),
     "add node 'a': inputs 'x' [1, 3, 8, 8] and 'p' [1, 3, 4, 4] differ"),
    (lambda: _graph_with(Node("c", "conv2d", ["x"], weights=w8(4, 3, 3, 3), bias=b32(5))),
     "conv2d node 'c': bias has shape [5]; it must be [4]"),
    (lambda: _graph_with(Node("c", "conv2d", ["x"], weights=w8(4, 3, 9, 9))),
     "conv2d node 'c': input 'x' [1, 3, 8, 8] is too small; the output would be 0x0"),
    # missing or wrong weights
    (lambda: Node("c", "conv2d", ["x"]), "conv2d node 'c': its weights are missing"),
    (lambda: Node("c", "conv2d", ["x"], weights=w8(4, 3, 3, 3).astype(np.int16)),
     "conv2d node 'c': weights are int16; they must be int8"),
    (lambda: Node("c", "conv2d", ["x"], weights=w8(4, 3, 3)),
     "conv2d node 'c': weights have shape [4, 3, 3]; conv2d weights have 4 dimensions"),
    (lambda: Node("c", "conv2d", ["x"], weights=w8(4, 3, 1, 1), bias=b32(4).astype(np.int64)),
     "conv2d node 'c': bias are int64; they must be int32"),
    (lambda: Node("a", "avg_pool", ["x"], attrs=dict(k=2), bias=b32(3)),
     "avg_pool node 'a': avg_pool takes no bias"),
    (lambda: Node("p", "max_pool", ["x"], attrs=dict(k=2), weights=w8(1, 1, 1, 1)),
     "max_pool node 'p': max_pool takes no weights"),
    # attributes and requantization
    (lambda: Node("p", "max_pool", ["x"]), "max_pool node 'p': attribute 'k' is missing"),
    (lambda: Node("p", "max_pool", ["x"], attrs=dict(k=3, pad=2)),
     "max_pool node 'p': pad 2 is more than half the window k=3"),
    (lambda: Node("c", "conv2d", ["x"], attrs=dict(stride=0), weights=w8(1, 3, 1, 1)),
     "conv2d node 'c': attribute stride=0 must be >= 1"),
    (lambda: Node("c", "conv2d", ["x"], attrs=dict(dilation=2), weights=w8(1, 3, 1, 1)),
     "conv2d node 'c': unknown attribute(s) ['dilation']"),
    (lambda: Node("p", "max_pool", ["x"], attrs=dict(k=2), requant=Requant(1)),
     "max_pool node 'p': max_pool has no requantization"),
    (lambda: Node("r", "relu6", ["x"]), "node 'r': unknown op 'relu6'"),
    (lambda: Node("bad name", "add", ["x", "y"]), "node name 'bad name' is not allowed"),
    # graph structure
    (lambda: Graph("g", {"x": (1, 3, 8, 8)},
                   [Node("p", "max_pool", ["x"], attrs=dict(k=2)),
                    Node("p", "max_pool", ["x"], attrs=dict(k=2), output="q")], ["p"]),
     "node name 'p' is used by two nodes"),
    (lambda: Graph("g", {"x": (1, 3, 8, 8)},
                   [Node("p", "max_pool", ["x"], attrs=dict(k=2)),
                    Node("q", "max_pool", ["x"], attrs=dict(k=2), output="p")], ["p"]),
     "max_pool node 'q' writes 'p', which node 'p' already writes"),
    (lambda: Graph("g", {"x": (1, 3, 8, 8)},
                   [Node("p", "max_pool", ["x"], attrs=dict(k=2), output="x")], ["x"]),
     "max_pool node 'p' writes 'x', which is a graph input"),
    (lambda: Graph("g", {"x": (1, 3, 8, 8)},
                   [Node("a", "add", ["x", "b"]), Node("b", "add", ["x", "a"])], ["a"]),
     "nodes 'a' -> 'b' -> 'a' form a cycle"),
    (lambda: Graph("g", {"x": (1, 3, 8)}, [], ["x"]), "input 'x' has shape (1, 3, 8)"),
]


@pytest.mark.parametrize("make, message", BAD, ids=[m[:40] for _, m in BAD])
def test_broken_rules_are_errors_that_name_the_node(make, message):
    with pytest.raises(GraphError) as info:
        make()
    assert message in str(info.value)
    assert isinstance(info.value, UserError)


def test_builder_checks_each_node_as_it_is_added():
    b = GraphBuilder("g")
    x = b.input("x", (1, 3, 8, 8))
    with pytest.raises(GraphError, match="conv2d node 'c' reads tensor 'nope'"):
        b.conv2d("c", "nope", w8(4, 3, 1, 1))
    with pytest.raises(GraphError, match="have C=4 but input 'x' has C=3"):
        b.conv2d("c", x, w8(4, 4, 1, 1))
    y = b.conv2d("c", x, w8(4, 3, 1, 1))
    with pytest.raises(GraphError, match="node name 'c' is used by two nodes"):
        b.conv2d("c", y, w8(4, 4, 1, 1))
    with pytest.raises(GraphError, match="tensor 'x' already exists"):
        b.input("x", (1, 3, 8, 8))
    assert b.build([y]).shapes[y] == (1, 4, 8, 8)
