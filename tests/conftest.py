"""Shared fixtures: configurations by name, and the list of shipped ones for parametrizing.

The tests mirror the source tree (a test of ``X/Y/z.py`` lives under ``tests/X/Y/``). pytest
imports them with ``--import-mode=importlib`` (pyproject.toml), so it never changes sys.path and
no test imports another: what tests share are fixtures in the ``conftest.py`` of the folder that
needs them. Markers say what a test needs: ``tsim`` (a Verilator build run on tsim) and
``cocotb`` (cocotb on Verilator); ``pytest -m "not tsim and not cocotb and not slow"`` builds
nothing with Verilator.
"""

import importlib.util
import sys
from pathlib import Path

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


# -- Transitional, until tests/tsim/ and tests/sim/test_tsim_harness.py follow the rules above ----
# They still import helper modules by bare name and carry no tsim mark. Their helpers are loaded
# here under those names (sys.modules only: sys.path is untouched), and their tests are marked
# tsim by path. Delete this section once they take fixtures and mark themselves.

HERE = Path(__file__).parent
_BARE_HELPERS = {"tsim_harness": HERE / "tsim" / "tsim_harness.py",
                 "copy_top": HERE / "sim" / "copy_top.py"}
_TSIM_BY_PATH = (HERE / "tsim", HERE / "sim" / "test_tsim_harness.py")


def _load_bare_helpers():
    for name, path in _BARE_HELPERS.items():
        if name in sys.modules or not path.exists():
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_load_bare_helpers()


def pytest_collection_modifyitems(items):
    for item in items:
        if any(item.path == path or path in item.path.parents for path in _TSIM_BY_PATH):
            item.add_marker(pytest.mark.tsim)
