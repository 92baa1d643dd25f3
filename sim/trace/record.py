"""Record one run's trace on fsim or tsim (header, events, end; :mod:`.schema`)."""

import json

import numpy as np

from avta.isa.encoding import INSN_BYTES

from .schema import TraceWriter, canonical_mode, end_record

__all__ = ["record_trace", "record_backend_trace"]


def record_trace(path, sim, dram, insn_addr, insn_count, *, mode="arch", bases=None,
                 **run_options):
    """Run ``insn_count`` instructions at ``insn_addr`` on ``sim`` and write the trace to
    ``path``; the :class:`~avta.runtime.backend.RunResult`.

    ``sim`` is an :class:`avta.sim.fsim.Fsim` built with ``trace=None`` (its tracer is set up
    here) or an :class:`avta.sim.tsim.driver.Tsim` made with ``trace=True``. ``dram`` (a
    writable bytearray or uint8 array) changes in place; ``run_options`` go to ``sim.run``
    (e.g. ``max_cycles`` for tsim).
    """
    from avta.sim.fsim import Fsim
    mode = canonical_mode(mode)
    cfg = sim.cfg
    raw = np.frombuffer(dram, dtype=np.uint8) if not isinstance(dram, np.ndarray) else dram
    program = raw[insn_addr:insn_addr + insn_count * INSN_BYTES].tobytes()
    target = "fsim" if isinstance(sim, Fsim) else "tsim"
    with TraceWriter(path, cfg, target=target, mode=mode, insn_addr=insn_addr,
                     insn_count=insn_count, program=program) as writer:
        if target == "fsim":
            sim.set_trace(writer, mode)
            try:
                result = sim.run(dram, insn_addr, insn_count, bases=bases, **run_options)
            finally:
                sim.set_trace(None)
        else:
            writer.close()      # the harness appends the events itself
            result = sim.run(raw, insn_addr, insn_count, bases=bases, events_to=path,
                             trace_mode=mode, **run_options)
    with open(path, "a") as out:
        out.write(json.dumps(end_record(result)) + "\n")
    return result


def record_backend_trace(path, backend, insn_addr, insn_count, *, mode="arch", bases=None):
    """:func:`record_trace` of a run on a runtime backend (``FsimBackend``, or ``TsimBackend``
    made with ``trace=True``): its simulator, its DRAM and its own run options."""
    return record_trace(path, backend.sim, backend.dram, insn_addr, insn_count, mode=mode,
                        bases=bases, **backend.run_options())
