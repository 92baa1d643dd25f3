"""fsim's cycle estimate: a simple, documented model, not the RTL's cycle count.

The exact counters (bytes moved, micro-op steps) come from :mod:`.machine`; everything here is
an estimate and :data:`ESTIMATED` names it so (docs/architecture.md, exact counters). Each
instruction costs what :mod:`avta.isa.costs` says it costs on the RTL (measured on tsim; the
runtime's planner uses the same figures):

- LOAD: the fixed overhead and first-beat latency, then each DRAM row's beats (one cycle per
  element when the elements are narrower than the bus), and one cycle per padding row;
- STORE: the fixed overhead, then per DRAM row its beats and the row overhead;
- a LOAD or STORE of no rows (tokens only): the fixed overhead;
- GEMM: one micro-op step per cycle (II = 1) plus the pipeline fill;
- ALU: II = 1 with an immediate or for MOV (which reads only ACC[src]); with two operands II = 2
  when ``ACC_READ_PORTS`` is 1 and 1 when it is 2 (docs/architecture.md, compute stage); plus
  the pipeline fill;
- FINISH, and a GEMM or ALU of no steps: one cycle.

Stages run concurrently: an instruction starts when its stage is free and every token it pops
has been pushed (at the end of the pushing instruction). The first instruction reaches the stages
:data:`~avta.isa.costs.FETCH_LATENCY` cycles after launch; from then on fetch is assumed to keep
ahead, and the stages' reads do not slow each other (on the RTL the compute stage's micro-op and
ACC loads share the read engine with the load stage and can wait behind its bursts: the largest
error left). STALL_x counts cycles a stage waited on tokens, IDLE_x the cycles it was neither
busy nor stalled (before launch is excluded; after its last instruction counts), ACC_WR one cycle
per ACC row written.
"""

from avta.isa import costs
from avta.isa.enums import AluOp, Opcode
from avta.isa.memories import scratchpad_of
from avta.isa.registers import CYCLE_COUNTERS

__all__ = ["cost", "acc_row_writes", "ESTIMATED"]

#: What a fsim RunResult marks as an estimate.
ESTIMATED = frozenset(CYCLE_COUNTERS) | {"cycles"}


def cost(cfg, insn, elem_bytes=None):
    """Estimated cycles of one legal instruction; ``elem_bytes`` for a LOAD/STORE's elements."""
    if insn.opcode == Opcode.STORE:
        return costs.store_cycles(cfg, insn.y_size, insn.x_size)
    if insn.opcode == Opcode.LOAD:
        return costs.load_cycles(cfg, insn.y_size, insn.x_size, elem_bytes,
                                 pad_rows=insn.rows - insn.x_size * insn.y_size)
    if insn.opcode == Opcode.FINISH:
        return 1
    two_reads = (insn.opcode == Opcode.ALU and not insn.use_imm and insn.alu_opcode != AluOp.MOV
                 and cfg.acc_read_ports == 1)
    return costs.compute_cycles(insn.steps, step_cycles=2 if two_reads else 1)


def acc_row_writes(insn):
    """ACC rows one legal instruction writes (the ACC_WR estimate: one per cycle)."""
    if insn.opcode == Opcode.LOAD:
        return insn.rows if scratchpad_of(insn.memory_type) == "acc" else 0
    if insn.opcode in (Opcode.GEMM, Opcode.ALU):
        return insn.steps
    return 0
