"""Time and energy in a sweep, and the Pareto front over the objectives a designer picks.

A point's row carries its run's event counts (:func:`event_columns`, the ``n_`` columns: what
the simulation counted, independent of the technology and the clock, so they are cached with
the point). :func:`add_time_and_energy` then gives each ``ok`` row its clock
(:func:`avta.sim.energy.report.resolve_clock`: avta fpga's measurement, else the timing
model), latency,
energy with its breakdown, and EDP from an energy table, and :func:`mark_front` marks the
Pareto front over two or three of :data:`OBJECTIVES` (``avta sweep --objectives``).
"""

from avta.errors import UserError
from avta.isa.memories import SCRATCHPADS

__all__ = ["OBJECTIVES", "DEFAULT_OBJECTIVES", "parse_objectives", "event_columns",
           "add_time_and_energy", "mark_front", "front_lines"]

#: objective -> (row column, what it is with its unit); every objective is minimised.
OBJECTIVES = {
    "latency": ("latency_us", "latency (µs)"),
    "energy": ("energy_uj", "energy (µJ)"),
    "edp": ("edp_js", "energy-delay product (J·s)"),
    "area": ("area_mm2", "area (mm², floorplan model)"),
    "cycles": ("cycles", "cycles"),
}
#: The front ``avta sweep`` marks unless ``--objectives`` says otherwise (the front of before
#: time and energy were reported).
DEFAULT_OBJECTIVES = ("cycles", "area")

_SCALARS = ("cycles", "insns", "macs", "alu_ops", "dram_bytes")


def parse_objectives(text):
    """``"latency,energy"`` -> ``("latency", "energy")``: two or three distinct objectives."""
    names = tuple(n.strip() for n in str(text).split(",") if n.strip())
    unknown = [n for n in names if n not in OBJECTIVES]
    if unknown or not 2 <= len(names) <= 3 or len(set(names)) != len(names):
        raise UserError(f"--objectives {text!r}: give two or three different ones of "
                        f"{', '.join(OBJECTIVES)}, separated by commas (e.g. latency,area)")
    return names


def event_columns(cfg, run):
    """The ``n_`` columns of a point: its network run's :class:`EventCounts` summed over the
    device layers (``n_macs``, ``n_dram_bytes``, ``n_<scratchpad>_reads``, ...)."""
    from avta.sim.energy import EventCounts, event_counts
    total = EventCounts.zero()
    for layer in run.layers:
        if layer.on == "device" and layer.counters:
            total = total + event_counts(cfg, counters=layer.counters, mix=layer.mix,
                                         cycles=layer.cycles, insns=layer.insns)
    row = {f"n_{k}": getattr(total, k) for k in _SCALARS}
    for pad in SCRATCHPADS:
        row[f"n_{pad}_reads"], row[f"n_{pad}_writes"] = total.reads[pad], total.writes[pad]
    return row


def _events(row):
    from avta.sim.energy import EventCounts
    return EventCounts(**{k: row[f"n_{k}"] for k in _SCALARS},
                       reads={p: row[f"n_{p}_reads"] for p in SCRATCHPADS},
                       writes={p: row[f"n_{p}_writes"] for p in SCRATCHPADS})


def add_time_and_energy(rows, configs, table):
    """Give every ``ok`` row with event counts ``clock_mhz``, ``clock_source``, ``latency_us``,
    ``energy_uj``, ``energy_<category>_uj`` and ``edp_js``; ``configs`` maps a row's ``index``
    to its configuration. Returns the number of ``ok`` rows without counts (cached by an avta
    that did not count them: delete DIR/cache to run them again)."""
    from avta.sim.energy.report import figures, resolve_clock
    missing = 0
    for row in rows:
        if row.get("status") != "ok":
            continue
        if "n_macs" not in row:
            missing += 1
            continue
        clock = resolve_clock(configs[row["index"]])
        f = figures(configs[row["index"]], _events(row), table, clock.mhz)
        row.update(clock_mhz=round(clock.mhz, 3), clock_source=clock.source,
                   latency_us=f["latency_us"], energy_uj=f["energy_uj"], edp_js=f["edp_js"])
        row.update({f"energy_{c}_uj": v * 1e-6 for c, v in f["energy_pj"].items()})
    return missing


def _eligible(row, columns):
    return (row.get("status") == "ok" and not row.get("host_layers")
            and all(isinstance(row.get(c), (int, float)) for c in columns))


def mark_front(rows, objectives):
    """Mark ``row["pareto"]``: an eligible row (``ok``, every layer on the device, every
    objective known) that no other eligible row dominates on ``objectives`` (no worse on each,
    better on one)."""
    columns = [OBJECTIVES[o][0] for o in objectives]
    ok = [r for r in rows if _eligible(r, columns)]
    for r in rows:
        r["pareto"] = _eligible(r, columns) and not any(
            all(q[c] <= r[c] for c in columns) and any(q[c] < r[c] for c in columns)
            for q in ok)
    return rows


def front_lines(rows, varied, objectives):
    """The front as lines of text, by the first objective."""
    columns = [OBJECTIVES[o][0] for o in objectives]
    front = sorted((r for r in rows if r.get("pareto")), key=lambda r: r[columns[0]])
    extra = [c for c in ("cycles", "clock_mhz", "latency_us", "energy_uj", "edp_js", "area_mm2")
             if c not in columns]
    head = [*varied, "shape", *columns, *extra]
    lines = [head]
    for r in front:
        lines.append([*(str(r[k]) for k in varied), r["shape"],
                      *(_cell(r.get(c, "")) for c in columns + extra)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines]


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)
