"""Area reports: the floorplan model's (no synthesis) and the synthesized one, per unit.

Both are plain data (:class:`AreaReport`, ``to_dict`` for JSON) and print as a table. Areas are
µm² except where a key says mm². The synthesized report puts next to each unit its floorplan
block (``gemm``, ``alu``, ``ctrl``, :data:`.units.FLOORPLAN_BLOCK`) and compares each block's
synthesized logic area with the floorplan model's.
"""

from dataclasses import dataclass, field

from avta.floorplan.vta import LogicModel, build_floorplan

from .cells import cell_area, gate_equivalents
from .units import FLOORPLAN_BLOCK, UNITS, unit_of

__all__ = ["AreaReport", "model_report", "synth_report", "model_block_areas"]

BLOCKS = ("gemm", "alu", "ctrl")


@dataclass
class AreaReport:
    """``kind`` is "model" or "synth"; ``macros`` one row per SRAM macro group; ``logic`` one
    row per unit (synth) or block (model); ``blocks`` the logic per floorplan block;
    ``totals`` the sums."""
    config: str
    kind: str
    macros: list
    logic: list
    blocks: dict
    totals: dict
    extra: dict = field(default_factory=dict)

    def to_dict(self):
        return {"config": self.config, "kind": self.kind, "macros": self.macros,
                "logic": self.logic, "blocks": self.blocks, "totals": self.totals, **self.extra}

    def table(self):
        """Lines for a person."""
        out = [f"{self.config}: area ({'synthesized logic' if self.kind == 'synth' else 'floorplan model'})",
               "", f"  {'SRAM macros':<36}{'count':>6}{'master':>18}{'um^2':>12}"]
        for m in self.macros:
            out.append(f"  {m['memory']:<36}{m['count']:>6}{m['master']:>18}{m['area_um2']:>12,.0f}")
        if self.kind == "synth":
            out += ["", f"  {'logic unit':<20}{'block':>6}{'cells':>10}{'flops':>9}"
                        f"{'GE':>11}{'um^2':>12}"]
            for u in self.logic:
                out.append(f"  {u['unit']:<20}{u['block']:>6}{u['cells']:>10,}{u['flops']:>9,}"
                           f"{u['ge']:>11,.0f}{u['area_um2']:>12,.0f}")
            out += ["", f"  {'block':<8}{'synth um^2':>14}{'model um^2':>14}{'error':>9}"]
            for name, b in self.blocks.items():
                out.append(f"  {name:<8}{b['area_um2']:>14,.0f}{b['model_um2']:>14,.0f}"
                           f"{b['error']:>9.1%}")
        else:
            out += ["", f"  {'logic block':<20}{'GE':>12}{'um^2':>14}"]
            for b in self.logic:
                out.append(f"  {b['block']:<20}{b['ge']:>12,.0f}{b['area_um2']:>14,.0f}")
        out.append("")
        for key, value in self.totals.items():
            if key.endswith("_mm2"):
                value = f"{value:.4f}"
            elif key.endswith("_seconds"):
                value = f"{value:.0f}"
            out.append(f"  {key}: {value}")
        return out


def model_block_areas(cfg, technology, logic=None):
    """µm² of the floorplan model's logic blocks (gemm, alu, ctrl) and their GE."""
    logic = logic or LogicModel()
    ge = {"gemm": logic.gemm(cfg), "alu": logic.alu(cfg), "ctrl": logic.control(cfg)}
    nand2 = technology.um(technology.um(technology.nand2_area))
    return {b: {"ge": ge[b], "area_um2": ge[b] * nand2} for b in BLOCKS}


def _scratchpad_rows(plan):
    fp = plan.floorplan
    return [{"memory": p.memory, "count": p.count, "master": p.master.name,
             "area_um2": fp.um2(p.count * p.master.area)} for p in plan.inventory.plans.values()]


def model_report(cfg, technology, *, style="tiled", logic=None):
    """The floorplan model's area of ``cfg``: the die of the ``style`` floorplan, its SRAM
    macros per scratchpad and its logic per block."""
    plan = build_floorplan(cfg, style, technology=technology, logic=logic)
    r = plan.report()
    blocks = model_block_areas(cfg, technology, logic)
    macro_um2 = r["macro_area_mm2"] * 1e6
    logic_um2 = sum(b["area_um2"] for b in blocks.values())
    totals = {"die_mm2": r["die_area_mm2"], "sram_mm2": macro_um2 / 1e6,
              "logic_mm2": logic_um2 / 1e6,
              "other_mm2": r["die_area_mm2"] - macro_um2 / 1e6 - logic_um2 / 1e6,
              "style": style}
    return AreaReport(cfg.name, "model", _scratchpad_rows(plan),
                      [{"block": b, **v} for b, v in blocks.items()], blocks, totals)


def synth_report(cfg, technology, result, *, logic=None):
    """The synthesized area of ``cfg`` from a :class:`~.yosys.SynthResult`: logic cells and
    µm² per unit, the macros (scratchpads and any other memory with a legal SRAM), and each
    floorplan block's synthesized area against the model's."""
    areas = technology.logic_cells
    if areas is None:
        raise ValueError(f"technology {technology.name} has no logic_cells section: it cannot "
                         f"turn synthesized cells into area")
    units = {u: {"unit": u, "block": FLOORPLAN_BLOCK[u], "cells": 0, "flops": 0,
                 "area_um2": 0.0, "modules": 0} for u in UNITS}
    for module, cells in result.cells.items():
        unit = units[unit_of(module)]
        unit["modules"] += 1
        for cell_type, count in cells.items():
            if cell_type == "$mem_v2":
                continue
            unit["cells"] += count
            unit["area_um2"] += count * cell_area(cell_type, areas)
            if "DFF" in cell_type:
                unit["flops"] += count
    for unit in units.values():
        unit["ge"] = gate_equivalents(unit["area_um2"], technology)
        unit["description"] = UNITS[unit["unit"]][0]
    macros, flop_memories = [], []
    for m in result.memories:
        if m["macro"]:
            # Scratchpads by name and bank (acc/bank1), other memories by path
            # (ld_insn_q.fifo/storage).
            path = f"{m['module'].removeprefix('vta_top.core.run.')}/{m['name']}"
            name = f"{m['scratchpad']}/{m['name']}" if m["scratchpad"] else path
            macros.append({"memory": name,
                           "count": m["count"], "master": m["macro"],
                           "area_um2": m["macro_um2"], "scratchpad": m["scratchpad"] is not None})
        else:
            flop_memories.append({"memory": f"{m['module']}/{m['name']}", "words": m["words"],
                                  "bits": m["bits"], "unit": unit_of(m["module"])})
    model = model_block_areas(cfg, technology, logic)
    blocks = {}
    for name in BLOCKS:
        area = sum(u["area_um2"] for u in units.values() if u["block"] == name)
        blocks[name] = {"area_um2": area, "ge": gate_equivalents(area, technology),
                        "model_um2": model[name]["area_um2"],
                        "error": model[name]["area_um2"] / area - 1 if area else 0.0}
    logic_um2 = sum(u["area_um2"] for u in units.values())
    scratch_um2 = sum(m["area_um2"] for m in macros if m["scratchpad"])
    other_um2 = sum(m["area_um2"] for m in macros if not m["scratchpad"])
    totals = {"logic_mm2": logic_um2 / 1e6, "logic_cells": sum(u["cells"] for u in units.values()),
              "scratchpad_sram_mm2": scratch_um2 / 1e6, "other_sram_mm2": other_um2 / 1e6,
              "model_logic_mm2": sum(b["model_um2"] for b in blocks.values()) / 1e6,
              "synthesis_seconds": result.seconds, "cached": result.cached}
    return AreaReport(cfg.name, "synth", macros, list(units.values()), blocks, totals,
                      {"memories_as_flops": flop_memories, "yosys": result.yosys,
                       "key": result.key})
