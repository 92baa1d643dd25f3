"""The ``avta fpga`` report from a flow's result: resources against the device (nextpnr's
utilization), per unit (the flattened netlist's cells by name), Fmax, and the critical path
named by unit.

Yosys and nextpnr name each cell of the flattened netlist by its instance path, e.g.
``vta_top.core.run.compute.gemm.acc_TRELLIS_FF_Q_3`` (a LUT by a net it drives); the longest
prefix that is an instance path of the hierarchy (the modules of the RTLIL) is the cell's
module, and :func:`avta.synth.units.unit_of` (or any function given) its unit. A LUT named
after a net of another module (a port it feeds) counts there: the per-unit figures are close,
not exact.
"""

from dataclasses import dataclass

from .devices import RESOURCES

__all__ = ["flatten_counts", "module_of_cell", "critical_path", "FpgaReport", "build_report",
           "NEXTPNR_RESOURCE"]

#: nextpnr's utilization key of each resource of :data:`.devices.RESOURCES`.
NEXTPNR_RESOURCE = {"lut4": "TRELLIS_COMB", "ff": "TRELLIS_FF", "dp16kd": "DP16KD",
                    "mult18": "MULT18X18D"}
#: Yosys cell types counted per unit, and the column each goes to.
_STAT_COLUMNS = {"LUT4": "lut4", "CCU2C": "ccu2c", "TRELLIS_FF": "ff", "DP16KD": "dp16kd",
                 "PDPW16KD": "dp16kd", "MULT18X18D": "mult18", "TRELLIS_DPR16X4": "lutram"}

_CELL_NAMES = {"$__PDPW16KD_": "DP16KD (36 bits)", "$__DP16KD_": "DP16KD",
               "$__TRELLIS_DPR16X4_": "LUT RAM", "ff": "flip-flops"}


def _modules(stat):
    return {name.lstrip("\\"): data.get("num_cells_by_type", {})
            for name, data in stat["modules"].items()}


def flatten_counts(stat, top=None):
    """{cell type: count} of the whole design of a Yosys ``stat -json``, submodules counted
    as often as they are instantiated (``top``: the root module, default the one nothing
    instantiates)."""
    mods = _modules(stat)
    if top is None:
        used = {t for cells in mods.values() for t in cells if t in mods}
        (top,) = [m for m in mods if m not in used]

    def total(name):
        out = {}
        for cell_type, n in mods[name].items():
            sub = total(cell_type) if cell_type in mods else {cell_type: 1}
            for t, k in sub.items():
                out[t] = out.get(t, 0) + n * k
        return out
    return total(top)


def module_of_cell(cell, instances):
    """The instance path in ``instances`` (a set) that nextpnr's ``cell`` name lies under, ""
    for the top module's own cells."""
    best = ""
    for i in range(len(cell)):
        if cell[i] == "." and cell[:i] in instances and i > len(best):
            best = cell[:i]
    return best


def critical_path(report, instances, unit_of):
    """The clock's critical path of nextpnr's ``report`` as ``{"delay_ns", "from", "to",
    "units", "logic_levels"}``: ``units`` the units it passes through in order (repeats
    folded), from and to as ``unit: cell``."""
    paths = [p for p in report.get("critical_paths", []) if p["from"] == p["to"]
             and "<async>" not in p["from"]]
    if not paths:
        return None
    steps = paths[0]["path"]
    units, levels = [], 0
    for step in steps:
        for end in ("from", "to"):
            unit = unit_of(module_of_cell(step[end]["cell"], instances))
            if not units or units[-1] != unit:
                units.append(unit)
        levels += step["type"] == "logic"
    first, last = steps[0]["from"]["cell"], steps[-1]["to"]["cell"]
    return {"delay_ns": round(sum(s["delay"] for s in steps), 3),
            "from": f"{units[0]}: {first}", "to": f"{units[-1]}: {last}",
            "units": units, "logic_levels": levels}


@dataclass
class FpgaReport:
    """What ``avta fpga`` prints and writes as JSON: ``resources`` (resource -> used,
    available), ``units`` (unit -> Yosys cell counts), ``fmax_mhz``, ``critical``
    (:func:`critical_path`), ``over`` (resources the design lacks), ``wrapper`` (what the
    out-of-context wrapper adds), where it came from (``run``), and ``memories`` (memory path
    as the plan names it, ``vta_top.core.acc_mem`` -> what Yosys mapped it to: a RAM cell
    type or ``ff``)."""
    design: str
    device: str
    resources: dict
    units: dict
    fmax_mhz: float | None
    critical: dict | None
    over: dict
    wrapper: dict
    run: dict
    memories: dict

    @property
    def fits(self):
        return not self.over

    def to_dict(self):
        return dict(vars(self), fits=self.fits)

    def table(self):
        """Lines for a person."""
        out = [f"{self.design} on {self.device}: synthesized (synth_ecp5) and placed and "
               f"routed (nextpnr-ecp5)" if self.fits else
               f"{self.design} on {self.device}: synthesized (synth_ecp5); does not fit", "",
               f"  {'resource':<26}{'used':>9}{'device':>9}{'':>8}"]
        for r, what in RESOURCES.items():
            used, have = self.resources[r]
            out.append(f"  {what:<26}{used:>9,}{have:>9,}{used / have:>8.1%}")
        w = self.wrapper
        out += [f"  (the wrapper's share: {w['ffs']:,} flip-flops, {w['luts']:,} LUT4s)", "",
                f"  {'unit (cells by name)':<22}{'LUT4':>8}{'CCU2C':>7}{'FF':>8}{'LUTRAM':>7}"
                f"{'DP16KD':>7}{'MULT18':>7}"]
        for unit, c in self.units.items():
            out.append(f"  {unit:<22}{c['lut4']:>8,}{c['ccu2c']:>7,}{c['ff']:>8,}"
                       f"{c['lutram']:>7,}{c['dp16kd']:>7,}{c['mult18']:>7,}")
        out += ["", "  memories as synthesized: " + (", ".join(
            f"{path.removeprefix('vta_top.')} {_CELL_NAMES.get(cell, cell)}"
            for path, cell in self.memories.items()) or "none")]
        out.append("")
        if self.over:
            out.append("  does not fit: " + ", ".join(
                f"{RESOURCES[r]} {n:,} of {h:,} (+{n - h:,})" for r, (n, h) in self.over.items()))
        if self.fmax_mhz is not None:
            out.append(f"  Fmax: {self.fmax_mhz:.1f} MHz")
        if self.critical:
            c = self.critical
            out += [f"  critical path: {c['delay_ns']:.2f} ns, {c['logic_levels']} logic "
                    f"levels, through {' -> '.join(c['units'])}",
                    f"    from {c['from']}", f"    to   {c['to']}"]
        run = self.run
        out.append(f"  run: {'cached' if run['cached'] else ', '.join(f'{k} {v:.0f} s' for k, v in run['seconds'].items())}"
                   f" (seed {run['seed']}, key {run['key']})")
        return out


def build_report(design, device, result, *, top, wrapper_cost, unit_of=None):
    """The :class:`FpgaReport` of a :class:`~.flow.FpgaResult`. ``top`` is the wrapper's
    module name; ``unit_of`` maps an instance path below it (``vta_top.core``, "" for the
    wrapper) to a unit name (default: the path itself, "wrapper" for "")."""
    from .flow import needs_from_stat
    unit_of = unit_of or (lambda path: path or "wrapper")
    instances = set(result.cells) - {""}
    units = {}
    for path, cells in sorted(result.cells.items()):
        row = units.setdefault(unit_of(path), {c: 0 for c in set(_STAT_COLUMNS.values())})
        for cell_type, n in cells.items():
            if cell_type in _STAT_COLUMNS:
                row[_STAT_COLUMNS[cell_type]] += n
    have = device.resources()
    if result.nextpnr:
        util = result.nextpnr["utilization"]
        resources = {r: [util[k]["used"], util[k]["available"]]
                     for r, k in NEXTPNR_RESOURCE.items()}
        fmax = next(iter(result.nextpnr["fmax"].values()))["achieved"]
        critical = critical_path(result.nextpnr, instances, unit_of)
    else:
        resources = {r: [n, have[r]] for r, n in needs_from_stat(result.stat).items()}
        fmax, critical = None, None
    ffs, luts = wrapper_cost
    memories = {}
    for where, cell in result.memories.items():
        module, name = where.split("/")
        memories[f"{module.removeprefix(top + '.')}.{name}"] = cell
    return FpgaReport(design, device.name, resources, units, fmax and round(fmax, 2), critical,
                      dict(result.over), {"ffs": ffs, "luts": luts},
                      {"key": result.key, "seed": result.seed, "cached": result.cached,
                       "seconds": result.seconds, "versions": result.versions}, memories)
