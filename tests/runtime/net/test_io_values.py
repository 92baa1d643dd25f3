"""Values of the network file that are not what they should be — ``weights:`` naming a .npy
file or a number, a node's ``inputs: 5``, ``outputs: 5`` — are one line naming the file, never
a traceback; a network without nodes is written as one."""

import numpy as np
import pytest

from avta.cli import main
from avta.runtime.net.graph import Graph, GraphError, Node
from avta.runtime.net.io import load, save, to_yaml
from avta.runtime.ops.requant import Requant


@pytest.fixture
def one_conv(tmp_path):
    weights = np.random.default_rng(1).integers(-20, 20, (16, 16, 3, 3), dtype=np.int8)
    path, _ = save(Graph("one", {"x": (1, 16, 8, 8)},
                         [Node("c", "conv2d", ["x"], attrs=dict(pad=1), weights=weights,
                               requant=Requant(6, (0, 127)))], ["c"]), tmp_path / "one.yaml")
    return path


def test_weights_naming_a_npy_file(one_conv, tmp_path, capsys):
    np.save(tmp_path / "one.npy", np.zeros(3, np.int8))
    one_conv.write_text(one_conv.read_text().replace("weights: one.npz", "weights: one.npy"))
    with pytest.raises(GraphError, match=r"one.npy: not a numpy .npz file \(numpy.savez"):
        load(one_conv)
    assert main(["run", str(one_conv), "--config", "tiny"]) == 2
    assert "one.npy: not a numpy .npz file" in capsys.readouterr().err


#: (what the network file says, what it says instead, the start of the error): weights that are
#: not a file name, node inputs and network outputs that are not lists of names.
WRONG_KINDS = [(text, f"{text.rsplit(' ', 1)[0]} {value}", message)
               for text, values, message in (
                   ("weights: one.npz", ("5", "[one.npz]", "{a: 1}"), "one.yaml: weights is "),
                   ("op: conv2d, inputs: [x]", ("5", "{a: 1}", "[[x]]"),
                    "conv2d node 'c': inputs is "),
                   ("outputs: [c]", ("5", "[[c]]", "{c: 1}"), "one.yaml: outputs is "))
               for value in values]


@pytest.mark.parametrize("text, replacement, message", WRONG_KINDS,
                         ids=[r for _, r, _ in WRONG_KINDS])
def test_a_value_of_the_wrong_kind(one_conv, text, replacement, message, capsys):
    one_conv.write_text(one_conv.read_text().replace(text, replacement))
    assert main(["run", str(one_conv), "--config", "tiny"]) == 2
    assert message in capsys.readouterr().err


def test_a_network_without_nodes_is_written_with_an_empty_list():
    text = to_yaml(Graph("none", {"x": (1, 16, 4, 4)}, [], ["x"]), "none.npz")
    assert text.rstrip().endswith("nodes: []")
