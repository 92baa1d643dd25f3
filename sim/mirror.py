"""Differential execution: a runtime backend that runs every program on two targets and
insists they agree.

``MirrorBackend(reference, other)`` writes DRAM to both, runs each program on both, and raises
:class:`MirrorMismatch` unless they end with the same status, error code and instruction, the
same exact counters (bytes and steps; cycle counts may differ) and the same DRAM, byte for
byte. It returns the reference's result, so host code sees the reference (usually fsim).
"""

import numpy as np

from avta.isa.registers import BYTE_COUNTERS, STEP_COUNTERS
from avta.runtime.device import Backend

__all__ = ["MirrorBackend", "MirrorMismatch"]

#: How many differing DRAM bytes a mismatch message lists.
SHOWN = 8


class MirrorMismatch(AssertionError):
    """The two targets disagree; the message says where first."""


class MirrorBackend(Backend):
    """``reference`` and ``other`` are backends with a ``dram`` array (fsim, tsim)."""

    def __init__(self, reference, other):
        if reference.dram_size != other.dram_size:
            raise ValueError(f"the two targets have {reference.dram_size} and "
                             f"{other.dram_size} bytes of DRAM; they must be equal")
        self.reference, self.other = reference, other
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
        first = self.reference.run(insn_addr, insn_count, bases=bases)
        second = self.other.run(insn_addr, insn_count, bases=bases)
        self.runs += 1
        where = f"run {self.runs} ({insn_count} instructions at {insn_addr:#x})"
        a, b = self.reference.name, self.other.name
        ends = [(r.status, r.error_code, r.error_insn) for r in (first, second)]
        if ends[0] != ends[1]:
            raise MirrorMismatch(f"{where}: {a} ended {ends[0]}, {b} ended {ends[1]}")
        for name in BYTE_COUNTERS + STEP_COUNTERS:
            if first.counters[name] != second.counters[name]:
                raise MirrorMismatch(f"{where}: counter {name} is {first.counters[name]} on "
                                     f"{a}, {second.counters[name]} on {b}")
        if first.status == "ok":
            differ = np.flatnonzero(self.reference.dram != self.other.dram)
            if differ.size:
                shown = ", ".join(f"{addr:#x}: {self.reference.dram[addr]:#04x} vs "
                                  f"{self.other.dram[addr]:#04x}" for addr in differ[:SHOWN])
                raise MirrorMismatch(f"{where}: {differ.size} DRAM bytes differ between {a} "
                                     f"and {b} ({shown})")
        return first
