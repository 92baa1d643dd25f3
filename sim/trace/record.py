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

    ``sim`` is a simulator that can trace itself: an :class:`avta.sim.fsim.Fsim` or an
    :class:`avta.sim.tsim.driver.Tsim` made with ``trace=True`` (anything with a
    ``TRACE_TARGET`` and a ``run_traced`` method). ``dram`` (a writable bytearray or uint8
    array) changes in place; ``run_options`` go to the run (e.g. ``max_cycles`` for tsim).
    """
    mode = canonical_mode(mode)
    raw = np.frombuffer(dram, dtype=np.uint8) if not isinstance(dram, np.ndarray) else dram
    program = raw[insn_addr:insn_addr + insn_count * INSN_BYTES].tobytes()
    with TraceWriter(path, sim.cfg, target=sim.TRACE_TARGET, mode=mode, insn_addr=insn_addr,
                     insn_count=insn_count, program=program) as writer:
        result = sim.run_traced(writer, mode, raw, insn_addr, insn_count, bases=bases,
                                **run_options)
    with open(path, "a") as out:
        out.write(json.dumps(end_record(result)) + "\n")
    return result


def record_backend_trace(path, backend, insn_addr, insn_count, *, mode="arch", bases=None):
    """:func:`record_trace` of a run on a runtime backend (``FsimBackend``, or ``TsimBackend``
    made with ``trace=True``): its simulator, its DRAM and its own run options."""
    return record_trace(path, backend.sim, backend.dram, insn_addr, insn_count, mode=mode,
                        bases=bases, **backend.run_options())
