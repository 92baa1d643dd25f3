"""VTA floorplans: the macro inventory of a configuration placed in the functional or tiled style.

>>> from avta.isa.config import load_config
>>> plan = build_floorplan(load_config("default"), "tiled")
>>> plan.floorplan.check()
[]
>>> sorted(plan.report())[:3]
['config', 'core_area_mm2', 'design']

The report gives die area, macro area, utilization and the wire-length estimate of
:mod:`avta.floorplan.wires` (bits x half-perimeter of the pin centres) over the buses of
:func:`vta_buses`, so styles can be compared: both styles place the same macros and logic, and
only where they go differs.
"""

from ...isa import formats
from ..layout import Floorplan
from ..tech import load_technology
from ..wires import Bus, estimate_wires
from .inventory import TILED, Inventory, MemoryPlan, plan_inventory
from .logic import TERMS as LOGIC_TERMS, LogicModel
from .styles import STYLES

__all__ = ["build_floorplan", "vta_buses", "VtaFloorplan", "LogicModel", "LOGIC_TERMS",
           "plan_inventory", "Inventory", "MemoryPlan", "STYLES", "TILED"]

#: Buses whose slices carry one tile's lanes: the wide, timing-critical WGT and ACC paths.
LANE_BUSES = ("wgt->gemm", "acc<->gemm", "acc<->alu")


def vta_buses(cfg, inventory, groups):
    """The buses between VTA's groups, as placed by a style (``groups``, see :mod:`.styles`).

    Memory data buses are counted per macro column, from the column's banks to the logic slice
    it feeds, with that column's bits: WGT to GEMM; ACC to and from GEMM (one read, one write)
    and the ALU (ACC_READ_PORTS reads, one write); ACC to OUT (the low byte of each lane).
    Broadcasts are one bus with every load as a pin: INP to every GEMM slice, micro-ops and
    instructions to every GEMM and ALU slice, load data from the memory engine (in ctrl) to every
    macro of a scratchpad, and OUT to the memory engine for stores.
    """
    logic, memory = groups["logic"], groups["memory"]
    gemm, alu, (ctrl,) = logic["gemm"], logic["alu"], logic["ctrl"]
    for function in ("wgt", "acc"):
        stray = [s for s, _ in memory[function] if not 0 <= s < len(gemm)]
        if stray:
            raise ValueError(f"{function} columns feed slices {stray} but there are {len(gemm)} "
                             f"GEMM slices")
    wgt_bits, acc_bits = inventory["wgt"].bits, inventory["acc"].bits
    out_bits = cfg.out_tensor_bits // inventory["acc"].columns
    all_macros = {m: tuple(p for _, paths in memory[m] for p in paths) for m in memory}
    buses = [Bus("inp->gemm", cfg.inp_tensor_bits, (*all_macros["inp"], *gemm))]
    for c, (s, paths) in enumerate(memory["wgt"]):
        buses.append(Bus(f"wgt->gemm[{c}]", wgt_bits, (*paths, gemm[s])))
    for c, (s, paths) in enumerate(memory["acc"]):
        buses += [Bus(f"acc<->gemm[{c}]", 2 * acc_bits, (*paths, gemm[s])),
                  Bus(f"acc<->alu[{c}]", (cfg.acc_read_ports + 1) * acc_bits, (*paths, alu[s])),
                  Bus(f"acc->out[{c}]", out_bits, (*paths, *all_macros["out"]))]
    buses += [Bus("uop->compute", cfg.uop_bits, (*all_macros["uop"], *gemm, *alu)),
              Bus("insn->compute", formats.INSN_BITS, (ctrl, *gemm, *alu))]
    buses += [Bus(f"load->{m}", cfg.axi_data_bits, (ctrl, *all_macros[m]))
              for m in ("inp", "wgt", "acc", "uop")]
    buses.append(Bus("out->store", cfg.axi_data_bits, (*all_macros["out"], ctrl)))
    return buses


class VtaFloorplan:
    """A built VTA floorplan: the :class:`Floorplan`, its inventory, buses and figures."""

    def __init__(self, *, cfg, style, floorplan, inventory, buses, logic_ge):
        self._cfg, self._style, self._floorplan = cfg, style, floorplan
        self._inventory, self._buses, self._logic_ge = inventory, tuple(buses), dict(logic_ge)
        self._wires = estimate_wires(floorplan, buses)

    cfg = property(lambda self: self._cfg)
    style = property(lambda self: self._style)
    floorplan = property(lambda self: self._floorplan)
    inventory = property(lambda self: self._inventory)
    buses = property(lambda self: self._buses)
    wires = property(lambda self: self._wires)
    name = property(lambda self: f"{self._cfg.name}-{self._style}")

    def report(self):
        """Die and macro area, utilization, and the wire estimate, as plain data."""
        fp = self._floorplan
        die, core = fp.die_rect, fp.core_rect
        lane = [b for b in self._wires.buses if b.bus.name.split("[")[0] in LANE_BUSES]
        longest = max(lane, key=lambda b: b.hpwl_um)
        return {
            "design": fp.name, "config": self._cfg.name, "shape": self._cfg.shape_name,
            "style": self._style, "technology": fp.technology.name,
            "tiles": self._inventory.tiles if self._style == "tiled" else 1,
            "die_width_um": fp.um(die.width), "die_height_um": fp.um(die.height),
            "die_area_mm2": fp.um2(die.area) / 1e6, "core_area_mm2": fp.um2(core.area) / 1e6,
            "macro_count": len(fp.macros()), "macro_area_mm2": fp.um2(fp.macro_area) / 1e6,
            "logic_area_mm2": fp.um2(fp.logic_area) / 1e6,
            "logic_ge": self._logic_ge,
            "utilization": fp.utilization,
            "wire_mm": self._wires.total_mm,
            "wire_mm_by_bus": self._wires.by_group(),
            "longest_lane_bus": {"name": longest.bus.name, "bits": longest.bus.bits,
                                 "hpwl_um": longest.hpwl_um},
            "inventory": self._inventory.table(),
        }

    def summary(self):
        """A few lines for a person: the figures that compare styles."""
        r = self.report()
        long = r["longest_lane_bus"]
        return (f"{self.name} ({r['shape']}, {r['technology']}): die {r['die_width_um']:.0f} x "
                f"{r['die_height_um']:.0f} um = {r['die_area_mm2']:.3f} mm^2, "
                f"{r['macro_count']} macros {r['macro_area_mm2']:.3f} mm^2, logic "
                f"{r['logic_area_mm2']:.3f} mm^2, utilization {r['utilization']:.1%}, wire "
                f"estimate {r['wire_mm']:.0f} mm (longest lane bus {long['name']}: "
                f"{long['bits']} bits over {long['hpwl_um']:.0f} um)")


def build_floorplan(cfg, style, *, technology=None, tiles=None, tile_rows=None, logic=None,
                    design=None):
    """Build the ``style`` floorplan ("functional" or "tiled") of configuration ``cfg``.

    ``technology`` is a :class:`~avta.floorplan.tech.Technology` or the name of a shipped one
    (default generic45); ``tiles`` overrides the number of ACC-centric tiles; ``logic`` is the
    :class:`LogicModel`; ``design`` names the top block (default ``vta_<config>_<style>``).
    ``tile_rows`` fixes the rows of tiles of the tiled style (by default the best scoring).
    """
    if style not in STYLES:
        raise ValueError(f"style {style!r}: use one of {', '.join(STYLES)}")
    options = {}
    if tile_rows is not None:
        if style != "tiled":
            raise ValueError(f"tile_rows = {tile_rows!r} applies to the tiled style, not {style}")
        options["rows"] = tile_rows
    tech = technology if technology is not None and not isinstance(technology, str) \
        else load_technology(technology or "generic45")
    logic = logic or LogicModel()
    inventory = plan_inventory(cfg, tech, tiles=tiles)
    ge = {"gemm": logic.gemm(cfg), "alu": logic.alu(cfg), "ctrl": logic.control(cfg)}
    areas = {k: v * tech.nand2_area for k, v in ge.items()}
    design = design or f"vta_{_identifier(cfg.name)}_{style}"
    die, groups = STYLES[style](design, inventory, areas, tech, **options)
    floorplan = Floorplan(design, die=die, dbu_per_micron=tech.dbu_per_micron,
                          core_margin=tech.core_margin, grid=tech.grid,
                          max_density=tech.target_utilization, technology=tech)
    return VtaFloorplan(cfg=cfg, style=style, floorplan=floorplan, inventory=inventory,
                        buses=vta_buses(cfg, inventory, groups), logic_ge=ge)


def _identifier(text):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return out if out[:1].isalpha() or out[:1] == "_" else f"c_{out}"
