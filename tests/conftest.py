"""Shared fixtures: configurations by name, and the list of shipped ones for parametrizing.

The tests mirror the source tree (a test of ``X/Y/z.py`` lives under ``tests/X/Y/``). pytest
imports them with ``--import-mode=importlib`` (pyproject.toml), so it never changes sys.path and
no test imports another: what tests share are fixtures in the ``conftest.py`` of the folder that
needs them. Markers say what a test needs: ``tsim`` (a Verilator build run on tsim),
``cocotb`` (cocotb on Verilator) and ``yosys`` (Yosys, nextpnr or SymbiYosys, marked here by the
fixtures and folders that run them) and ``slow`` (left out unless asked for);
``pytest -m "not tsim and not cocotb and not yosys and not slow"`` is the fast subset: no
Verilator build, no synthesis, no proof.
"""

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


#: Fixtures that run Yosys or nextpnr: a test that takes one is marked ``yosys``.
_SYNTHESIS_FIXTURES = {"tiny_rtlil", "gemm_lane", "known_memories", "memory_unit"}
_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items):
    """Mark ``yosys`` the tests that synthesize or prove: those taking a synthesis fixture,
    those of tests/synth/test_synth_tiny.py, and the proofs of tests/formal (each writes its
    SymbiYosys run into ``tmp_path``)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        proof = (_TESTS / "formal") in item.path.parents and "tmp_path" in names
        if names & _SYNTHESIS_FIXTURES or proof or item.path.name == "test_synth_tiny.py":
            item.add_marker(pytest.mark.yosys)


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
