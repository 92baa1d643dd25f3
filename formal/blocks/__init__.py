"""The blocks with properties: name → a function ``checks(cfg, faults)`` giving its
:class:`~avta.formal.harness.Check` list (one module per block of :mod:`avta.hw`)."""

import importlib

from avta.errors import UserError

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
    "axi-valid-drop": ("read_engine", "ar"),
    "axi-burst-4k": ("read_engine", "ar"),
    "axi-wlast-early": ("write_engine", "w"),
    "queue-accept-full": ("queue", "occupancy"),
    "alu-op": ("alu", "ops"),
    "alu-lane": ("alu", "ops"),
    "token-wrap": ("tokens", "count"),
    "vcr-b-early": ("vcr", "write"),
    "vcr-r-drop": ("vcr", "read"),
    "vcr-launch-busy": ("vcr", "regs"),
    "decode-wrong-queue": ("fetch", "decode"),
    "fetch-dup-store": ("fetch", "order"),
    "stage-ignore-halt": ("stage_control", "halt"),
    "ctrl-finish-early": ("stage_control", "ctrl"),
    "loop-iter": ("loop_gen", "steps"),
    "loop-offset": ("loop_gen", "offsets"),
    "pad-row-width": ("pad_walker", "rows"),
    "alu-imm-zext": ("alu", "operands"),
    "gemm-product-sign": ("gemm", "pipe"),
    "gemm-lane-last": ("gemm", "pipe"),
    "axi-read-id-reuse": ("read_engine", "order"),
    "compute-hazard-dst": ("compute", "overlap"),
    "gemm-reset-sticky": ("compute", "fresh"),
    "alu-no-forward": ("alu", "pipe"),
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
