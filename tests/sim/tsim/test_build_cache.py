"""The tsim build cache under stress: many processes publishing the same
build at once, a corrupt library, builds that died, a cache path with a space, an unwritable cache.

The compile step is replaced by a stub that writes a library-sized file: what is tested is the
publishing, not Verilator (tests/sim/tsim/test_harness.py builds real designs)."""

import multiprocessing
import os
import time

import pytest

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


def _build_in_child(queue):
    try:
        queue.put(str(build.build_library(VERILOG, data_bits=64)))
    except Exception as error:              # reported to the parent, which fails the test
        queue.put(f"error: {error!r}")


def test_many_processes_publish_one_build(cache):
    context = multiprocessing.get_context("fork")       # the children keep the stubs
    queue = context.Queue()
    children = [context.Process(target=_build_in_child, args=(queue,)) for _ in range(12)]
    for child in children:
        child.start()
    results = [queue.get(timeout=60) for _ in children]
    for child in children:
        child.join(timeout=60)
    assert len(set(results)) == 1 and not results[0].startswith("error"), results
    lib = build.build_library(VERILOG, data_bits=64)
    assert str(lib) == results[0] and build._intact(lib.parent)
    leftovers = [p.name for p in lib.parent.parent.iterdir() if p != lib.parent]
    assert leftovers == [], leftovers


def test_a_corrupt_library_is_rebuilt(cache):
    lib = build.build_library(VERILOG, data_bits=64)
    lib.write_bytes(lib.read_bytes()[:100])             # truncated: loading it would crash
    assert not build._intact(lib.parent)
    again = build.build_library(VERILOG, data_bits=64)
    assert again == lib and build._intact(again.parent) and again.stat().st_size == 1 << 16


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
