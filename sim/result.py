"""The outcome of one run, the same for every backend (fsim, tsim, cocotb).

``avta exec`` prints :meth:`RunResult.summary` as its last line (docs/architecture.md, command line).
"""

import json
from dataclasses import dataclass, field

from avta.isa.registers import COUNTER_NAMES

__all__ = ["RunResult", "STATUSES"]

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
