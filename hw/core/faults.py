"""Planted bugs, for testing the verification tools only (``avta.sim.trace.diff``, the fuzzer).

A test asks the generator for a design with one of these bugs (``top_verilog(cfg,
faults={FaultName.ALU_LANE})``) and checks that the trace diff or the differential fuzzer finds it. The
protocol faults (:data:`PROTOCOL_FAULTS`) are for the formal proofs, and ``avta formal --plant``
is the only command-line option that reaches any of them: a generated design never has one
unless a test or that option asks, and the design without faults is exactly the design a build
without this module would give.

Each bug is a few lines in its unit, guarded by its name. Most hide in a *corner*: a program
that stays out of it runs correctly even on the faulty design, so a tool only finds the bug if
its programs reach the corner (:attr:`Fault.corner`). ``python -m avta.hw.core.faults`` prints
the table.
"""

import enum
from dataclasses import dataclass

__all__ = ["FaultName", "Fault", "FAULTS", "PROTOCOL_FAULTS", "ALL_FAULTS", "check_faults", "fault_table", "FAULT_UOP_ROW", "FAULT_LOOP_BITS",
           "FAULT_PAGE_BYTES", "FAULT_STORE_ROWS", "FAULT_STRIDE_BITS", "FAULT_TOKEN_BITS"]

#: The micro-op row whose GEMM steps the ``gemm-acc-index`` fault sends to the wrong ACC row.
FAULT_UOP_ROW = 1
#: ``fetch-page`` and ``vme-write-page`` lose the carry out of a page offset this wide.
FAULT_PAGE_BYTES = 4096
#: ``load-stride`` keeps this many low bits of ``x_stride``.
FAULT_STRIDE_BITS = 7
#: ``store-rows`` counts DRAM rows modulo this many.
FAULT_STORE_ROWS = 4
#: ``token-wrap`` keeps this many bits of each token count.
FAULT_TOKEN_BITS = 2
#: ``loop-iter`` compares this many low bits of the loop counters with iter_in / iter_out.
FAULT_LOOP_BITS = 4


class FaultName(enum.StrEnum):
    """The name of a planted bug: one member per entry of :data:`FAULTS` and
    :data:`PROTOCOL_FAULTS`, whose value is the name the command line and JSON reports use.

    The RTL, the proofs and the tests name a fault by its member (``FaultName.ALU_LANE``), so a
    misspelt name is an ``AttributeError`` where it is written rather than a fault that silently
    never plants. A member equals and hashes as its value, so a set of plain names (as
    ``avta formal --plant`` gives) and a set of members find the same faults.
    """
    ALU_LANE = "alu-lane"
    GEMM_ACC_INDEX = "gemm-acc-index"
    FETCH_PAGE = "fetch-page"
    LOAD_STRIDE = "load-stride"
    STORE_ROWS = "store-rows"
    TOKEN_WRAP = "token-wrap"
    VME_WRITE_PAGE = "vme-write-page"
    ALU_UOP_BGN = "alu-uop-bgn"
    LOOP_ITER = "loop-iter"
    WGT_BASE = "wgt-base"
    AXI_VALID_DROP = "axi-valid-drop"
    AXI_BURST_4K = "axi-burst-4k"
    AXI_WLAST_EARLY = "axi-wlast-early"
    AXI_READ_ID_REUSE = "axi-read-id-reuse"
    QUEUE_ACCEPT_FULL = "queue-accept-full"
    ALU_OP = "alu-op"
    VCR_B_EARLY = "vcr-b-early"
    DECODE_WRONG_QUEUE = "decode-wrong-queue"
    FETCH_DUP_STORE = "fetch-dup-store"
    STAGE_IGNORE_HALT = "stage-ignore-halt"
    CTRL_FINISH_EARLY = "ctrl-finish-early"
    VCR_R_DROP = "vcr-r-drop"
    VCR_LAUNCH_BUSY = "vcr-launch-busy"
    LOOP_OFFSET = "loop-offset"
    PAD_ROW_WIDTH = "pad-row-width"
    GEMM_PRODUCT_SIGN = "gemm-product-sign"
    GEMM_LANE_LAST = "gemm-lane-last"
    ALU_IMM_ZEXT = "alu-imm-zext"
    COMPUTE_HAZARD_DST = "compute-hazard-dst"
    GEMM_RESET_STICKY = "gemm-reset-sticky"
    ALU_NO_FORWARD = "alu-no-forward"


@dataclass(frozen=True)
class Fault:
    """One planted bug.

    Attributes
    ----------
    unit : str
        Where it is (the unit and its source file under ``avta.hw``).
    description : str
        What the faulty design does differently.
    corner : str
        What a program must do to trigger it (and so to tell the design from fsim).
    """
    unit: str
    description: str
    corner: str


#: Name → the planted bug.
FAULTS = {
    FaultName.ALU_LANE: Fault(
        "ALU lanes (core/alu_lanes.py)",
        "two-operand ADD: lane 1 of every batch row takes operand B from lane 0",
        "any two-operand ALU ADD whose source row differs between lanes 0 and 1"),
    FaultName.GEMM_ACC_INDEX: Fault(
        "GEMM (core/gemm.py)",
        f"the steps of the micro-op in uop row {FAULT_UOP_ROW} write ACC row dst + 1 "
        f"(an off-by-one ACC index)",
        f"any GEMM that runs the micro-op in uop row {FAULT_UOP_ROW}"),
    FaultName.FETCH_PAGE: Fault(
        "fetch (core/fetch.py)",
        f"the next read address loses the carry out of its {FAULT_PAGE_BYTES}-byte page "
        f"offset, so after a page boundary fetch reads the start of the old page again",
        f"an instruction stream that runs on past a {FAULT_PAGE_BYTES // 1024} KiB page "
        f"boundary beyond the fetch command (8 instructions) that reaches it"),
    FaultName.LOAD_STRIDE: Fault(
        "tensor load (core/tensor_load.py)",
        f"the DRAM step between rows uses only the low {FAULT_STRIDE_BITS} bits of x_stride, "
        f"so rows after the first are read from the wrong place",
        f"a LOAD (any memory type) with y_size > 1 and x_stride >= {1 << FAULT_STRIDE_BITS}"),
    FaultName.STORE_ROWS: Fault(
        "tensor store (core/tensor_store.py)",
        f"the DRAM row address restarts at dram_base every {FAULT_STORE_ROWS} rows (a "
        f"{FAULT_STORE_ROWS.bit_length() - 1}-bit row count), so rows {FAULT_STORE_ROWS}, "
        f"{FAULT_STORE_ROWS + 1}, ... overwrite rows 0, 1, ...",
        f"a STORE with y_size > {FAULT_STORE_ROWS}"),
    FaultName.TOKEN_WRAP: Fault(
        "token counters (core/tokens.py)",
        f"each count wraps modulo {1 << FAULT_TOKEN_BITS} whatever TOKEN_BITS says (no "
        f"overflow error): a {1 << FAULT_TOKEN_BITS}th pending token empties the counter and "
        f"its consumer waits for ever (deadlock)",
        f"{1 << FAULT_TOKEN_BITS} or more tokens pending in one counter (TOKEN_BITS > "
        f"{FAULT_TOKEN_BITS})"),
    FaultName.VME_WRITE_PAGE: Fault(
        "memory engine, write side (axi/write_engine.py)",
        f"the address of the burst after a split at a {FAULT_PAGE_BYTES}-byte boundary keeps "
        f"the old page, so the second part of the write lands at the start of the first page",
        f"a STORE row (one write command) that crosses a {FAULT_PAGE_BYTES // 1024} KiB page "
        f"boundary"),
    FaultName.ALU_UOP_BGN: Fault(
        "ALU decode (core/alu.py)",
        "the ALU takes uop_bgn one bit short (its top bit dropped), so a kernel in the upper "
        "half of the micro-op scratchpad runs from half the depth lower: the micro-ops below "
        "it run too",
        "an ALU whose micro-ops start at uop row >= half the micro-op depth (128 on tiny, 4096 "
        "on default)"),
    FaultName.LOOP_ITER: Fault(
        "GEMM/ALU loop nest (core/loop_gen.py)",
        f"the inner and outer loops end when the low {FAULT_LOOP_BITS} bits of the count match "
        f"iter_in / iter_out, so a loop of n > {1 << FAULT_LOOP_BITS} iterations runs only "
        f"n mod {1 << FAULT_LOOP_BITS} of them ({1 << FAULT_LOOP_BITS} when that is 0)",
        f"a GEMM or ALU with iter_in or iter_out above {1 << FAULT_LOOP_BITS}"),
    FaultName.WGT_BASE: Fault(
        "tensor load (core/tensor_load.py)",
        "a LOAD WGT adds INP_BASE instead of WGT_BASE to its DRAM addresses",
        "a LOAD WGT while INP_BASE differs from WGT_BASE (non-zero base registers)"),
}


#: Name → a planted protocol bug, for the formal proofs (``avta formal --plant``, docs/formal.md).
#: Each breaks a promise of one block's interface that a proof states as a property; a program
#: on the whole core may or may not notice, so the simulators' detection table leaves them out.
PROTOCOL_FAULTS = {
    FaultName.AXI_VALID_DROP: Fault(
        "memory engine, read side (axi/read_engine.py)",
        "ARVALID falls one cycle after it rose even when ARREADY was low, so a burst the "
        "subordinate was not ready for is withdrawn (AMBA AXI A3.2.1: VALID stays until READY)",
        "a read burst that meets ARREADY low"),
    FaultName.AXI_BURST_4K: Fault(
        "memory engine, read side (axi/read_engine.py)",
        "the burst splitter ignores the 4 KiB boundary (only the 256-beat limit), so a burst "
        "may cross it (AMBA AXI A3.4.1)",
        "a read command whose bytes cross a 4 KiB boundary"),
    FaultName.AXI_WLAST_EARLY: Fault(
        "memory engine, write side (axi/write_engine.py)",
        "WLAST is raised one beat early in every burst of two or more beats",
        "a write burst of two or more beats"),
    FaultName.AXI_READ_ID_REUSE: Fault(
        "memory engine, read side (axi/read_engine.py)",
        "the tag buffer always sees slot 0 as free, so a new command may take AXI ID 0 while "
        "an earlier command's beats on ID 0 are still due",
        "a read command taken while one on ID 0 is in flight"),
    FaultName.QUEUE_ACCEPT_FULL: Fault(
        "instruction queue (core/queue.py)",
        "the queue says ready even when full, so a write into a full queue is lost",
        "fetch writing into a full instruction queue"),
    FaultName.ALU_OP: Fault(
        "ALU lanes (core/alu_lanes.py)",
        "MIN compares the lanes unsigned, so a negative lane loses to a positive one",
        "an ALU MIN with operands of different signs"),
    FaultName.VCR_B_EARLY: Fault(
        "control registers (axi/vcr.py)",
        "the write response (B) is given as soon as the address (AW) is taken, without "
        "waiting for the data (W), so the register is written with stale data",
        "a host that sends AW before W"),
    FaultName.DECODE_WRONG_QUEUE: Fault(
        "instruction decode (core/decode.py)",
        "a LOAD UOP is sent to the load stage's queue instead of compute's",
        "a LOAD of memory type UOP"),
    FaultName.FETCH_DUP_STORE: Fault(
        "fetch (core/fetch.py)",
        "taking an instruction into the store queue does not retire it from dispatch, so "
        "each STORE is dispatched again and again",
        "any STORE"),
    FaultName.STAGE_IGNORE_HALT: Fault(
        "stage control (core/stage_control.py)",
        "a stage ignores halt: after an error it still starts the instructions in its queue",
        "an error while a stage has an instruction waiting"),
    FaultName.CTRL_FINISH_EARLY: Fault(
        "run control (core/core.py)",
        "CTRL's FINISH rises when FINISH executes, while the run is still busy (stores may "
        "still be writing), instead of when the run has drained",
        "any program that ends with FINISH"),
    FaultName.VCR_R_DROP: Fault(
        "control registers (axi/vcr.py)",
        "RVALID falls after one cycle even when RREADY was low, so a host that is slow to "
        "take a read loses it (AMBA AXI A3.2.1: VALID stays until READY)",
        "a register read that meets RREADY low"),
    FaultName.VCR_LAUNCH_BUSY: Fault(
        "control registers (axi/vcr.py)",
        "a CTRL write with bit 0 set launches even while the core is busy (docs: ignored "
        "while busy)",
        "a CTRL launch written during a run (the core itself also ignores a launch while busy, "
        "so only the control registers' own property tells)"),
    FaultName.LOOP_OFFSET: Fault(
        "GEMM/ALU loop nest (core/loop_gen.py)",
        "a step of the outer loop adds factor_out to the last inner offset instead of to the "
        "outer one, so the offsets of i_o ≥ 1 carry (iter_in − 1)·factor_in too many",
        "a GEMM or ALU with iter_out > 1, iter_in > 1 and a non-zero factor_in"),
    FaultName.PAD_ROW_WIDTH: Fault(
        "LOAD pad walker (core/pad_walker.py)",
        "the next data row starts x_pad_1 rows too early (the row width without the right "
        "pad), so the side pads of every data row after the first land in the wrong rows",
        "a LOAD with a right pad and two or more data rows"),
    FaultName.GEMM_PRODUCT_SIGN: Fault(
        "GEMM (core/gemm.py)",
        "the product of the first element pair of every dot product enters the sum negated",
        "any GEMM step whose first INP and WGT elements have a non-zero product"),
    FaultName.GEMM_LANE_LAST: Fault(
        "GEMM (core/gemm.py)",
        "in the last lane only (b = BATCH − 1, o = BLOCK_OUT − 1), the product of the last "
        "element pair enters the sum negated: every other lane and position is right",
        "a GEMM step whose last INP row element and last WGT row's last element have a "
        "non-zero product"),
    FaultName.ALU_IMM_ZEXT: Fault(
        "ALU (core/alu.py)",
        "the immediate is zero-extended, not sign-extended, so a negative immediate becomes "
        "a large positive B",
        "an ALU with use_imm and a negative immediate"),
    FaultName.COMPUTE_HAZARD_DST: Fault(
        "compute stage (core/compute.py)",
        "a GEMM beside a detached ALU instruction is held only on the ACC banks of the rows "
        "the ALU reads (src), not of those it writes (dst), so the GEMM may read an ALU row "
        "before the ALU writes it, write one the ALU then overwrites, or share a bank's port "
        "with the ALU",
        "a GEMM right after an ALU instruction, in the bank of the ALU's destination rows"),
    FaultName.GEMM_RESET_STICKY: Fault(
        "GEMM (core/gemm.py)",
        "the reset flag is latched by the first GEMM with reset and never cleared, so every "
        "later GEMM writes 0 instead of accumulating",
        "a GEMM without reset after one with reset"),
    FaultName.ALU_NO_FORWARD: Fault(
        "ALU (core/alu.py)",
        "forwarding disabled: an operand read before a write to its row lands keeps the stale "
        "row, so a step that reads the row an earlier step is still writing gets the old value "
        "(the ACC ports' own read-during-write transparency is kept)",
        "an ALU step that reads the row written by the step just before it (e.g. iter_in > 1 "
        "with dst_factor_in = src_factor_in = 0)"),
}

#: Every planted bug a design can be asked for.
ALL_FAULTS = {**FAULTS, **PROTOCOL_FAULTS}


def check_faults(faults):
    """``faults`` (names or :class:`FaultName` members) as a frozenset of members, refusing
    unknown names."""
    faults = frozenset(faults or ())
    unknown = sorted(faults - set(ALL_FAULTS))
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(ALL_FAULTS)}")
    return frozenset(map(FaultName, faults))


def fault_table(faults=None):
    """The planted bugs (``faults``, default :data:`FAULTS`) as a Markdown table (name, unit,
    corner, what the bug does)."""
    lines = ["| fault | unit | triggered by | what it does |", "| --- | --- | --- | --- |"]
    lines += [f"| `{name}` | {f.unit} | {f.corner} | {f.description} |"
              for name, f in (faults or FAULTS).items()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(fault_table())
