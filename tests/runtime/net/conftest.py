"""Fixtures of the network tests: the builders at the small input size the default run uses,
built (and calibrated) once per session."""

import pytest

from avta.runtime.net.builders import BUILDERS

#: The input size of the quick tests (the smallest every network accepts: its total stride).
SMALL = 32


@pytest.fixture(scope="session")
def small_networks():
    """Every builder's network at 32×32, calibrated, by name."""
    return {name: builder(SMALL) for name, builder in BUILDERS.items()}
