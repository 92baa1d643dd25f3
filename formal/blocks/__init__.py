"""The blocks with properties: name → a function ``checks(cfg, faults)`` giving its
:class:`~avta.formal.harness.Check` list (one module per block of :mod:`avta.hw`)."""

import importlib

from avta.errors import UserError
from avta.hw.core.faults import FaultName

__all__ = ["BLOCKS", "CAUGHT_BY", "block_checks", "find_check"]

#: Block name → (module under avta.formal.blocks, what it is).
BLOCKS = {
    "tokens": ("tokens", "dependency-token counters (hw/core/tokens.py)"),
    "queue": ("queue", "instruction queues (hw/core/queue.py)"),
    "alu": ("alu", "ALU lanes and unit: operands, forwarding (hw/core/alu_lanes.py, "
                   "hw/core/alu.py)"),
    "read_engine": ("read_engine", "AXI4 read engine (hw/axi/read_engine.py)"),
    "write_engine": ("write_engine", "AXI4 write engine (hw/axi/write_engine.py)"),
    "read_arbiter": ("read_arbiter", "read arbiter (hw/axi/read_arbiter.py)"),
    "vcr": ("vcr", "AXI4-Lite control registers (hw/axi/vcr.py)"),
    "fetch": ("fetch", "instruction fetch and decode (hw/core/fetch.py, hw/core/decode.py)"),
    "stage_control": ("stage_control", "stage control and error propagation "
                                       "(hw/core/stage_control.py, hw/core/core.py)"),
    "loop_gen": ("loop_gen", "GEMM/ALU micro-op loop generator (hw/core/loop_gen.py)"),
    "pad_walker": ("pad_walker", "LOAD pad-row walker (hw/core/pad_walker.py)"),
    "gemm": ("gemm", "GEMM unit: dot-product lanes and pipeline (hw/core/gemm.py)"),
    "compute": ("compute", "compute stage self-consistency, A-QED (hw/core/compute.py, "
                           "hw/core/stage_control.py)"),
}

#: Planted fault (avta.hw.core.faults) → the (block, property) whose proof fails on it.
CAUGHT_BY = {
    FaultName.AXI_VALID_DROP: ("read_engine", "ar"),
    FaultName.AXI_BURST_4K: ("read_engine", "ar"),
    FaultName.AXI_WLAST_EARLY: ("write_engine", "w"),
    FaultName.QUEUE_ACCEPT_FULL: ("queue", "occupancy"),
    FaultName.ALU_OP: ("alu", "ops"),
    FaultName.ALU_LANE: ("alu", "ops"),
    FaultName.TOKEN_WRAP: ("tokens", "count"),
    FaultName.VCR_B_EARLY: ("vcr", "write"),
    FaultName.VCR_R_DROP: ("vcr", "read"),
    FaultName.VCR_LAUNCH_BUSY: ("vcr", "regs"),
    FaultName.DECODE_WRONG_QUEUE: ("fetch", "decode"),
    FaultName.FETCH_DUP_STORE: ("fetch", "order"),
    FaultName.STAGE_IGNORE_HALT: ("stage_control", "halt"),
    FaultName.CTRL_FINISH_EARLY: ("stage_control", "ctrl"),
    FaultName.LOOP_ITER: ("loop_gen", "steps"),
    FaultName.LOOP_OFFSET: ("loop_gen", "offsets"),
    FaultName.PAD_ROW_WIDTH: ("pad_walker", "rows"),
    FaultName.ALU_IMM_ZEXT: ("alu", "operands"),
    FaultName.GEMM_PRODUCT_SIGN: ("gemm", "pipe"),
    FaultName.GEMM_LANE_LAST: ("gemm", "pipe"),
    FaultName.AXI_READ_ID_REUSE: ("read_engine", "order"),
    FaultName.COMPUTE_HAZARD_DST: ("compute", "overlap"),
    FaultName.GEMM_RESET_STICKY: ("compute", "fresh"),
    FaultName.ALU_NO_FORWARD: ("alu", "pipe"),
}


def block_checks(name, cfg, faults=frozenset()):
    """The checks of block ``name`` for ``cfg``, on the design with ``faults`` planted."""
    if name not in BLOCKS:
        raise UserError(f"unknown block {name!r}; known: {', '.join(BLOCKS)}")
    module = importlib.import_module(f"{__name__}.{BLOCKS[name][0]}")
    return module.checks(cfg, frozenset(faults))


def find_check(block, name, cfg, faults=frozenset()):
    """The check ``block``.``name`` (a counterexample replay rebuilds its harness with this)."""
    for check in block_checks(block, cfg, faults):
        if check.name == name:
            return check
    raise UserError(f"block {block!r} has no property {name!r}; it has: "
                    f"{', '.join(c.name for c in block_checks(block, cfg, faults))}")
