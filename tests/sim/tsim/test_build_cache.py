"""The tsim build cache under stress: many processes publishing the same
build at once, a corrupt library, builds that died, a cache path with a space, an unwritable cache.

The compile step is replaced by a stub that writes a library-sized file: what is tested is the
publishing, not Verilator (tests/sim/tsim/test_harness.py builds real designs)."""

import os
import time

import pytest

from avta.sim.build_folder import intact
from avta.sim.tsim import build
from avta.sim.verilator import VerilatorError

VERILOG = "module vta_top; endmodule\n"


def _fake_compile(tmp, *args, **kwargs):
    time.sleep(0.05)                       # long enough for the processes to overlap
    (tmp / build.LIBRARY).write_bytes(os.urandom(1 << 16))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache with a space"
    monkeypatch.setenv("AVTA_CACHE", str(root))
    monkeypatch.setattr(build, "_compile", _fake_compile)
    monkeypatch.setattr(build, "verilator_env", lambda: {})
    monkeypatch.setattr(build, "verilator_version", lambda: (5, 48))
    return root


#: What each child process runs: the same stubs as :func:`cache`, then one build. Children are
#: fresh interpreters (not forks of this one, whose other threads, e.g. an earlier test's Dask
#: client, may hold a lock at the fork and leave a child waiting forever).
_CHILD = """
import os, sys, time
from avta.sim.tsim import build
def fake_compile(tmp, *args, **kwargs):
    time.sleep(0.5)                        # long enough for the processes to overlap
    (tmp / build.LIBRARY).write_bytes(os.urandom(1 << 16))
build._compile = fake_compile
build.verilator_env = lambda: {}
build.verilator_version = lambda: (5, 48)
try:
    print(build.build_library(sys.argv[1], data_bits=64))
except Exception as error:                 # reported to the parent, which fails the test
    print(f"error: {error!r}")
"""


def test_many_processes_publish_one_build(cache):
    import subprocess
    import sys
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, VERILOG], text=True,
                                 stdout=subprocess.PIPE) for _ in range(12)]
    results = [child.communicate(timeout=120)[0].strip() for child in children]
    assert len(set(results)) == 1 and not results[0].startswith("error"), results
    lib = build.build_library(VERILOG, data_bits=64)
    assert str(lib) == results[0] and intact(lib.parent, build.LIBRARY)
    leftovers = [p.name for p in lib.parent.parent.iterdir() if p != lib.parent]
    assert leftovers == [], leftovers


def test_a_corrupt_library_is_rebuilt(cache):
    lib = build.build_library(VERILOG, data_bits=64)
    lib.write_bytes(lib.read_bytes()[:100])             # truncated: loading it would crash
    assert not intact(lib.parent, build.LIBRARY)
    again = build.build_library(VERILOG, data_bits=64)
    assert again == lib and intact(again.parent, build.LIBRARY)
    assert again.stat().st_size == 1 << 16


def test_the_folders_of_dead_builds_are_removed(cache):
    lib = build.build_library(VERILOG, data_bits=64)
    dead = lib.parent.with_name(lib.parent.name + ".tmp999999999")     # no such process
    (dead / "obj").mkdir(parents=True)
    lib.unlink()                                         # force a build
    build.build_library(VERILOG, data_bits=64)
    assert not dead.exists()


def test_an_unwritable_cache_is_a_clear_error(cache):
    cache.write_text("a file where the cache folder should be")   # unwritable even for root
    with pytest.raises(VerilatorError, match="set AVTA_CACHE to a writable folder"):
        build.build_library(VERILOG, data_bits=64)
