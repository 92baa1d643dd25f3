"""Fixtures of the simulator tests: random tensors and scratchpad rows. Hand-built DRAM images
are the product's :mod:`avta.sim.image`."""

import numpy as np
import pytest


def _random_tensor(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _sram_rows(sim, name):
    view = sim.sram(name)
    return view.reshape(view.shape[0], -1).view(np.uint8)


@pytest.fixture(scope="session")
def random_tensor():
    """``random_tensor(rng, shape, dtype)``: uniform over the whole range of ``dtype``."""
    return _random_tensor


@pytest.fixture(scope="session")
def sram_rows():
    """``sram_rows(sim, name)``: scratchpad ``name`` as ``(depth, row_bytes)`` uint8, each row's
    bytes in DRAM order."""
    return _sram_rows
