"""Shared fixtures: configurations by name, and the list of shipped ones for parametrizing."""

import pytest

from avta.isa.config import load_config, shipped_configs

SHIPPED = shipped_configs()


@pytest.fixture(params=SHIPPED)
def shipped_cfg(request):
    """Each shipped configuration in turn."""
    return load_config(request.param)


@pytest.fixture
def default_cfg():
    return load_config("default")


@pytest.fixture
def tiny_cfg():
    return load_config("tiny")
