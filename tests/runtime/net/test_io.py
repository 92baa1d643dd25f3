"""The network file: YAML beside a .npz of weights; saving then loading gives the same graph
and the same reference output, and a broken file is an error naming the file and the node."""

import numpy as np
import pytest
import yaml

from avta.errors import UserError
from avta.runtime.net.graph import Graph, GraphError, Node
from avta.runtime.net.io import FORMAT, load, save
from avta.runtime.net.reference import random_input, run_reference
from avta.runtime.ops.requant import Requant


def every_kind():
    """A small graph with every node kind, a renamed output, two inputs, CLP and no clip."""
    rng = np.random.default_rng(1)

    def w(*shape):
        return rng.integers(-20, 20, size=shape, dtype=np.int8)

    nodes = [
        Node("stem", "conv2d", ["image"], output="stem_out", attrs=dict(stride=2, pad=1),
             weights=w(8, 3, 3, 3), bias=np.arange(8, dtype=np.int32),
             requant=Requant(6, (0, 127))),
        Node("side", "conv2d", ["other"], attrs=dict(stride=2), weights=w(8, 3, 1, 1),
             requant=Requant(3, (-127, 127), use_clp=True)),
        Node("sum", "add", ["stem_out", "side"], requant=Requant(1, (0, 127))),
        Node("dw", "depthwise", ["sum"], attrs=dict(pad=1), weights=w(8, 1, 3, 3),
             requant=Requant(5, (0, 127))),
        Node("mp", "max_pool", ["dw"], attrs=dict(k=3, stride=2, pad=1)),
        Node("ap", "avg_pool", ["mp"], attrs=dict(k=2), requant=Requant(2)),
        Node("gap", "global_avg_pool", ["ap"], requant=Requant(2, (0, 127))),
        Node("fc", "dense", ["gap"], weights=w(5, 8), requant=Requant(-1, (-128, 127))),
    ]
    return Graph("every-kind", {"image": (2, 3, 16, 16), "other": (2, 3, 16, 16)}, nodes,
                 ["fc", "sum"])


def _same_outputs(a, b, x):
    ra, rb = run_reference(a, x), run_reference(b, x)
    assert ra.keys() == rb.keys()
    for key in ra:
        assert ra[key].dtype == np.int8 and np.array_equal(ra[key], rb[key]), key


def test_round_trip_of_every_kind(tmp_path):
    g = every_kind()
    yaml_path, npz_path = save(g, tmp_path / "net.yaml")
    assert npz_path == tmp_path / "net.npz" and npz_path.exists()
    back = load(yaml_path)
    assert back == g
    assert back.node("side").requant == Requant(3, (-127, 127), use_clp=True)
    assert back.node("fc").bias is None and back.node("ap").requant.clip is None
    _same_outputs(g, back, random_input(g, 4))
    # Saving the loaded graph again writes the same text.
    save(back, tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_text() == yaml_path.read_text().replace(
        "net.npz", "again.npz")


def test_round_trip_of_a_network(tmp_path, small_networks):
    g = small_networks["resnet18"]
    save(g, tmp_path / "resnet18.yaml")
    back = load(tmp_path / "resnet18.yaml")
    assert back == g
    _same_outputs(g, back, random_input(g, 9))


def test_the_file_is_readable_text(tmp_path):
    save(every_kind(), tmp_path / "net.yaml")
    text = (tmp_path / "net.yaml").read_text()
    doc = yaml.safe_load(text)
    assert doc["format"] == FORMAT and doc["weights"] == "net.npz"
    assert doc["inputs"] == {"image": [2, 3, 16, 16], "other": [2, 3, 16, 16]}
    assert doc["outputs"] == ["fc", "sum"]
    assert doc["nodes"][0] == {"name": "stem", "op": "conv2d", "inputs": ["image"],
                               "output": "stem_out", "stride": 2, "pad": 1,
                               "weights": [8, 3, 3, 3], "bias": [8],
                               "requant": {"shift": 6, "clip": [0, 127]}}
    assert doc["nodes"][1]["requant"] == {"shift": 3, "clip": [-127, 127], "use_clp": True}
    # One node a line.
    assert "  - {name: mp, op: max_pool, inputs: [dw], k: 3, stride: 2, pad: 1}\n" in text
    with np.load(tmp_path / "net.npz") as npz:
        assert sorted(npz.files) == ["dw.weights", "fc.weights", "side.weights", "stem.bias",
                                     "stem.weights"]


def test_the_weights_are_found_relative_to_the_yaml(tmp_path, monkeypatch):
    save(every_kind(), tmp_path / "net.yaml")
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert load(tmp_path / "net.yaml") == every_kind()


def _edit(tmp_path, change):
    """Save the example, let ``change(doc, arrays)`` edit the YAML document and the arrays,
    write both back and load."""
    save(every_kind(), tmp_path / "net.yaml")
    doc = yaml.safe_load((tmp_path / "net.yaml").read_text())
    with np.load(tmp_path / "net.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    change(doc, arrays)
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    with open(tmp_path / "net.npz", "wb") as f:
        np.savez(f, **arrays)
    return load(tmp_path / "net.yaml")


def _node(doc, name):
    return next(n for n in doc["nodes"] if n["name"] == name)


BROKEN = [
    (lambda d, a: a.pop("dw.weights"), "node 'dw': its weights 'dw.weights' are not in"),
    (lambda d, a: _node(d, "dw").pop("weights"), "depthwise node 'dw': its weights are missing"),
    (lambda d, a: a.update({"dw.weights": a["dw.weights"][:4]}),
     "depthwise node 'dw': weights have shape [4, 1, 3, 3] in the weights file but [8, 1, 3, 3]"),
    (lambda d, a: a.update({"stray": np.zeros(3, np.int8)}), "arrays no node names: ['stray']"),
    (lambda d, a: a.update({"stem.weights": a["stem.weights"].astype(np.int32)}),
     "conv2d node 'stem': weights are int32; they must be int8"),
    (lambda d, a: _node(d, "mp").update(dilation=2), "max_pool node 'mp': unknown key(s) "
                                                     "['dilation']"),
    (lambda d, a: _node(d, "mp").update(requant={"shift": 1}),
     "max_pool node 'mp': unknown key(s) ['requant']; a max_pool node takes name, op, inputs, "
     "output, k, stride, pad"),
    (lambda d, a: _node(d, "sum").update(inputs=["stem_out", "nowhere"]),
     "add node 'sum' reads tensor 'nowhere', which is neither a graph input"),
    (lambda d, a: _node(d, "sum").update(inputs=["stem_out", "other"]),
     "add node 'sum': inputs 'stem_out' [2, 8, 8, 8] and 'other' [2, 3, 16, 16] differ"),
    (lambda d, a: _node(d, "sum").update(inputs=["stem_out", "mp"]),
     "nodes 'sum' -> 'dw' -> 'mp' -> 'sum' form a cycle"),
    (lambda d, a: _node(d, "gap").update(requant={"shift": 40}),
     "global_avg_pool node 'gap': shift 40 is outside"),
    (lambda d, a: _node(d, "gap").update(requant={"shift": 1, "round": True}),
     "global_avg_pool node 'gap': unknown requant key(s) ['round']"),
    (lambda d, a: d.update(format="avta-network/0"), "format is 'avta-network/0'"),
    (lambda d, a: d.update(extra=1), "unknown key(s) ['extra']"),
    (lambda d, a: d.update(outputs=["fc", "ghost"]), "output 'ghost' is neither an input"),
]


@pytest.mark.parametrize("change, message", BROKEN, ids=[m[:40] for _, m in BROKEN])
def test_broken_files_are_errors(tmp_path, change, message):
    with pytest.raises(GraphError) as info:
        _edit(tmp_path, change)
    assert message in str(info.value)
    assert str(tmp_path / "net.yaml") in str(info.value)


def test_missing_or_unreadable_files(tmp_path):
    with pytest.raises(UserError, match="network file .* does not exist"):
        load(tmp_path / "none.yaml")
    save(every_kind(), tmp_path / "net.yaml")
    (tmp_path / "net.npz").unlink()
    with pytest.raises(UserError, match="weights file .*net.npz.* does not exist"):
        load(tmp_path / "net.yaml")
    (tmp_path / "net.npz").write_text("not a zip")
    with pytest.raises(GraphError, match="not a numpy .npz file"):
        load(tmp_path / "net.yaml")
    (tmp_path / "bad.yaml").write_text("nodes: [\n")
    with pytest.raises(GraphError, match="not valid YAML"):
        load(tmp_path / "bad.yaml")
    with pytest.raises(GraphError, match="must not end in .npz"):
        save(every_kind(), tmp_path / "net.npz")


def test_a_key_given_twice_is_an_error_not_last_wins(tmp_path):
    """Two ``shift:`` keys in one requant: YAML would keep the second without a word."""
    save(every_kind(), tmp_path / "net.yaml")
    text = (tmp_path / "net.yaml").read_text()
    doubled = text.replace("requant: {shift: 6,", "requant: {shift: 6, shift: 2,", 1)
    assert doubled != text
    (tmp_path / "net.yaml").write_text(doubled)
    with pytest.raises(GraphError, match="shift is given twice; keep one") as info:
        load(tmp_path / "net.yaml")
    assert str(tmp_path / "net.yaml") in str(info.value)


def test_round_trip_of_fixed_point_requantizations(tmp_path):
    """SCL multipliers per tensor and per channel, and an add of two multiplied inputs."""
    rng = np.random.default_rng(2)
    w = rng.integers(-20, 20, size=(8, 3, 3, 3), dtype=np.int8)
    per_channel = Requant(0, (-128, 127), bias_first=True, multiplier=tuple(range(20000, 20008)),
                          shifts=tuple(range(9, 17)), offsets=tuple(range(256, 264)))
    nodes = [
        Node("a", "conv2d", ["image"], attrs=dict(pad=1), weights=w, bias=np.arange(8, dtype=np.int32),
             requant=per_channel),
        Node("b", "conv2d", ["image"], attrs=dict(pad=1), weights=w,
             requant=Requant(9, (0, 127), bias_first=True, multiplier=23456, pre_shift=2,
                             offset=256)),
        Node("sum", "add", ["a", "b"], attrs=dict(scale_a=20000, scale_b=17000),
             requant=Requant(20, (-128, 127), offset=1 << 19)),
    ]
    g = Graph("fixed", {"image": (1, 3, 8, 8)}, nodes, ["sum"])
    yaml_path, _ = save(g, tmp_path / "net.yaml")
    back = load(yaml_path)
    assert back == g and back.node("a").requant == per_channel
    assert back.node("sum").attrs["scale_a"] == 20000
    _same_outputs(g, back, random_input(g, 2))


def test_round_trip_of_24_bit_and_two_pass_requantizations(tmp_path):
    """Q23 row multipliers (ALU_SCALE: 2) and a pool's two Q15 factors with a pre-offset; a
    file with only 16-bit fields writes none of the new keys."""
    rng = np.random.default_rng(3)
    w = rng.integers(-20, 20, size=(8, 3, 3, 3), dtype=np.int8)
    wide = Requant(0, (-128, 127), bias_first=True, multiplier=tuple(range(5_000_000, 5_000_008)),
                   shifts=tuple(range(9, 17)), offsets=tuple(range(256, 264)), multiplier_bits=24)
    pool = Requant(20, (-128, 127), multiplier=23117, multiplier2=17001, pre_offset=-700,
                   pre_shift=15, offset=1 << 19)
    nodes = [Node("a", "conv2d", ["image"], attrs=dict(pad=1), weights=w, requant=wide),
             Node("g", "global_avg_pool", ["a"], requant=pool)]
    g = Graph("wide", {"image": (1, 3, 8, 8)}, nodes, ["g"])
    yaml_path, _ = save(g, tmp_path / "net.yaml")
    text = yaml_path.read_text()
    assert "multiplier_bits: 24" in text and "multiplier2: 17001" in text
    back = load(yaml_path)
    assert back == g and back.node("a").requant == wide and back.node("g").requant == pool
    _same_outputs(g, back, random_input(g, 3))


def test_a_second_factor_needs_a_first():
    with pytest.raises(GraphError, match="scale_a2=5 is a second factor after scale_a"):
        Node("sum", "add", ["a", "b"], attrs=dict(scale_a2=5, scale_b=3),
             requant=Requant(20, (-128, 127)))


def test_an_older_file_without_the_fixed_point_fields_loads(tmp_path):
    g = every_kind()
    yaml_path, _ = save(g, tmp_path / "net.yaml")
    text = yaml_path.read_text()
    assert "multiplier" not in text and "scale_a" not in text     # written as before
    assert "pre_offset" not in text
    assert load(yaml_path) == g
