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
  when ``ACC_READ_PORTS`` is 1 and 1 when it is 2 (docs/architecture.md, compute stage), but 1
  for a step that reuses the src row of the step before (one micro-op whose src offset does
  not move, :func:`~avta.isa.costs.alu_cycles`); plus the pipeline fill;
- FINISH, and a GEMM or ALU of no steps: one cycle.

The compute stage runs a GEMM beside the ALU instruction before it (hw/core/compute.py): an ALU
instruction leaves the stage :data:`ALU_DISPATCH` cycle after it starts, runs :data:`ALU_LATCH`
cycle later than it would alone, and pushes its tokens when it completes; a GEMM may start while it
runs, unless their ACC rows may meet in a bank (:func:`acc_row_bounds`: the ALU's bounds as the RTL
computes them, the GEMM's smallest and largest dst row; :func:`banks_meet`), in which case the GEMM
starts when the ALU has completed (the RTL holds the first step whose bank the ALU uses; the model
holds the whole GEMM). A GEMM leaves the stage :func:`gemm_drain` cycles before it completes (it
detaches once its last step is issued, hw/core/stage_control.py) unless a GEMM detached before it
has not retired by then; what follows it may start then if it is an ALU instruction (which begins
its steps no earlier than :data:`ALU_BEHIND_GEMM` cycles before the GEMM completes, so that it reads
ACC after the GEMM's last write) or a GEMM (beside the drain). Instructions retire, and push, in
program order: a detached one :data:`BESIDE_RETIRE` cycle after the one before it at the earliest.
Anything else waits until nothing is detached.

Stages run concurrently: an instruction starts when its stage is free and every token it pops has
been pushed (at the end of the pushing instruction). The first instruction reaches the stages
:data:`~avta.isa.costs.FETCH_LATENCY` cycles after launch; from then on fetch is assumed to keep
ahead, its first ring of instructions on the read engine before any LOAD's beats
(:func:`read_start`), its later reads left out. The LOADs of both stages that read DRAM share one
read engine (hw/axi/vme.py): a LOAD's beats
begin :data:`LOAD_LEAD` cycles after it starts or when the beats of the LOADs that reached the
engine before it have ended, whichever is later, so the compute stage's micro-op and ACC loads at a
layer's start wait behind the load stage's first bursts, as on the RTL (of two LOADs that could both
run next, the model runs the one that starts first). The load stage reads ahead
(hw/core/tensor_load.py): a LOAD of rows whose elements span whole beats lets the next one start
:func:`~avta.isa.costs.load_release_cycles` after its own start, or :data:`RELEASE_AFTER` after
the LOAD before it completed if that is later, and no later than its own completion; the next
one reaches the read engine no earlier than :data:`LOAD_LEAD` cycles before the end of its beats
(the RTL requests its rows once it awaits :data:`~avta.isa.costs.LOAD_AHEAD_BEATS` beats); a LOAD
completes (and pushes) no earlier than the one before it, and one not released (no rows, or
narrow elements) begins only when the one before it has completed. STALL_x counts cycles a stage waited on tokens,
IDLE_x the cycles it was neither busy nor stalled (before launch is excluded; after its last
instruction counts), ACC_WR one cycle per ACC row written.
"""

from avta.isa import costs
from avta.isa.enums import Opcode
from avta.isa.memories import scratchpad_of
from avta.isa.registers import CYCLE_COUNTERS

__all__ = ["cost", "acc_row_writes", "acc_row_bounds", "banks_meet", "banks_overlap",
           "gemm_drain", "read_start", "ESTIMATED", "ALU_DISPATCH", "ALU_LATCH", "BESIDE_RETIRE",
           "GEMM_DETACH", "ALU_BEHIND_GEMM", "LOAD_LEAD", "RELEASE_AFTER"]

#: Cycles an ALU instruction holds the compute stage before the next instruction may start
#: (:data:`avta.isa.costs.ALU_DISPATCH`).
ALU_DISPATCH = costs.ALU_DISPATCH
#: Cycles an ALU instruction starts later than its stage start (its copy is latched first).
ALU_LATCH = 1
#: Cycles after a detached instruction retires at which the next one retires (and pushes), at
#: the earliest.
BESIDE_RETIRE = 1
#: Cycles after a GEMM's last step is issued (``ready + steps``) at which the stage starts the
#: next instruction, the GEMM detached (:data:`avta.isa.costs.GEMM_DETACH`).
GEMM_DETACH = costs.GEMM_DETACH
#: An ALU instruction behind a draining GEMM begins its steps no earlier than this many cycles
#: before the GEMM completes: its first ACC read (three cycles after it begins) then comes no
#: earlier than the GEMM's last write (hw/core/compute.py, the older steps), whatever the dot
#: product's pipeline.
ALU_BEHIND_GEMM = 4


def read_start(cfg, insn_count):
    """When the read engine may carry the first LOAD's beats (any LOAD's request reaches it
    after fetch's first ring of a stream of ``insn_count`` instructions):
    :data:`~avta.isa.costs.FETCH_LATENCY` plus :func:`~avta.isa.costs.fetch_read_cycles`. On a
    wide bus that is before a LOAD started at :data:`~avta.isa.costs.FETCH_LATENCY` has its
    first beat anyway (``huge``: 20 against 22)."""
    return costs.FETCH_LATENCY + costs.fetch_read_cycles(cfg, insn_count)


#: Cycles before a GEMM completes at which it leaves the stage (detached):
#: :func:`avta.isa.costs.gemm_drain`.
gemm_drain = costs.gemm_drain

#: Cycles of a LOAD before its first beat (its fixed overhead and the first-beat latency): the
#: read engine is shared from then on (:data:`avta.isa.costs.LOAD_LEAD`).
LOAD_LEAD = costs.LOAD_LEAD

#: Cycles after a released load-stage LOAD completes before the one after it can be released
#: (read-ahead, :func:`~avta.isa.costs.load_release_cycles`).
RELEASE_AFTER = costs.LOAD_RELEASE_AFTER

#: What a fsim RunResult marks as an estimate.
ESTIMATED = frozenset(CYCLE_COUNTERS) | {"cycles"}


#: The opcodes as plain integers: fsim works out these figures once per distinct instruction,
#: thousands of times a network, and an enum member costs an attribute lookup each time.
_LOAD, _STORE, _GEMM, _FINISH, _ALU = map(int, (Opcode.LOAD, Opcode.STORE, Opcode.GEMM,
                                                 Opcode.FINISH, Opcode.ALU))


def cost(cfg, insn, elem_bytes=None):
    """Estimated cycles of one legal instruction; ``elem_bytes`` for a LOAD/STORE's elements. A
    GEMM's fill grows with its dot product's pipeline (:func:`~avta.isa.costs.gemm_fill`); an
    ALU instruction's is :data:`~avta.isa.costs.ALU_FILL`."""
    opcode = insn.opcode
    if opcode == _STORE:
        return costs.store_cycles(cfg, insn.y_size, insn.x_size)
    if opcode == _LOAD:
        return costs.load_cycles(cfg, insn.y_size, insn.x_size, elem_bytes,
                                 pad_rows=insn.rows - insn.x_size * insn.y_size,
                                 ways=costs.write_ways(cfg, insn.memory_type))
    if opcode == _FINISH:
        return 1
    if opcode == _GEMM:
        return costs.compute_cycles(insn.steps, fill=costs.gemm_fill(cfg))
    return costs.alu_cycles(cfg, insn)


def acc_row_writes(insn):
    """ACC rows one legal instruction writes (the ACC_WR estimate: one per cycle)."""
    opcode = insn.opcode
    if opcode == _LOAD:
        return insn.rows if scratchpad_of(insn.memory_type) == "acc" else 0
    if opcode == _GEMM or opcode == _ALU:
        return insn.steps
    return 0


def acc_row_bounds(insn, nest, depth):
    """Bounds ``[(lo, hi), ...]`` of the ACC rows a GEMM or ALU instruction touches (``nest``,
    its :class:`~.loops.LoopNest` with steps), or ``None`` when the RTL cannot bound them.

    An ALU instruction is bounded as hw/core/compute.py bounds it: one micro-op, dst and src
    ranges that do not wrap past ``depth``. A GEMM by its smallest and largest dst row."""
    io, ii = insn.iter_out - 1, insn.iter_in - 1
    fields = [(0, insn.dst_factor_out, insn.dst_factor_in)]
    if insn.opcode == Opcode.ALU:
        if insn.uop_end - insn.uop_bgn != 1:
            return None
        fields.append((1, insn.src_factor_out, insn.src_factor_in))
    bounds = []
    for field, f_out, f_in in fields:
        first = nest.uop_field(field)
        lo, hi = int(first.min()), int(first.max()) + io * f_out + ii * f_in
        if hi >= depth:
            return None
        bounds.append((lo, hi))
    return bounds


def banks_meet(a, b, pad):
    """Whether two :func:`acc_row_bounds` may share a bank of ``pad`` (the ACC
    :class:`~avta.isa.memories.Scratchpad`; ``None`` meets everything): a bank has one write and
    one read port (hw/core/banks.py), so a GEMM runs beside an ALU instruction only on banks the
    ALU does not use."""
    if a is None or b is None:
        return True
    return any(banks_overlap(lo_a, hi_a, lo_b, hi_b, pad) for lo_a, hi_a in a for lo_b, hi_b in b)


def banks_overlap(lo_a, hi_a, lo_b, hi_b, pad):
    """Whether ACC rows ``lo_a..hi_a`` and ``lo_b..hi_b`` share a bank of ``pad`` (the rule the
    compiled pass of :mod:`.compiled_checks` applies too)."""
    bank = pad.bank_of
    return (bank(lo_a) <= bank(hi_b)) & (bank(lo_b) <= bank(hi_a))
