"""One small layer run on a device, for the energy tests."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.runtime.net import random_input
from avta.runtime.net.executor import dram_bytes, run_network
from avta.runtime.net.graph import Graph, Node
from avta.runtime.ops.requant import Requant
from avta.sim.targets import make_device


def one_conv():
    """A 3x3 convolution of 8 channels to 8 on a 6x6 input, padded: 20,736 MACs."""
    rng = np.random.default_rng(0)
    conv = Node("conv", "conv2d", ["x"], attrs=dict(pad=1),
                weights=rng.integers(-8, 8, size=(8, 8, 3, 3), dtype=np.int8),
                bias=np.arange(8, dtype=np.int32), requant=Requant(4, (0, 127)))
    return Graph("one-conv", {"x": (1, 8, 6, 6)}, [conv], ["conv"])


@pytest.fixture
def run_layer():
    """``run_layer(config, target)``: the :class:`LayerReport` of :func:`one_conv`."""
    def run(config, target):
        cfg = load_config(config)
        graph = one_conv()
        device = make_device(cfg, target, dram_bytes(cfg, graph))
        (layer,) = run_network(device, graph, random_input(graph, seed=1)).layers
        return cfg, layer
    return run
