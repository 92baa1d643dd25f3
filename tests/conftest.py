"""Shared fixtures: configurations by name, and the list of shipped ones for parametrizing.

The tests mirror the source tree (a test of ``X/Y/z.py`` lives under ``tests/X/Y/``). pytest
imports them with ``--import-mode=importlib`` (pyproject.toml), so it never changes sys.path and
no test imports another: what tests share are fixtures in the ``conftest.py`` of the folder that
needs them. Markers say what a test needs: ``tsim`` (a Verilator build run on tsim) and
``cocotb`` (cocotb on Verilator); ``pytest -m "not tsim and not cocotb and not slow"`` builds
nothing with Verilator.
"""

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


@pytest.fixture
def avta_on_a_full_disk():
    """``run(args, limit, cwd)``: ``avta ARGS`` in a subprocess whose files may not grow past
    ``limit`` bytes (``RLIMIT_FSIZE``; Python ignores SIGXFSZ), so that a write past it fails
    with EFBIG just as on a full disk. Returns the ``CompletedProcess``."""
    import resource
    import subprocess
    import sys

    def run(args, limit, cwd):
        def limited():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return subprocess.run([sys.executable, "-m", "avta.cli", *map(str, args)], cwd=cwd,
                              capture_output=True, text=True, preexec_fn=limited, timeout=600)
    return run
