"""What the runtime needs of a device: the :class:`Backend` interface and the
:class:`RunResult` every backend returns.

A backend is the smallest thing that can stand in for the hardware: DRAM that the host reads and
writes, a CONFIG_ID register, and "run these instructions" (the control registers of
docs/architecture.md: INSN_ADDR, INSN_COUNT, the *_BASE registers, launch, then the outcome and
counters). Simulators implement it next to themselves (``avta.sim.fsim.backend``,
``avta.sim.tsim.backend``, ``avta.sim.cocotb.backend``, ``avta.sim.amaranth.backend``); those driven
through the control registers share one host protocol (:mod:`avta.runtime.host`).

``avta exec`` prints :meth:`RunResult.summary` as its last line (docs/architecture.md, command
line).
"""

import abc
import json
from dataclasses import dataclass, field

import numpy as np

from avta.isa.memories import DRAM_PAGE_BYTES
from avta.isa.registers import COUNTER_NAMES

__all__ = ["Backend", "ArrayDramBackend", "RunResult", "STATUSES", "DEFAULT_DRAM_BYTES"]

#: DRAM of a simulated device unless asked otherwise: room for a ResNet-18 layer's tensors.
DEFAULT_DRAM_BYTES = 32 << 20

#: ``ok``: FINISH ran; ``error``: an docs/isa.md §3.5 error stopped the machine; ``timeout``: the
#: cycle limit was reached (tsim); ``deadlock``: no stage can start (fsim).
STATUSES = ("ok", "error", "timeout", "deadlock")


@dataclass
class RunResult:
    """What a run ended with.

    Attributes
    ----------
    status : str
        One of :data:`STATUSES`.
    cycles : int
        Cycles from launch to finish or error (an estimate on fsim).
    counters : dict
        Every name of :data:`avta.isa.registers.COUNTER_NAMES` → value.
    error_code, error_insn : int or None
        The docs/isa.md §3.5 code and the index of the instruction that raised it.
    estimated : frozenset
        Names of the counters (and ``"cycles"``) that are estimates rather than exact.
    detail : str
        A sentence for a person: what a deadlocked machine waits on, what timed out, etc.
    """
    status: str
    cycles: int = 0
    counters: dict = field(default_factory=lambda: {name: 0 for name in COUNTER_NAMES})
    error_code: int | None = None
    error_insn: int | None = None
    estimated: frozenset = frozenset()
    detail: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    @property
    def ok(self):
        return self.status == "ok"

    def summary(self):
        """The one JSON line of ``avta exec``: exactly the keys docs/architecture.md names."""
        return json.dumps({"status": self.status, "cycles": self.cycles,
                           "counters": {name: self.counters.get(name, 0)
                                        for name in COUNTER_NAMES},
                           "error_code": self.error_code, "error_insn": self.error_insn})


class Backend(abc.ABC):
    """What a device is to the runtime: DRAM, CONFIG_ID and launch."""

    #: A short name for messages ("fsim", "tsim", ...).
    name = "device"

    @property
    @abc.abstractmethod
    def config_id(self):
        """The CONFIG_ID register: the 32-bit hash of the configuration it was built for."""

    @property
    @abc.abstractmethod
    def dram_size(self):
        """Bytes of DRAM, addressed from 0."""

    @abc.abstractmethod
    def write(self, addr, data):
        """Copy the bytes of ``data`` (bytes-like or uint8 array) to DRAM from ``addr``."""

    @abc.abstractmethod
    def read(self, addr, nbytes):
        """A uint8 numpy array: a copy of DRAM bytes ``[addr, addr + nbytes)``."""

    @abc.abstractmethod
    def run(self, insn_addr, insn_count, *, bases=None):
        """Launch ``insn_count`` instructions at byte ``insn_addr`` with the *_BASE registers in
        ``bases`` (name → value, default 0) and wait; the :class:`RunResult`."""


class ArrayDramBackend(Backend):
    """A backend whose DRAM is a numpy byte array in this process (every simulator's is)."""

    def __init__(self, dram_size):
        if isinstance(dram_size, bool) or not isinstance(dram_size, int) or dram_size <= 0 \
                or dram_size % DRAM_PAGE_BYTES:
            raise ValueError(f"dram_size {dram_size!r} must be a positive multiple of "
                             f"{DRAM_PAGE_BYTES} bytes: DRAM comes in whole 4 KiB pages "
                             f"(docs/isa.md §3)")
        self._dram = np.zeros(dram_size, dtype=np.uint8)

    @property
    def dram_size(self):
        return self._dram.size

    @property
    def dram(self):
        """The DRAM array itself (for debugging and for comparing targets)."""
        return self._dram

    def write(self, addr, data):
        data = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(
            data, np.ndarray) else data.reshape(-1).view(np.uint8)
        self._dram[addr:addr + data.size] = data

    def read(self, addr, nbytes):
        return self._dram[addr:addr + nbytes].copy()
