"""Control register map and performance counter names (docs/architecture.md, control registers).

Shared by the RTL (VCR), the simulators (which report the same counters), the runtime and the
C headers.
"""

import enum

from .enums import Stage

__all__ = ["REGISTERS", "Ctrl", "COUNTER_NAMES", "counter_offset", "BYTE_COUNTERS",
           "IDLE_COUNTERS", "STALL_COUNTERS", "STAGE_CODES", "LOADED_COUNTERS",
           "STEP_COUNTERS", "CYCLE_COUNTERS", "busy_cycles"]

#: Control register byte offsets on the AXI4-Lite slave (32-bit registers).
REGISTERS = {
    "CTRL": 0x00, "CYCLES": 0x04, "INSN_COUNT": 0x08, "INSN_ADDR": 0x0C,
    "UOP_BASE": 0x10, "INP_BASE": 0x14, "WGT_BASE": 0x18, "ACC_BASE": 0x1C, "OUT_BASE": 0x20,
    "COUNTERS": 0x24, "ERR_CODE": 0x60, "ERR_INSN": 0x64, "CONFIG_ID": 0x68, "VERSION": 0x6C,
}


class Ctrl(enum.IntFlag):
    """The bits of the CTRL register.

    Written: LAUNCH starts a run (ignored while one is going). Read: BUSY (the same bit) while a
    run is going, then FINISH or ERROR; the core clears both at the next launch.
    """
    LAUNCH = 1 << 0
    BUSY = LAUNCH
    FINISH = 1 << 1
    ERROR = 1 << 2

    @property
    def position(self):
        """The index of a single bit (``Ctrl.FINISH.position == 1``), for bit-level RTL."""
        return self.bit_length() - 1


#: The 14 performance counters at COUNTERS + 4·i, in the order of the Intel Labs VTA fork.
COUNTER_NAMES = ("ACC_WR", "ACC_LD", "INP_LD", "WGT_LD", "UOP_LD", "OUT_ST", "ALU_STEPS",
                 "GEMM_STEPS", "IDLE_LD", "IDLE_ST", "IDLE_CP", "STALL_LD", "STALL_ST",
                 "STALL_CP")

#: Bytes moved per memory type: x_size·y_size·element bytes of each LOAD or STORE, exact.
BYTE_COUNTERS = ("ACC_LD", "INP_LD", "WGT_LD", "UOP_LD", "OUT_ST")
#: Micro-op steps: iter_out·iter_in·(uop_end − uop_bgn) of each non-degenerate instruction.
STEP_COUNTERS = ("ALU_STEPS", "GEMM_STEPS")
#: Cycle counts: the RTL's; fsim may only estimate them (and says so).
CYCLE_COUNTERS = ("ACC_WR", "IDLE_LD", "IDLE_ST", "IDLE_CP", "STALL_LD", "STALL_ST", "STALL_CP")
#: Per stage, in :class:`Stage` order (load, compute, store): how the counters name it.
STAGE_CODES = ("LD", "CP", "ST")
#: Per stage, in the same order: the counter of its cycles without an instruction, and of its
#: cycles holding one that waits on a token.
IDLE_COUNTERS = tuple(f"IDLE_{code}" for code in STAGE_CODES)
STALL_COUNTERS = tuple(f"STALL_{code}" for code in STAGE_CODES)
#: The byte counters of what a run read from DRAM (every LOAD; STORE's bytes are OUT_ST).
LOADED_COUNTERS = ("INP_LD", "WGT_LD", "ACC_LD", "UOP_LD")


def busy_cycles(counters, cycles):
    """``{stage name: cycles}`` ("load", "compute", "store"): each stage's cycles neither idle
    nor stalled on a token in a run of ``cycles`` cycles; the busiest stage bound the run."""
    return {stage.name.lower(): cycles - counters[idle] - counters[stall]
            for stage, idle, stall in zip(Stage, IDLE_COUNTERS, STALL_COUNTERS)}


def counter_offset(name):
    """Byte offset of performance counter ``name``."""
    return REGISTERS["COUNTERS"] + 4 * COUNTER_NAMES.index(name)
