"""The RTL tests run in the Amaranth simulator, which is slow: long sweeps are marked ``slow``
and run only when asked (``pytest -m slow``), as the README says of slow tests."""

import pytest


def pytest_collection_modifyitems(config, items):
    if config.option.markexpr:
        return
    skip = pytest.mark.skip(reason="slow RTL simulation; run with `pytest -m slow`")
    for item in items:
        if "slow" in item.keywords and item.path.is_relative_to(config.rootpath / "tests" / "hw"):
            item.add_marker(skip)
