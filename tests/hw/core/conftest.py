"""Fixtures of the core tests.

The bench of the compute units (GEMM, ALU): random scratchpads (``random_rows``, ``uop_rows``),
and ``compare_unit``, which runs the same instructions on the unit (returning the cycles each
took) and on fsim (from ``fsim_pads``) and compares the ACC rows.

``mirrored_core_device``: a runtime device whose every run goes to fsim and to the RTL core
(Amaranth simulator) from the same DRAM image, through :class:`avta.sim.mirror.MirrorBackend`:
they must agree byte for byte, in status and in the exact counters.
"""

import numpy as np
import pytest

from avta.sim.amaranth.backend import CoreSimBackend
from avta.sim.amaranth.harness import ScratchpadHarness
from avta.sim.amaranth.testbench import SimTimeout, run_sim, start_insn
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.memories import scratchpad
from avta.runtime.device import Device
from avta.sim.fsim.backend import FsimBackend
from avta.sim.fsim.state import Scratchpads
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.mirror import MirrorBackend

#: DRAM of both targets of ``mirrored_core_device``: small, because the core's memory model
#: checks every beat against it.
DRAM_BYTES = 1 << 15


def _random_rows(cfg, pad, rng, *, small=False):
    """Random bytes for every row of ``pad`` as an ``(depth, row_bytes)`` uint8 array. ``small``
    keeps ACC lanes in a narrow range so that ALU results are not all saturated."""
    spec = getattr(cfg, pad)
    if pad == "acc" and small:
        lanes = rng.integers(-300, 300, (spec.depth, spec.row_bytes // 4), dtype=np.int32)
        return lanes.view(np.uint8).reshape(spec.depth, spec.row_bytes)
    return rng.integers(0, 256, (spec.depth, spec.row_bytes), dtype=np.uint8)


def _uop_rows(cfg, uops):
    """Micro-ops as uop scratchpad rows (uint8 array, one row per micro-op)."""
    raw = np.frombuffer(codec(cfg).encode_uops(uops), dtype=np.uint8)
    return raw.reshape(len(uops), cfg.uop.row_bytes)


def _run_unit(cfg, unit, ports, insns, contents, *, timeout=5000):
    """Run ``insns`` one after another on ``unit`` with scratchpads preloaded from ``contents``
    (``{pad: uint8 array of rows}``); returns the final rows of every scratchpad in ``ports``
    and the cycles from ``start`` to ``done`` of each instruction."""
    harness = ScratchpadHarness(cfg, unit, ports)
    pads = {pad for pad, _ in ports.values()}
    got, cycles = {}, []

    async def bench(ctx):
        for pad in pads:
            rows = contents.get(pad)
            if rows is not None:
                harness.set_rows(ctx, pad, [int.from_bytes(r.tobytes(), "little") for r in rows])
        for insn in insns:
            await start_insn(ctx, unit, insn)
            for n in range(1, timeout):
                _, _, done = await ctx.tick().sample(unit.done)
                if done:
                    cycles.append(n + 1)
                    break
            else:
                raise SimTimeout(f"{insn} did not finish in {timeout} cycles")
        for pad in pads:
            got[pad] = harness.get_rows(ctx, pad)

    run_sim(harness, bench, name=f"{type(unit).__name__}-{cfg.name}")
    return got, cycles


def _fsim_pads(cfg, contents):
    """fsim scratchpads holding ``contents``."""
    pads = Scratchpads(cfg)
    for pad, rows in contents.items():
        pads.raw(pad)[:len(rows)] = rows
    return pads


def _assert_rows_equal(cfg, pad, got_rows, want, what=""):
    row = scratchpad(cfg, pad).row
    lane = row.dtype
    for i, value in enumerate(got_rows):
        raw = value.to_bytes(row.row_bytes, "little")
        if raw != want[i].tobytes():
            raise AssertionError(f"{pad} row {i} differs {what}: RTL "
                                 f"{np.frombuffer(raw, lane)} fsim {want[i].view(lane)}")


def _compare_unit(cfg, unit, ports, insns, contents, execute):
    """Run ``insns`` on the compute ``unit`` and with fsim's ``execute`` (``execute_gemm`` or
    ``execute_alu``) from the same ``contents``; the ACC rows must agree. The cycles of each."""
    got, cycles = _run_unit(cfg, unit, ports, insns, contents)
    ref = _fsim_pads(cfg, contents)
    for insn in insns:
        execute(cfg, insn, ref, codec(cfg), strict=False)
    _assert_rows_equal(cfg, "acc", got["acc"], ref.raw("acc"), f"after {insns}")
    return cycles


def _mirrored_core_device(config="tiny", *, seed=1, **knobs):
    """A Device on fsim mirrored onto the core; the core's memory shaken by ``knobs``
    (:class:`MemoryKnobs` fields; by default short random latency, reordering, backpressure)."""
    cfg = load_config(config) if isinstance(config, str) else config
    knobs = MemoryKnobs(**{"seed": seed, "latency": (0, 6), "backpressure": 0.2,
                           "reorder": True, **knobs})
    return Device(cfg, MirrorBackend(FsimBackend(cfg, dram_size=DRAM_BYTES),
                                     CoreSimBackend(cfg, dram_size=DRAM_BYTES, knobs=knobs)))


@pytest.fixture(scope="session")
def random_rows():
    """``random_rows(cfg, pad, rng, *, small=False)``: random rows of scratchpad ``pad``."""
    return _random_rows


@pytest.fixture(scope="session")
def uop_rows():
    """``uop_rows(cfg, uops)``: micro-ops as uop scratchpad rows."""
    return _uop_rows


@pytest.fixture(scope="session")
def fsim_pads():
    """``fsim_pads(cfg, contents)``: fsim scratchpads holding ``contents``."""
    return _fsim_pads


@pytest.fixture(scope="session")
def compare_unit():
    """``compare_unit(cfg, unit, ports, insns, contents, execute)`` → cycles: the instructions
    on a compute unit and on fsim's ``execute`` from the same scratchpads, ACC compared."""
    return _compare_unit


@pytest.fixture(scope="session")
def mirrored_core_device():
    """``mirrored_core_device(config="tiny", *, seed=1, **knobs)``: a runtime device on fsim
    mirrored onto the RTL core (the module docstring)."""
    return _mirrored_core_device
