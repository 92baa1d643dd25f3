"""Fixtures of the tsim tests."""

import pytest

from avta.isa.config import load_config

from tsim_harness import TSIM_CONFIGS


@pytest.fixture(params=TSIM_CONFIGS)
def cfg(request):
    return load_config(request.param)
