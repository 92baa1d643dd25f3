"""Run a program on the RTL core in the Amaranth simulator, with the DRAM model behind its four
memory clients, and report the run as a :class:`avta.runtime.backend.RunResult`.

This is the slow, exact reference for the core alone (no VME, no AXI); tsim runs the whole
accelerator on Verilator. Use small configurations and short programs.
"""

from avta.isa.registers import COUNTER_NAMES
from avta.runtime.backend import RunResult

from ..core.core import Core
from .testbench import run_sim
from .dram import DramModel

__all__ = ["run_core"]

_BASES = ("uop", "inp", "wgt", "acc", "out")


def run_core(cfg, dram, insn_addr, insn_count, *, bases=None, max_cycles=200_000, seed=0,
             latency=(1, 1), stall=0.0, reorder=False, outstanding=4, core_args=None,
             launches=1, watch=None):
    """Run ``insn_count`` instructions at ``insn_addr`` of ``dram`` (a bytearray, modified in
    place) on a freshly reset core; the memory model's knobs as in :class:`DramModel`.

    ``bases`` maps ``UOP``…``OUT`` (or lower case) to the base registers. ``launches`` > 1 runs
    the same program again without a reset (scratchpads persist); the last result is returned.
    Status ``timeout`` when the run has not ended within ``max_cycles``. ``watch(core)``, when
    given, returns an async testbench that runs alongside (to sample the core's ports).
    """
    core = Core(cfg=cfg, **(core_args or {}))
    model = DramModel(dram, data_bits=cfg.axi_data_bits, seed=seed, latency=latency,
                      stall=stall, reorder=reorder, outstanding=outstanding)
    model.add_read_client(core.fetch_mem, "fetch")
    model.add_read_client(core.ld_mem, "load")
    model.add_read_client(core.cp_mem, "compute")
    model.add_write_client(core.st_mem, "store")
    bases = {k.lower(): v for k, v in (bases or {}).items()}
    results = []

    async def bench(ctx):
        ctx.set(core.insn_addr, insn_addr)
        ctx.set(core.insn_count, insn_count)
        for name in _BASES:
            ctx.set(getattr(core, f"{name}_base"), bases.get(name, 0))
        for _ in range(launches):
            ctx.set(core.launch, 1)
            await ctx.tick()
            ctx.set(core.launch, 0)
            await ctx.tick()
            for _ in range(max_cycles):
                _, _, busy = await ctx.tick().sample(core.busy)
                if not busy:
                    break
            else:
                results.append(RunResult("timeout", cycles=ctx.get(core.cycles),
                                         detail=f"no finish or error in {max_cycles} cycles"))
                return
            counters = {name: ctx.get(getattr(core.counters, name.lower()))
                        for name in COUNTER_NAMES}
            if ctx.get(core.error):
                results.append(RunResult("error", cycles=ctx.get(core.cycles), counters=counters,
                                         error_code=int(ctx.get(core.err_code)),
                                         error_insn=ctx.get(core.err_insn)))
            else:
                results.append(RunResult("ok", cycles=ctx.get(core.cycles), counters=counters))

    background = [model.run] + ([watch(core)] if watch is not None else [])
    run_sim(core, bench, background=background, name=f"core-{cfg.name}")
    return results[-1]
