"""Run a program on the RTL core in the Amaranth simulator, with the DRAM model behind its four
memory clients, and report the run as a :class:`avta.runtime.backend.RunResult`.

This is the slow, exact reference for the core alone (no VME, no AXI); tsim runs the whole
accelerator on Verilator. Use small configurations and short programs.
"""

from avta.isa.memories import SCRATCHPADS
from avta.isa.registers import COUNTER_NAMES
from avta.runtime.host import check_bases, run_result
from avta.sim.memory_knobs import MemoryKnobs

from avta.hw.core.core import READ_CLIENTS, WRITE_CLIENTS, Core
from .dram import DramModel
from .testbench import run_sim

__all__ = ["run_core", "core_memory", "launch"]


def core_memory(core, dram, knobs=MemoryKnobs()):
    """A :class:`DramModel` over ``dram`` serving the core's four memory clients (fetch, load,
    compute, store), as the memory engine does in the full design."""
    model = DramModel(dram, data_bits=core.cfg.axi_data_bits, knobs=knobs)
    for name in READ_CLIENTS:
        model.add_read_client(getattr(core, name), name)
    for name in WRITE_CLIENTS:
        model.add_write_client(getattr(core, name), name)
    return model


async def launch(ctx, core, max_cycles):
    """Pulse the core's ``launch`` and wait, at most ``max_cycles``, for it to stop being busy;
    the run's status (``ok``, ``error`` or ``timeout``), as the host reads CTRL."""
    ctx.set(core.launch, 1)
    await ctx.tick()
    ctx.set(core.launch, 0)
    await ctx.tick()
    for _ in range(max_cycles):
        _, _, busy = await ctx.tick().sample(core.busy)
        if not busy:
            return "error" if ctx.get(core.error) else "ok"
    return "timeout"


def run_core(cfg, dram, insn_addr, insn_count, *, bases=None, max_cycles=200_000,
             knobs=MemoryKnobs(), core_args=None, launches=1, watch=None):
    """Run ``insn_count`` instructions at ``insn_addr`` of ``dram`` (a bytearray, modified in
    place) on a freshly reset core, with the memory model's ``knobs`` (:class:`MemoryKnobs`).

    ``bases`` maps ``UOP``…``OUT`` to the base registers. ``launches`` > 1 runs the same
    program again without a reset (scratchpads persist); the last result is returned. Status
    ``timeout`` when the run has not ended within ``max_cycles``. ``watch(core)``, when given,
    returns an async testbench that runs alongside (to sample the core's ports).
    """
    core = Core(cfg=cfg, **(core_args or {}))
    model = core_memory(core, dram, knobs)
    bases = check_bases(bases)
    results = []

    async def bench(ctx):
        ctx.set(core.insn_addr, insn_addr)
        ctx.set(core.insn_count, insn_count)
        for key, value in bases.items():
            ctx.set(getattr(core, f"{key.lower()}_base"), value)
        for _ in range(launches):
            status = await launch(ctx, core, max_cycles)
            # The core's ports carry what the control registers would show.
            values = {name: ctx.get(getattr(core.counters, name.lower()))
                      for name in COUNTER_NAMES}
            values.update(CYCLES=ctx.get(core.cycles), ERR_CODE=int(ctx.get(core.err_code)),
                          ERR_INSN=ctx.get(core.err_insn))
            results.append(run_result(status, values, max_cycles=max_cycles))
            if status == "timeout":
                return

    async def no_bank_conflict(ctx):
        # Two units on one memory port would lose a write or read the wrong row: fail at once.
        cycle = 0
        async for _, _, conflict in ctx.tick().sample(core.bank_conflict):
            cycle += 1
            if conflict:
                pads = [name for i, name in enumerate(SCRATCHPADS) if conflict >> i & 1]
                raise AssertionError(f"{cfg.name}: two units on one port of a {'/'.join(pads)} "
                                     f"memory in cycle {cycle} (hw/core/banks.py)")

    background = [model.run, no_bank_conflict] + ([watch(core)] if watch is not None else [])
    run_sim(core, bench, background=background, name=f"core-{cfg.name}")
    return results[-1]
