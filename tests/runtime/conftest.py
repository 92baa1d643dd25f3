"""Fixtures of the runtime tests: the configurations the issue names, devices, random data.

On the configurations in :data:`MIRRORED_CONFIGS` every program also runs on tsim, with the
memory model's random latency, reordering and backpressure, and the final DRAM, status and
exact counters must equal fsim's, and so must the two traces in ``arch`` mode: every
scratchpad row and DRAM element each instruction writes. ``AVTA_TSIM_MIRROR=0`` turns
the mirror off for a quick fsim-only run; ``AVTA_MIRROR_TRACE=0`` keeps the mirror but skips the
traces.

Every program also runs first on a timing-only fsim and on fsim's compiled bit-exact interpreter
(:class:`TimedFsimBackend`), whose status, cycles and counters must equal the bit-exact Python
machine's, and the interpreter's DRAM too: both are held to the reference on every operator and
network test.

A test that takes ``device`` on a mirrored configuration is marked ``tsim`` (see
:func:`pytest_collection_modifyitems`), so ``-m "not tsim"`` leaves it out.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.runtime.device import Device
from avta.runtime.wellformed import check_wellformed
from avta.sim.fsim import Fsim
from avta.sim.fsim.backend import FsimBackend

#: The configurations every runtime test runs on: small, upstream's, two batch rows and
#: a rectangular GEMM core.
RUNTIME_CONFIGS = ("tiny", "default", "batch2", "rect")
#: The configurations whose programs also run on tsim.
MIRRORED_CONFIGS = ("tiny", "default")
#: Whether they do (``AVTA_TSIM_MIRROR=0``: no), and with traces (``AVTA_MIRROR_TRACE=0``: no).
MIRROR = os.environ.get("AVTA_TSIM_MIRROR", "1") != "0"
MIRROR_TRACE = os.environ.get("AVTA_MIRROR_TRACE", "1") != "0"
#: Configuration fixtures of a fixed configuration (tests/conftest.py).
_FIXED_CONFIGS = {"default_cfg": "default", "tiny_cfg": "tiny"}


class CheckedDevice(Device):
    """A device that first proves every program well-formed (docs/isa.md §3 rules (a)-(e)) with the
    independent checker, then runs it."""

    def run(self, program, **kwargs):
        check_wellformed(program, raise_error=True)
        return super().run(program, **kwargs)


class TimedFsimBackend(FsimBackend):
    """Bit-exact fsim, the Python machine (the reference), that first runs every program on a
    timing-only twin (which writes nothing to DRAM, so both see the same image) and, in order, on
    a compiled bit-exact twin (on a copy of DRAM), and fails unless all three end alike with the
    same cycles and every counter equal, and the compiled twin leaves DRAM as the reference
    does."""

    def __init__(self, cfg, *, schedule="inorder", seed=None, **options):
        super().__init__(cfg, schedule=schedule, seed=seed, **options)
        self.sim.compiled = False       # the Python machine, the reference
        self.timing = Fsim(cfg, strict=True, schedule=schedule, seed=seed, timing_only=True)
        self.timing.compiled = True     # the compiled scheduler, held to the bit-exact run
        # The compiled data interpreter (sim/fsim/compiled_exact.py), held to it too: it runs
        # the in-order schedule only (a random one would be the Python machine twice).
        self.compiled = None
        if schedule == "inorder":
            self.compiled = Fsim(cfg, strict=True, schedule=schedule, seed=seed)
            self.compiled.compiled = True

    def run(self, insn_addr, insn_count, *, bases=None):
        before = self._dram.copy()
        timed = self.timing.run(self._dram, insn_addr, insn_count, bases=bases)
        assert np.array_equal(before, self._dram), "the timing-only run wrote to DRAM"
        twin_dram = before.copy()
        twin = None if self.compiled is None else \
            self.compiled.run(twin_dram, insn_addr, insn_count, bases=bases)
        exact = super().run(insn_addr, insn_count, bases=bases)
        fields = ("status", "cycles", "counters", "error_code", "error_insn")
        assert [getattr(timed, f) for f in fields] == [getattr(exact, f) for f in fields], \
            f"timing-only fsim {timed} but bit-exact fsim {exact}"
        if twin is not None:
            assert [getattr(twin, f) for f in fields + ("detail",)] == \
                [getattr(exact, f) for f in fields + ("detail",)], \
                f"compiled bit-exact fsim {twin} but the Python machine {exact}"
            assert np.array_equal(twin_dram, self._dram), \
                "the compiled bit-exact fsim left DRAM other than the Python machine"
        return exact


def _mirrored(cfg):
    return MIRROR and cfg.name in MIRRORED_CONFIGS


@pytest.fixture(params=RUNTIME_CONFIGS)
def cfg(request):
    return load_config(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(0xDEADB)     # upstream's test seed


@pytest.fixture
def int8(rng):
    """``int8(shape, lo=-128, hi=128)``: random int8 data from the test's ``rng``."""
    def draw(shape, lo=-128, hi=128):
        return rng.integers(lo, hi, shape, dtype=np.int8)
    return draw


@pytest.fixture
def device():
    """``device(cfg, *, schedule="inorder", seed=None, dram_size=1 << 20)``: a checked device on
    fsim (with its timing-only twin), mirrored onto tsim for :data:`MIRRORED_CONFIGS` (the module docstring)."""
    def make(cfg, *, schedule="inorder", seed=None, dram_size=1 << 20):
        backend = TimedFsimBackend(cfg, dram_size=dram_size, schedule=schedule, seed=seed)
        if _mirrored(cfg):
            from avta.sim.memory_knobs import MemoryKnobs
            from avta.sim.mirror import MirrorBackend
            from avta.sim.tsim.backend import TsimBackend
            knobs = MemoryKnobs.random(seed=0 if seed is None else seed)
            backend = MirrorBackend(backend, TsimBackend(cfg, dram_size=dram_size, knobs=knobs,
                                                         trace=MIRROR_TRACE),
                                    trace_mode="arch" if MIRROR_TRACE else None)
        return CheckedDevice(cfg, backend)
    return make


def pytest_collection_modifyitems(items):
    """Mark ``tsim`` the tests here that take ``device`` on a mirrored configuration: the
    ``cfg`` parameter, or a fixed-configuration fixture (``default_cfg``, ``tiny_cfg``). A test
    that takes ``device`` and none of them is marked too: its device may be mirrored."""
    here = Path(__file__).parent
    for item in items:
        if "device" not in getattr(item, "fixturenames", ()) or here not in item.path.parents:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        names = [params["cfg"]] if isinstance(params.get("cfg"), str) else []
        names += [name for fixture, name in _FIXED_CONFIGS.items() if fixture in item.fixturenames]
        if MIRROR and (not names or any(name in MIRRORED_CONFIGS for name in names)):
            item.add_marker(pytest.mark.tsim)


@pytest.fixture
def fresh_builds(monkeypatch):
    """Programs built by the builders themselves, never read back from the program cache
    (a program read back keeps no token ledger: tests of how a builder pipelines need one)."""
    from avta.runtime import build_cache
    monkeypatch.setenv(build_cache.SWITCH, "0")
    build_cache.clear_memory()
    yield
    build_cache.clear_memory()
