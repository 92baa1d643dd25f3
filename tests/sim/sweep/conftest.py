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


def _small_network(path, *, max_pool=False):
    """Write a conv (then a 2x2 max pool when ``max_pool``), a global pool and a dense layer to
    ``path`` (YAML and .npz): a tiny variant runs it in well under a second, and its cycles do
    not depend on its random weights."""
    from avta.runtime.net import GraphBuilder, save
    from avta.runtime.ops.requant import Requant
    rng = np.random.default_rng(3)
    b = GraphBuilder("small")
    x = b.input("x", (1, 8, 8, 8))
    y = b.conv2d("conv", x, rng.integers(-20, 20, (16, 8, 3, 3), dtype=np.int8), pad=1,
                 requant=Requant(shift=3, clip=(0, 127)))
    if max_pool:
        y = b.max_pool("pool", y, k=2, stride=2)
    y = b.global_avg_pool("gap", y, requant=Requant(shift=2, clip=(-128, 127)))
    y = b.dense("fc", y, rng.integers(-30, 30, (10, 16), dtype=np.int8),
                requant=Requant(shift=4, clip=(-128, 127)))
    save(b.build([y]), path)
    return path


@pytest.fixture(scope="session")
def conv_dense_network(tmp_path_factory):
    """:func:`_small_network` without the max pool."""
    return _small_network(tmp_path_factory.mktemp("net") / "small.yaml")


@pytest.fixture(scope="session")
def write_small_network():
    """:func:`_small_network`, for a test module that wants its own variant."""
    return _small_network
