"""Fixtures of the sweep tests: a network that every tiny variant runs in well under a second."""

import numpy as np
import pytest


@pytest.fixture(scope="session")
def one_conv_network(tmp_path_factory):
    """A one-convolution network YAML (with its .npz)."""
    from avta.runtime.net import Graph, Node, save
    from avta.runtime.ops.requant import Requant
    weights = np.random.default_rng(1).integers(-20, 20, (16, 16, 3, 3), dtype=np.int8)
    path = tmp_path_factory.mktemp("net") / "one.yaml"
    save(Graph("one", {"x": (1, 16, 8, 8)},
               [Node("c", "conv2d", ["x"], attrs=dict(pad=1), weights=weights,
                     requant=Requant(6, (0, 127)))], ["c"]), path)
    return path
