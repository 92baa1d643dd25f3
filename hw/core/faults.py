"""Planted bugs, for testing the verification tools only (``avta.sim.trace.diff``, the fuzzer).

A test asks the generator for a design with one of these bugs (``top_verilog(cfg,
faults={"alu-lane"})``) and checks that the trace diff finds it at the right instruction and
row. No command-line option reaches them: a generated design never has one unless a test asks.
"""

__all__ = ["FAULTS", "check_faults", "FAULT_UOP_ROW"]

#: The micro-op row whose GEMM steps the ``gemm-acc-index`` fault sends to the wrong ACC row.
FAULT_UOP_ROW = 1

#: Name → what the planted bug does.
FAULTS = {
    "alu-lane": "two-operand ALU ADD: lane 1 of every batch row takes operand B from lane 0",
    "gemm-acc-index": f"GEMM: steps of the micro-op in uop row {FAULT_UOP_ROW} write ACC row "
                      f"dst + 1 (an off-by-one ACC index)",
}


def check_faults(faults):
    """``faults`` as a frozenset, refusing unknown names."""
    faults = frozenset(faults or ())
    unknown = sorted(faults - set(FAULTS))
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    return faults
