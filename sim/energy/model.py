"""Energy of a run: :class:`EventCounts` times an :class:`~.table.EnergyTable`, plus leakage.

Each category (:data:`CATEGORIES`) is in picojoules:

* ``mac``: the GEMM's multiply-accumulates (reset steps do none);
* ``alu``: the ALU's lane operations;
* ``uop``, ``inp``, ``wgt``, ``acc``, ``out``: each scratchpad's row reads and writes. A row is
  held by the floorplan's SRAM macros (:func:`~avta.floorplan.vta.inventory.plan_inventory`
  with the generic45 technology's legal sizes): ``columns`` macros side by side, each of
  ``words x bits`` (a bank's rows, a slice of the row), so an access costs ``columns`` times
  :meth:`~.table.EnergyTable.sram_access` of one macro's bits and bytes; a write goes to every
  copy of a scratchpad that keeps copies for a second reader, a read to one;
* ``dram``: the bytes moved over AXI, instructions included;
* ``control``: each instruction's fetch and decode;
* ``leakage``: the logic's gate equivalents (the floorplan's :class:`LogicModel`) and every SRAM
  bit (copies included) leaking for the run's ``cycles`` at the clock.
"""

import functools

from avta.floorplan.vta import LogicModel
from avta.isa.memories import SCRATCHPADS, scratchpads

__all__ = ["CATEGORIES", "energy_pj", "row_access_pj", "leakage_nw", "logic_ge", "sram_bits"]

CATEGORIES = ("mac", "alu", *SCRATCHPADS, "dram", "control", "leakage")
_LOGIC_BLOCKS = ("gemm", "alu", "ctrl")


def logic_ge(cfg, model=None):
    """Gate equivalents of the design's logic by the floorplan's calibrated model."""
    model = model or LogicModel()
    return sum(model.block(cfg, block) for block in _LOGIC_BLOCKS)


def sram_bits(cfg):
    """Bits of SRAM of every scratchpad, each copy counted."""
    return sum(pad.depth * pad.row_bits * pad.copies for pad in scratchpads(cfg).values())


def leakage_nw(cfg, table):
    """The design's leakage power (nW)."""
    return logic_ge(cfg) * table.leak_logic_per_ge + sram_bits(cfg) * table.leak_sram_per_bit


@functools.lru_cache(maxsize=64)
def _macros(cfg):
    """The floorplan's cut of each scratchpad into SRAM macros (generic45's legal sizes)."""
    from avta.floorplan.tech import load_technology
    from avta.floorplan.vta.inventory import plan_inventory
    return plan_inventory(cfg, load_technology()).plans


def row_access_pj(cfg, table, name, *, write=False):
    """pJ of reading (or writing one copy of) a row of scratchpad ``name``: its ``columns``
    macros side by side, each accessed for its slice of the row."""
    plan = _macros(cfg)[name]
    return plan.columns * table.sram_access(plan.bits, plan.words * plan.bits / 8, write=write)


def energy_pj(cfg, events, table, clock_mhz):
    """``{category: pJ}`` of a run with ``events`` on ``cfg`` at ``clock_mhz``."""
    if not clock_mhz > 0:
        raise ValueError(f"clock {clock_mhz!r} MHz: must be a positive frequency")
    out = {"mac": events.macs * table.mac_int8, "alu": events.alu_ops * table.alu_op_int32}
    for name, plan in _macros(cfg).items():
        read = row_access_pj(cfg, table, name)
        write = row_access_pj(cfg, table, name, write=True)
        out[name] = events.reads[name] * read + events.writes[name] * write * plan.copies
    out["dram"] = events.dram_bytes * table.dram_per_byte
    out["control"] = events.insns * table.insn_decode
    # nW x s = 1e-9 J/s x cycles / (MHz x 1e6) = 1e-3 pJ x nW x cycles / MHz.
    out["leakage"] = leakage_nw(cfg, table) * events.cycles / clock_mhz * 1e-3
    return {category: out[category] for category in CATEGORIES}
