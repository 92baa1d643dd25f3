"""The host's side of the control registers (docs/architecture.md, control registers), once.

A run driven through the registers always goes the same way: write the *_BASE registers,
INSN_ADDR and INSN_COUNT; write CTRL.LAUNCH; poll CTRL until FINISH or ERROR (or give up at a
cycle limit); read CYCLES, the counters and the error registers. The backends that talk to the
register file (tsim's driver, the cocotb job) differ only in how they read and write one
register and how they wait, so they take the sequence from here:

* :func:`check_bases` — the base registers a host asked for, checked;
* :func:`launch_writes` — the register writes before the launch, then :data:`LAUNCH`;
* :func:`ctrl_status` — what a CTRL value says about the run;
* :data:`RESULT_REGISTERS` and :func:`run_result` — what to read afterwards, and the
  :class:`~avta.runtime.backend.RunResult` it makes.
"""

import numpy as np

from avta.isa.enums import ErrorCode
from avta.isa.memories import BASE_KEYS
from avta.isa.registers import COUNTER_NAMES, REGISTERS, Ctrl, counter_offset

from .backend import RunResult

__all__ = ["check_bases", "launch_writes", "LAUNCH", "ctrl_status", "RESULT_REGISTERS",
           "run_result", "error_detail"]

_ADDR_MOD = 1 << 32     # registers and addresses are 32 bits

#: The write that starts a run: ``(offset, value)``.
LAUNCH = (REGISTERS["CTRL"], int(Ctrl.LAUNCH))

#: Read after a run ends, by name: CYCLES, every counter, ERR_CODE and ERR_INSN.
RESULT_REGISTERS = {"CYCLES": REGISTERS["CYCLES"],
                    **{name: counter_offset(name) for name in COUNTER_NAMES},
                    "ERR_CODE": REGISTERS["ERR_CODE"], "ERR_INSN": REGISTERS["ERR_INSN"]}


def check_bases(bases):
    """Every base register by key (:data:`~avta.isa.memories.BASE_KEYS`: ``UOP`` … ``OUT``),
    0 unless ``bases`` gives it; an unknown key or a value outside 32 bits is a ``ValueError``."""
    out = dict.fromkeys(BASE_KEYS, 0)
    for name, value in (bases or {}).items():
        if name not in out:
            raise ValueError(f"unknown base register {name!r}; the bases are "
                             f"{', '.join(BASE_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value < _ADDR_MOD:
            raise ValueError(f"base {name} = {value!r}: must be an integer in 0..2^32-1")
        out[name] = int(value)
    return out


def launch_writes(insn_addr, insn_count, bases=None):
    """``(offset, value)`` of every register write before :data:`LAUNCH`, in order."""
    writes = [(REGISTERS[f"{key}_BASE"], value) for key, value in check_bases(bases).items()]
    return writes + [(REGISTERS["INSN_ADDR"], insn_addr), (REGISTERS["INSN_COUNT"], insn_count)]


def ctrl_status(ctrl):
    """``"error"`` or ``"ok"`` when CTRL says the run ended, ``None`` while it runs."""
    ctrl = Ctrl(ctrl & (Ctrl.FINISH | Ctrl.ERROR))
    if ctrl & Ctrl.ERROR:
        return "error"
    if ctrl & Ctrl.FINISH:
        return "ok"
    return None


def error_detail(code):
    """A person's name for an error code (``DRAM_OUT_OF_RANGE``), or ``code N``."""
    return ErrorCode(code).name if code in ErrorCode._value2member_map_ else f"code {code}"


def run_result(status, values, *, max_cycles=None, detail=""):
    """The :class:`RunResult` of a run that ended with ``status`` (``ok``, ``error``,
    ``deadlock`` or ``timeout``), from ``values``: :data:`RESULT_REGISTERS` name → value read;
    ``detail`` says what a deadlocked machine waits on."""
    counters = {name: values[name] for name in COUNTER_NAMES}
    if status == "timeout":
        return RunResult("timeout", cycles=values["CYCLES"], counters=counters,
                         detail=f"no finish or error within {max_cycles} cycles")
    if status == "error":
        code = values["ERR_CODE"]
        return RunResult("error", cycles=values["CYCLES"], counters=counters, error_code=code,
                         error_insn=values["ERR_INSN"], detail=error_detail(code))
    return RunResult(status, cycles=values["CYCLES"], counters=counters, detail=detail)
