"""What an instruction costs on the RTL, in cycles: the one set of figures that fsim's cycle model
(:mod:`avta.sim.fsim.timing`) and the runtime's tiling planner (:mod:`avta.runtime.ops.conv_cycles`)
both use.

Measured on tsim (docs/cli.md, avta profile-diff): every instruction's busy cycles in ``full``
traces of ResNet-18 on ``default`` and ``huge``, and the compute stage's busy cycles from the
activity port (``tests/sim/test_activity.py``). The memory engine keeps several bursts in flight,
so a LOAD pays one latency and then its beats back to back; bursts cost no cycles of their own.
What these figures leave out: the three readers (fetch, the load stage, the compute stage's
micro-op and ACC loads) share one read engine, and a short read can queue behind the load
stage's long weight bursts; fsim's timing (:mod:`avta.sim.fsim.timing`) models the last two
sharing it, the planner's estimates do not.
"""

from avta.isa import formats
from avta.isa.enums import AluOp
from avta.isa.memories import memory

__all__ = ["FETCH_LATENCY", "FETCH_RING", "FETCH_BURST", "fetch_read_cycles", "fetch_ring_wait",
           "INSN_OVERHEAD", "LOAD_LATENCY", "LOAD_LEAD", "LOAD_ROW_MIN_CYCLES", "LOAD_SETTLE",
           "LOAD_RELEASE", "LOAD_AHEAD_BEATS", "LOAD_RELEASE_AFTER", "load_release_cycles",
           "load_ahead", "STORE_ROW_OVERHEAD", "COMPUTE_FILL", "INDEX_REGISTER", "ROW_REGISTER",
           "ALU_FILL", "ALU_DISPATCH", "GEMM_DETACH", "gemm_fill", "gemm_drain",
           "two_operand_step", "reused_src_steps", "alu_cycles", "row_cycles", "write_ways", "load_cycles",
           "store_cycles", "compute_cycles"]

#: Cycles from launch until the first instruction can start in its stage (fetching it from DRAM
#: and decoding it; every layer's compute stage idled 9-10 cycles on tsim, default and huge,
#: before the memory engine's registers on read commands and beats, the queues' head register
#: and fetch's dispatch register, which add a cycle each: docs/architecture.md, timing on an
#: FPGA).
FETCH_LATENCY = 14
#: Fetch's ring of instructions and the most one read command asks for (hw/core/fetch.py,
#: hw/core/core.py's defaults): at launch it asks for the whole ring, so the read engine
#: carries those instructions before any LOAD's beats (:func:`fetch_read_cycles`).
FETCH_RING = 32
FETCH_BURST = 8
#: Cycles of every LOAD and STORE besides its rows (decoding it, starting the walk); a LOAD or
#: STORE of no rows (tokens only) costs just this.
INSN_OVERHEAD = 2
#: A LOAD's wait for its first beat (the median of the weight loads on default and huge, 4, and
#: a cycle each for the memory engine's registers on read commands and beats; 6 on tiny).
LOAD_LATENCY = 6
#: Cycles of a LOAD before its first beat: :data:`INSN_OVERHEAD` and :data:`LOAD_LATENCY`.
LOAD_LEAD = INSN_OVERHEAD + LOAD_LATENCY
#: The fewest cycles a LOAD spends on one DRAM row: its tensor load starts a row at most every
#: other cycle (measured on tsim, huge: rows of one 64-byte element took 2 cycles each, rows of
#: two 2, longer rows their beats).
LOAD_ROW_MIN_CYCLES = 2


def fetch_read_cycles(cfg, insn_count):
    """Cycles the read engine carries fetch's first ring of instructions after the first
    command's, which :data:`FETCH_LATENCY` already counts: a LOAD's beats begin no earlier than
    :data:`FETCH_LATENCY` plus these (on a 64-bit bus 48 cycles, a tenth of a small layer on
    ``tiny``; on ``huge``'s 512-bit bus 6)."""
    ring = min(FETCH_RING, insn_count) - FETCH_BURST
    return max(0, ring) * formats.INSN_BITS // (8 * cfg.axi_data_bytes)


def fetch_ring_wait(cfg):
    """Cycles the first LOAD of a stream of at least :data:`FETCH_RING` instructions waits for
    its first beat beyond its own :data:`LOAD_LEAD`: the rest of
    fetch's first ring still on the read engine (:func:`fetch_read_cycles`; 40 on a 64-bit bus,
    none on ``huge``)."""
    return max(0, fetch_read_cycles(cfg, FETCH_RING) - LOAD_LEAD)


#: Read-ahead (hw/core/tensor_load.py, docs/architecture.md, load stage): the load stage
#: releases a LOAD of rows whose elements span whole beats once every row is requested, and
#: starts the next one while its beats still come. Cycles from its start until its rows are
#: known (the check that the next LOAD's rows are not its own), at the least:
LOAD_SETTLE = 4
#: Cycles from the last row's request (or the settling) until the next LOAD starts: the
#: release state and the stage control's start.
LOAD_RELEASE = 2
#: Beats the released LOAD still awaits when the next one requests its first row: about its
#: start and first-beat latency, so that its beats follow on, and a read of another stage that
#: reaches the memory engine meanwhile does not queue behind both (hw/core/tensor_load.py).
LOAD_AHEAD_BEATS = 8
#: Cycles after a released LOAD completes before the LOAD after it can be released in turn.
LOAD_RELEASE_AFTER = 3
#: A STORE's cycles per DRAM row besides the row's beats (its write burst's address and
#: response; 6 on default and huge).
STORE_ROW_OVERHEAD = 6
#: Cycles of a GEMM or ALU instruction besides its micro-op steps, before the registers each
#: unit adds below: the cycle it starts and the pipeline it drains (consecutive compute
#: instructions do not overlap).
COMPUTE_FILL = 4
#: The register between a unit's index adders (micro-op fields + loop offsets) and what uses the
#: indices: the GEMM's hazard check and INP/WGT reads, the ALU's ACC reads (hw/core/gemm.py,
#: hw/core/alu.py; docs/architecture.md, timing on an FPGA): one cycle of every GEMM and ALU
#: instruction.
INDEX_REGISTER = 1
#: The register on the GEMM's INP and WGT rows between the block RAMs and the multipliers
#: (hw/core/gemm.py; docs/architecture.md, timing on an FPGA): one cycle of every GEMM
#: instruction.
ROW_REGISTER = 1
#: Cycles of an ALU instruction besides its micro-op steps: :data:`COMPUTE_FILL`,
#: :data:`INDEX_REGISTER` and one for the register between its ACC read and its lanes
#: (hw/core/alu.py).
ALU_FILL = COMPUTE_FILL + INDEX_REGISTER + 1


#: Cycles an ALU instruction holds the compute stage before the next instruction may start
#: (it then runs detached, hw/core/compute.py): what it costs the stage's timeline when a GEMM
#: runs beside it.
ALU_DISPATCH = 1

#: Cycles after a GEMM's last step is issued (its start + steps) at which its stage starts the
#: next instruction while the GEMM drains (hw/core/stage_control.py: a registered "issued",
#: then the queue's next head): what a GEMM part costs the compute stage's timeline besides
#: its steps when an ALU instruction or a GEMM follows it.
GEMM_DETACH = 2


def gemm_fill(cfg):
    """Cycles of a GEMM instruction besides its micro-op steps: :data:`COMPUTE_FILL`,
    :data:`INDEX_REGISTER`, :data:`ROW_REGISTER` and one per pipeline register of its dot
    product (``cfg.gemm_stages``, hw/core/gemm.py)."""
    return COMPUTE_FILL + INDEX_REGISTER + ROW_REGISTER + cfg.gemm_stages


def gemm_drain(cfg):
    """Cycles before a GEMM completes at which it leaves the compute stage (detached): its fill
    less :data:`GEMM_DETACH` (the steps in flight after the last one's issue)."""
    return gemm_fill(cfg) - GEMM_DETACH


def two_operand_step(cfg):
    """Cycles an ALU step reading two ACC operands takes: 2 through one ACC read port (the
    operands one after another), 1 with two (``ACC_READ_PORTS``)."""
    return 1 if cfg.acc_read_ports > 1 else 2


def reused_src_steps(cfg, insn):
    """Steps of ALU instruction ``insn`` that reuse the src row of the step before them
    (docs/isa.md §3.4, timing): with one micro-op, a step whose src offset
    ``i_o·src_factor_out + i_i·src_factor_in`` (modulo the ACC depth, as the loop's adders wrap)
    equals the step before's. Inside an inner loop that is ``src_factor_in`` ≡ 0; from the last
    step of an outer iteration to the first of the next, ``src_factor_out`` ≡
    ``(iter_in − 1)·src_factor_in``. With more micro-ops no step reuses: the rule is the loop's,
    so a cost stays a function of the instruction alone."""
    if insn.uop_end - insn.uop_bgn != 1 or insn.iter_out == 0 or insn.iter_in == 0:
        return 0
    depth = cfg.acc_depth
    inner = insn.iter_out * (insn.iter_in - 1) if insn.src_factor_in % depth == 0 else 0
    crossing = (insn.src_factor_out - (insn.iter_in - 1) * insn.src_factor_in) % depth == 0
    return inner + (insn.iter_out - 1 if crossing else 0)


def alu_cycles(cfg, insn):
    """Cycles of ALU instruction ``insn`` (its steps and :data:`ALU_FILL`): one a step with an
    immediate or for MOV (which reads only ACC[src]); with two operands
    :func:`two_operand_step` a step, but one for a step that reuses the src row of the step
    before (:func:`reused_src_steps`): the unit keeps that row and reads only ACC[dst]
    (hw/core/alu.py)."""
    steps = insn.steps
    if insn.use_imm or insn.alu_opcode == AluOp.MOV or two_operand_step(cfg) == 1:
        return compute_cycles(steps, fill=ALU_FILL)
    return compute_cycles(steps, fill=ALU_FILL + steps - reused_src_steps(cfg, insn))


def _ceil_div(a, b):
    return -(-a // b)


def row_cycles(cfg, x_size, elem_bytes, ways=1):
    """Cycles of one DRAM row of ``x_size`` elements of ``elem_bytes``: its bus beats, or when
    the elements are narrower than the bus one cycle per ``ways`` elements (they are written
    that many a cycle: ``ways`` is :func:`write_ways` of their memory type)."""
    return max(_ceil_div(x_size * elem_bytes, cfg.axi_data_bytes), _ceil_div(x_size, ways))


def write_ways(cfg, mtype):
    """Rows a LOAD of memory type ``mtype`` writes a cycle from one beat when its elements are
    narrower than the bus: the micro-op scratchpad's banks (it is interleaved), else 1."""
    return memory(cfg, mtype).scratchpad.write_rows


def load_cycles(cfg, y_size, x_size, elem_bytes, pad_rows=0, ways=1):
    """A LOAD of ``y_size`` DRAM rows of ``x_size`` elements (each at least
    :data:`LOAD_ROW_MIN_CYCLES`; ``ways`` a cycle when narrower than the bus, :func:`row_cycles`)
    and ``pad_rows`` padding rows (one cycle each)."""
    if x_size == 0:
        return INSN_OVERHEAD
    row = max(row_cycles(cfg, x_size, elem_bytes, ways), LOAD_ROW_MIN_CYCLES)
    return LOAD_LEAD + y_size * row + pad_rows


def load_release_cycles(cfg, y_size, x_size, elem_bytes):
    """Cycles from a load-stage LOAD's start until the next LOAD may start beside it
    (read-ahead), or 0 when it is not released (no rows, or elements narrower than the bus,
    whose row writer holds the beats: hw/core/tensor_load.py)."""
    if x_size == 0 or elem_bytes < cfg.axi_data_bytes:
        return 0
    return max(LOAD_SETTLE, LOAD_ROW_MIN_CYCLES * y_size) + LOAD_RELEASE


def load_ahead(cfg):
    """The planner's figure of read-ahead: cycles a load-stage LOAD saves when the stage starts
    it while the LOAD before it still reads (its start and first-beat latency, hidden behind
    the earlier LOAD's beats), where both INP and WGT LOADs are released (elements of whole
    beats); 0 elsewhere."""
    if min(cfg.inp_elem_bytes, cfg.wgt_elem_bytes) < cfg.axi_data_bytes:
        return 0
    return LOAD_LEAD


def store_cycles(cfg, y_size, x_size):
    """A STORE of ``y_size`` DRAM rows of ``x_size`` OUT elements."""
    if x_size == 0:
        return INSN_OVERHEAD
    return INSN_OVERHEAD + y_size * (row_cycles(cfg, x_size, cfg.out_elem_bytes)
                                     + STORE_ROW_OVERHEAD)


def compute_cycles(steps, *, fill, step_cycles=1):
    """A GEMM or ALU instruction of ``steps`` micro-op steps issued every ``step_cycles`` cycles
    (:func:`two_operand_step` for an ALU instruction reading two ACC operands) with ``fill``
    cycles besides them (:func:`gemm_fill` for a GEMM, :data:`ALU_FILL` for an ALU
    instruction); one cycle when it has no steps."""
    return step_cycles * steps + fill if steps else 1
