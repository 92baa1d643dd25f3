"""fsim's cycle estimate: a simple, documented model, not the RTL's cycle count.

The exact counters (bytes moved, micro-op steps) come from :mod:`.machine`; everything here is
an estimate and :data:`ESTIMATED` names it so (docs/architecture.md, exact counters). The model
follows the Intel Labs fork's fsim (reference/intel-extensions.md §5), adapted to this
architecture:

- LOAD: :data:`INSN_OVERHEAD` + :data:`LOAD_LATENCY` + each data row's cycles + one cycle per
  padding row. A data row of ``x_size`` elements takes ``ceil(bytes / AXI bytes)`` beats, or
  ``x_size`` cycles when its elements are narrower than the bus (they are written one per
  cycle). The memory engine keeps several bursts in flight, so only the first request's
  latency shows; bursts cost no cycles of their own.
- STORE: :data:`INSN_OVERHEAD` + per data row its beats (as a LOAD's) + :data:`STORE_ROW_OVERHEAD`.
- ``x_size`` 0 (tokens only) costs :data:`INSN_OVERHEAD`.
- GEMM: one micro-op step per cycle (II = 1) plus :data:`PIPELINE_DEPTH`.
- ALU: II = 1 with an immediate and for MOV (it reads only ACC[src]), with two operands II = 2
  when ``ACC_READ_PORTS`` is 1 and 1 when it is 2 (docs/architecture.md, compute stage), plus
  :data:`PIPELINE_DEPTH`.
- FINISH: one cycle.

Stages run concurrently: an instruction starts when its stage is free and every token it pops
has been pushed (at the end of the pushing instruction). The first instruction reaches the stages
:data:`FETCH_LATENCY` cycles after launch; from then on fetch is assumed to keep ahead, and the
stages' reads do not slow each other (on the RTL the compute stage's micro-op and ACC loads share
the read engine with the load stage and can wait behind its bursts: the largest error left).
STALL_x counts cycles a stage waited on tokens, IDLE_x the cycles it was neither busy nor
stalled (before launch is excluded; after its last instruction counts), ACC_WR one cycle per
ACC row written.

The constants were measured on tsim: per instruction, its busy cycles in a ``full`` trace of
ResNet-18 on ``default`` and ``huge`` against these formulas (docs/cli.md, avta profile-diff,
has the resulting per-layer agreement).
"""

from avta.isa.enums import AluOp, Opcode

from avta.isa.memories import scratchpad_of
from avta.isa.registers import CYCLE_COUNTERS

__all__ = ["cost", "acc_row_writes", "ESTIMATED", "FETCH_LATENCY", "INSN_OVERHEAD",
           "LOAD_LATENCY", "STORE_ROW_OVERHEAD", "PIPELINE_DEPTH"]

#: Cycles from launch until the first instruction can start in its stage (fetching it from DRAM
#: and decoding it; every layer's compute stage idles this long on tsim, default and huge).
FETCH_LATENCY = 10

#: Cycles of every LOAD and STORE besides its rows (decoding it, starting the walk).
INSN_OVERHEAD = 2
#: A LOAD's wait for its first beat (median of WGT loads on default and huge: 4).
LOAD_LATENCY = 4
#: A STORE's cycles per DRAM row besides the row's beats (the write burst's address and
#: response; 6 on default and huge).
STORE_ROW_OVERHEAD = 6
#: GEMM and ALU: cycles from the first micro-op step's issue to the last one's write-back.
PIPELINE_DEPTH = 5

#: What a fsim RunResult marks as an estimate.
ESTIMATED = frozenset(CYCLE_COUNTERS) | {"cycles"}


def _ceil_div(a, b):
    return -(-a // b)


def _memory_cost(cfg, insn, elem_bytes):
    if insn.x_size == 0:
        return INSN_OVERHEAD
    # Elements narrower than the bus are written one per cycle.
    row = max(_ceil_div(insn.x_size * elem_bytes, cfg.axi_data_bytes), insn.x_size)
    if insn.opcode == Opcode.STORE:
        return INSN_OVERHEAD + insn.y_size * (row + STORE_ROW_OVERHEAD)
    pads = insn.rows - insn.x_size * insn.y_size
    return INSN_OVERHEAD + LOAD_LATENCY + insn.y_size * row + pads


def cost(cfg, insn, elem_bytes=None):
    """Estimated cycles of one legal instruction; ``elem_bytes`` for a LOAD/STORE's elements."""
    if insn.opcode in (Opcode.LOAD, Opcode.STORE):
        return _memory_cost(cfg, insn, elem_bytes)
    if insn.opcode == Opcode.FINISH:
        return 1
    steps = insn.steps
    if steps == 0:
        return 1
    if (insn.opcode == Opcode.ALU and not insn.use_imm and insn.alu_opcode != AluOp.MOV
            and cfg.acc_read_ports == 1):
        return 2 * steps + PIPELINE_DEPTH
    return steps + PIPELINE_DEPTH


def acc_row_writes(insn):
    """ACC rows one legal instruction writes (the ACC_WR estimate: one per cycle)."""
    if insn.opcode == Opcode.LOAD:
        return insn.rows if scratchpad_of(insn.memory_type) == "acc" else 0
    if insn.opcode in (Opcode.GEMM, Opcode.ALU):
        return insn.steps
    return 0
