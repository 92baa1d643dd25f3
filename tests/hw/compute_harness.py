"""Shared bench for the compute units (GEMM, ALU): random scratchpads, the same instructions on
the unit and on fsim, and the cycles each instruction took."""

import numpy as np

from avta.hw.sim.testbench import SimTimeout, run_sim
from avta.hw.sim.harness import ScratchpadHarness
from avta.isa.encoding import codec
from avta.sim.fsim.state import Scratchpads


def random_rows(cfg, pad, rng, *, small=False):
    """Random bytes for every row of ``pad`` as an ``(depth, row_bytes)`` uint8 array. ``small``
    keeps ACC lanes in a narrow range so that ALU results are not all saturated."""
    spec = getattr(cfg, pad)
    if pad == "acc" and small:
        lanes = rng.integers(-300, 300, (spec.depth, spec.row_bytes // 4), dtype=np.int32)
        return lanes.view(np.uint8).reshape(spec.depth, spec.row_bytes)
    return rng.integers(0, 256, (spec.depth, spec.row_bytes), dtype=np.uint8)


def uop_rows(cfg, uops):
    """Micro-ops as uop scratchpad rows (uint8 array, one row per micro-op)."""
    raw = np.frombuffer(codec(cfg).encode_uops(uops), dtype=np.uint8)
    return raw.reshape(len(uops), cfg.uop.row_bytes)


def run_unit(cfg, unit, ports, insns, contents, *, timeout=5000):
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
            for name, value in insn.field_values().items():
                field = getattr(unit.insn, name, None)
                if field is not None:
                    ctx.set(field, value & ((1 << len(field)) - 1))   # imm is signed
            ctx.set(unit.start, 1)
            await ctx.tick()
            ctx.set(unit.start, 0)
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


def fsim_pads(cfg, contents):
    """fsim scratchpads holding ``contents``."""
    pads = Scratchpads(cfg)
    for pad, rows in contents.items():
        pads.raw(pad)[:len(rows)] = rows
    return pads


def assert_rows_equal(cfg, pad, got_rows, want, what=""):
    row_bytes = getattr(cfg, pad).row_bytes
    lane = "<i4" if pad == "acc" else np.int8
    for i, value in enumerate(got_rows):
        raw = value.to_bytes(row_bytes, "little")
        if raw != want[i].tobytes():
            raise AssertionError(f"{pad} row {i} differs {what}: RTL "
                                 f"{np.frombuffer(raw, lane)} fsim {want[i].view(lane)}")
