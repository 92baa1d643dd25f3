"""Helpers shared by the Amaranth-simulator testbenches: running a design, stream transfers.

Waveforms are written only when the environment variable ``AVTA_VCD`` names a directory, so the
default test run stays fast.
"""

import contextlib
import os
import re

from amaranth.sim import Simulator

__all__ = ["run_sim", "stream_put", "stream_get", "wait_until", "start_insn", "SimTimeout"]


class SimTimeout(AssertionError):
    """A bounded wait in a testbench ran out of cycles."""


def run_sim(dut, *benches, background=(), name="sim", period=1e-8):
    """Simulate ``dut`` with a clock until every bench in ``benches`` has returned.

    ``background`` benches (device models) run alongside and are cut off at the end.
    """
    sim = Simulator(dut)
    sim.add_clock(period)
    for bench in benches:
        sim.add_testbench(bench)
    for bench in background:
        sim.add_testbench(bench, background=True)
    vcd_dir = os.environ.get("AVTA_VCD")
    if vcd_dir:
        os.makedirs(vcd_dir, exist_ok=True)
        path = os.path.join(vcd_dir, re.sub(r"[^\w.-]+", "_", name) + ".vcd")
        writer = sim.write_vcd(path)
    else:
        writer = contextlib.nullcontext()
    with writer:
        sim.run()


async def stream_put(ctx, s, payload, *, timeout=1000):
    """Send one ``payload`` on stream ``s`` (a source driven by the testbench)."""
    ctx.set(s.valid, 1)
    ctx.set(s.payload, payload)
    for _ in range(timeout):
        _, _, ready = await ctx.tick().sample(s.ready)
        if ready:
            ctx.set(s.valid, 0)
            return
    raise SimTimeout(f"stream_put: no ready within {timeout} cycles")


async def stream_get(ctx, s, *, timeout=1000):
    """Receive one payload from stream ``s`` (a sink driven by the testbench)."""
    ctx.set(s.ready, 1)
    for _ in range(timeout):
        _, _, valid, payload = await ctx.tick().sample(s.valid, s.payload)
        if valid:
            ctx.set(s.ready, 0)
            return payload
    raise SimTimeout(f"stream_get: no valid within {timeout} cycles")


async def start_insn(ctx, unit, insn):
    """Present ``insn`` (an :mod:`avta.isa.insn` instruction) on ``unit.insn`` and pulse
    ``unit.start`` for one cycle. Fields the unit's view lacks are skipped; values are wrapped
    to their field's width (``imm`` is signed)."""
    for name, value in insn.field_values().items():
        field = getattr(unit.insn, name, None)
        if field is not None:
            ctx.set(field, value & ((1 << len(field)) - 1))
    ctx.set(unit.start, 1)
    await ctx.tick()
    ctx.set(unit.start, 0)


async def wait_until(ctx, cond, *, timeout, what="condition"):
    """Tick until ``cond`` (a signal) is high at a clock edge; return the cycles waited."""
    for cycles in range(1, timeout + 1):
        _, _, value = await ctx.tick().sample(cond)
        if value:
            return cycles
    raise SimTimeout(f"{what} not reached within {timeout} cycles")
