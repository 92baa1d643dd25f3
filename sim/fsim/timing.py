"""fsim's cycle estimate: a simple, documented model, not the RTL's cycle count.

The exact counters (bytes moved, micro-op steps) come from :mod:`.machine`; everything here is
an estimate and :data:`ESTIMATED` names it so (docs/architecture.md, exact counters). The model
follows the Intel Labs fork's fsim (reference/intel-extensions.md §5), adapted to this
architecture:

- LOAD/STORE: each data row of ``x_size`` elements is one burst sequence on the AXI data bus:
  ``ceil(bytes / AXI bytes)`` beats plus :data:`BURST_OVERHEAD` cycles per burst of at most
  :data:`BURST_BEATS` beats; each padding row costs one cycle; :data:`INSN_OVERHEAD` per
  instruction. ``x_size`` 0 (tokens only) costs :data:`INSN_OVERHEAD`.
- GEMM: one micro-op step per cycle (II = 1) plus :data:`PIPELINE_DEPTH`.
- ALU: II = 1 with an immediate, with two operands II = 2 when ``ACC_READ_PORTS`` is 1 and 1
  when it is 2 (docs/architecture.md, compute stage), plus :data:`PIPELINE_DEPTH`.
- FINISH: one cycle.

Stages run concurrently: an instruction starts when its stage is free and every token it pops
has been pushed (at the end of the pushing instruction). Fetch is assumed to keep ahead.
STALL_x counts cycles a stage waited on tokens, IDLE_x the cycles it was neither busy nor
stalled (before launch is excluded; after its last instruction counts), ACC_WR one cycle per
ACC row written.
"""

from avta.isa.enums import Opcode

from avta.isa.memories import scratchpad_of
from avta.isa.registers import CYCLE_COUNTERS

__all__ = ["cost", "acc_row_writes", "ESTIMATED", "BURST_BEATS", "BURST_OVERHEAD",
           "INSN_OVERHEAD", "PIPELINE_DEPTH"]

BURST_BEATS = 16
BURST_OVERHEAD = 4
INSN_OVERHEAD = 2
PIPELINE_DEPTH = 5

#: What a fsim RunResult marks as an estimate.
ESTIMATED = frozenset(CYCLE_COUNTERS) | {"cycles"}


def _ceil_div(a, b):
    return -(-a // b)


def _memory_cost(cfg, insn, elem_bytes):
    if insn.x_size == 0:
        return INSN_OVERHEAD
    beats = _ceil_div(insn.x_size * elem_bytes, cfg.axi_data_bytes)
    data = insn.y_size * (beats + BURST_OVERHEAD * _ceil_div(beats, BURST_BEATS))
    return INSN_OVERHEAD + data + insn.rows - insn.x_size * insn.y_size


def cost(cfg, insn, elem_bytes=None):
    """Estimated cycles of one legal instruction; ``elem_bytes`` for a LOAD/STORE's elements."""
    if insn.opcode in (Opcode.LOAD, Opcode.STORE):
        return _memory_cost(cfg, insn, elem_bytes)
    if insn.opcode == Opcode.FINISH:
        return 1
    steps = insn.steps
    if steps == 0:
        return 1
    if insn.opcode == Opcode.ALU and not insn.use_imm and cfg.acc_read_ports == 1:
        return 2 * steps + PIPELINE_DEPTH
    return steps + PIPELINE_DEPTH


def acc_row_writes(insn):
    """ACC rows one legal instruction writes (the ACC_WR estimate: one per cycle)."""
    if insn.opcode == Opcode.LOAD:
        return insn.rows if scratchpad_of(insn.memory_type) == "acc" else 0
    if insn.opcode in (Opcode.GEMM, Opcode.ALU):
        return insn.steps
    return 0
