"""Fixtures of the runtime tests."""

import numpy as np
import pytest

from avta.isa.config import load_config

from runtime_harness import RUNTIME_CONFIGS


@pytest.fixture(params=RUNTIME_CONFIGS)
def cfg(request):
    return load_config(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(0xDEADB)     # upstream's test seed
