"""The units of VTA a synthesis report is broken into, and which Amaranth module is which.

Amaranth names each module of the RTLIL netlist by its path in the hierarchy
(``vta_top.core.run.compute.gemm.loop``); a module belongs to the unit of the longest prefix
listed here. The floorplan's logic model (:class:`avta.floorplan.vta.LogicModel`) has three
blocks: ``gemm`` and ``alu`` are the compute units of those names, ``ctrl`` is all the others
(:data:`FLOORPLAN_BLOCK`).
"""

from avta.isa.memories import SCRATCHPADS

__all__ = ["UNITS", "unit_of", "FLOORPLAN_BLOCK"]

#: unit -> (what it is, module path prefixes below ``vta_top``).
UNITS = {
    "fetch": ("instruction fetch, ring buffer and decode", ("core.run.fetch",)),
    "load": ("load stage: LOAD INP/WGT with padding, its stage control",
             ("core.run.load", "core.run.ld_ctrl")),
    "compute_gemm": ("GEMM core and its micro-op loop", ("core.run.compute.gemm",)),
    "compute_alu": ("ALU lanes and their micro-op loop", ("core.run.compute.alu",)),
    "compute_other": ("compute stage: LOAD UOP/ACC, port sharing, its stage control",
                      ("core.run.compute", "core.run.cp_ctrl")),
    "store": ("store stage: OUT rows packed into bus beats, its stage control",
              ("core.run.store", "core.run.st_ctrl")),
    "queues": ("the three instruction queues and four token counters",
               ("core.run.ld_insn_q", "core.run.cp_insn_q", "core.run.st_insn_q",
                "core.run.tok_l2c", "core.run.tok_c2l", "core.run.tok_c2s",
                "core.run.tok_s2c")),
    "scratchpad_ports": ("the scratchpads' bank routing and ACC's forwarding registers, beside "
                         "their memories", tuple(f"core.{name}_mem" for name in SCRATCHPADS)),
    "memory_engine": ("AXI manager: read arbiter, read and write engines", ("vme",)),
    "control_registers": ("AXI4-Lite control registers (VCR)", ("vcr",)),
    "glue": ("top-level wiring and the core's own logic", ("", "core", "core.run")),
}

FLOORPLAN_BLOCK = {unit: {"compute_gemm": "gemm", "compute_alu": "alu"}.get(unit, "ctrl")
                   for unit in UNITS}

TOP = "vta_top"


def unit_of(module):
    """The unit of the Amaranth module named ``module`` (``vta_top...``, a leading ``\\`` of
    RTLIL allowed)."""
    name = module.lstrip("\\")
    if name != TOP and not name.startswith(TOP + "."):
        raise ValueError(f"module {module!r} is not below {TOP}")
    rel = name[len(TOP) + 1:]
    best, length = None, -1
    for unit, (_, prefixes) in UNITS.items():
        for prefix in prefixes:
            if (rel == prefix or rel.startswith(prefix + ".") or prefix == "") \
                    and len(prefix) > length and (prefix != "" or rel == ""):
                best, length = unit, len(prefix)
    if best is None:
        raise ValueError(f"module {module!r} belongs to no unit of avta.synth.units.UNITS; "
                         f"add its path there")
    return best
