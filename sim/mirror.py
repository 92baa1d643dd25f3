"""Differential execution: a runtime backend that runs every program on two targets and
insists they agree.

``MirrorBackend(reference, other)`` writes DRAM to both, runs each program on both, and raises
:class:`MirrorMismatch` unless they end with the same status, error code and instruction, the
same exact counters (bytes and steps; cycle counts may differ) and the same DRAM, byte for
byte. It returns the reference's result, so host code sees the reference (usually fsim).

With ``trace_mode`` (``retire`` or ``arch``) each run is also traced on both targets
(:mod:`avta.sim.trace`) and the traces must match; a mismatch message is the trace diff's
report, and the two traces are kept in ``trace_dir`` for ``avta trace-diff``. The other target
must then be a tsim backend made with ``trace=True``.
"""

import tempfile
from pathlib import Path

import numpy as np

from avta.isa.registers import BYTE_COUNTERS, STEP_COUNTERS
from avta.runtime.backend import Backend

__all__ = ["MirrorBackend", "MirrorMismatch", "run_differences"]

#: How many differing DRAM bytes a mismatch message lists.
SHOWN = 8


class MirrorMismatch(AssertionError):
    """The two targets disagree; the message says where first."""


def run_differences(first, second, dram_a, dram_b, names):
    """What differs between two runs of one program, one line each (empty when they agree).

    ``first``/``second`` are the RunResults, ``dram_a``/``dram_b`` the final DRAM arrays and
    ``names`` the two targets' names. Compared: the end (status, error code and instruction)
    and, when the run ended ``ok``, the exact counters (bytes and steps) and the DRAM byte for
    byte (after an error only the code and the instruction are defined, docs/isa.md §3.5).
    """
    a, b = names
    lines = []
    ends = [(r.status, r.error_code, r.error_insn) for r in (first, second)]
    if ends[0] != ends[1]:
        lines.append(f"{a} ended {ends[0]}, {b} ended {ends[1]}")
    if first.status == "ok":
        for name in BYTE_COUNTERS + STEP_COUNTERS:
            if first.counters[name] != second.counters[name]:
                lines.append(f"counter {name} is {first.counters[name]} on {a}, "
                             f"{second.counters[name]} on {b}")
        differ = np.flatnonzero(dram_a != dram_b)
        if differ.size:
            shown = ", ".join(f"{addr:#x}: {dram_a[addr]:#04x} vs {dram_b[addr]:#04x}"
                              for addr in differ[:SHOWN])
            lines.append(f"{differ.size} DRAM bytes differ between {a} and {b} ({shown})")
    return lines


class MirrorBackend(Backend):
    """``reference`` and ``other`` are backends with a ``dram`` array (fsim, tsim)."""

    def __init__(self, reference, other, *, trace_mode=None, trace_dir=None):
        if reference.dram_size != other.dram_size:
            raise ValueError(f"the two targets have {reference.dram_size} and "
                             f"{other.dram_size} bytes of DRAM; they must be equal")
        self.reference, self.other = reference, other
        self.trace_mode = trace_mode
        self._trace_dir = Path(trace_dir) if trace_dir else None
        self.name = f"{reference.name}+{other.name}"
        self.runs = 0

    @property
    def config_id(self):
        ids = (self.reference.config_id, self.other.config_id)
        if ids[0] != ids[1]:
            raise MirrorMismatch(f"CONFIG_ID {ids[0]:#010x} on {self.reference.name} but "
                                 f"{ids[1]:#010x} on {self.other.name}")
        return ids[0]

    @property
    def dram_size(self):
        return self.reference.dram_size

    @property
    def dram(self):
        return self.reference.dram

    def write(self, addr, data):
        self.reference.write(addr, data)
        self.other.write(addr, data)

    def read(self, addr, nbytes):
        return self.reference.read(addr, nbytes)

    def run(self, insn_addr, insn_count, *, bases=None):
        self.runs += 1
        where = f"run {self.runs} ({insn_count} instructions at {insn_addr:#x})"
        if self.trace_mode:
            first, second = self._run_traced(where, insn_addr, insn_count, bases)
        else:
            first = self.reference.run(insn_addr, insn_count, bases=bases)
            second = self.other.run(insn_addr, insn_count, bases=bases)
        differences = run_differences(first, second, self.reference.dram, self.other.dram,
                                      (self.reference.name, self.other.name))
        if differences:
            raise MirrorMismatch(f"{where}: {differences[0]}")
        return first

    def _run_traced(self, where, insn_addr, insn_count, bases):
        from avta.sim.trace.diff import diff_files
        from avta.sim.trace.record import record_backend_trace
        keep = self._trace_dir is not None
        folder = self._trace_dir or Path(tempfile.mkdtemp(prefix="avta-mirror-"))
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"run{self.runs}-{backend.name}.trace"
                 for backend in (self.reference, self.other)]
        results = [record_backend_trace(path, backend, insn_addr, insn_count,
                                        mode=self.trace_mode, bases=bases)
                   for path, backend in zip(paths, (self.reference, self.other))]
        report = diff_files(*paths)
        if not report.matched:
            raise MirrorMismatch(f"{where}: the traces differ (kept in {folder}/; replay the "
                                 f"comparison with avta trace-diff {paths[0]} {paths[1]}):\n"
                                 f"{report.format()}")
        if not keep:
            for path in paths:
                path.unlink()
            folder.rmdir()
        return results
