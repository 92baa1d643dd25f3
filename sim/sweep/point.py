"""One point of a sweep: the workload's cycles and the floorplan's area of one configuration.

:func:`evaluate` takes a plain dict (a :func:`task`) so that it travels to a Dask worker as
is, and returns a plain dict (a row of the results). :func:`point_key` is the cache key.
"""

import functools
import hashlib
import json
import time
from pathlib import Path

__all__ = ["task", "point_key", "sources_digest", "SOURCES", "evaluate", "area", "AREA_COLUMNS"]

#: The area columns of a row: the die and what fills it (adding up to ``area_mm2``).
AREA_COLUMNS = ("area_mm2", "sram_mm2", "logic_mm2", "other_mm2")


#: The packages whose sources can change a row: the runtime that builds the programs, the
#: simulators that count them (fsim; tsim from the RTL for ``exact``), the floorplan's area,
#: the clock and energy models. A cached row made by other sources is another point's.
SOURCES = ("avta.isa", "avta.hw", "avta.runtime", "avta.sim", "avta.floorplan", "avta.synth",
           "avta.errors", "avta.files")


def _version():
    from avta.version import __version__
    return __version__


@functools.lru_cache(maxsize=1)
def sources_digest():
    """A digest of :data:`SOURCES`' Python files (once per process): part of every key, so that
    a sweep re-run after avta changed computes its points again instead of serving old rows."""
    from avta.files import package_source_files, sources_digest as digest
    return digest(package_source_files(SOURCES))[:24]


def _workload_id(workload):
    """A builder's name, or a network file's content hash: the YAML and the weights file it
    names (whatever its name), so that changing either runs the points again."""
    from avta.runtime.net.io import source_files
    path = Path(workload)
    if path.suffix not in (".yaml", ".yml"):
        return workload
    digest = hashlib.sha256()
    for file in source_files(path):
        digest.update(str(file.name).encode() + b"\0")
        digest.update(file.read_bytes() if file.is_file() else b"(missing)")
    return f"{path.name}:{digest.hexdigest()[:16]}"


def task(spec, point, *, exact=False):
    """The work of ``point`` of ``spec``, as a picklable dict."""
    return {"index": point.index, "values": dict(point.values), "name": point.config.name,
            "config": point.config.to_dict(), "workload": spec.workload,
            "workload_id": _workload_id(spec.workload), "input_size": spec.input_size,
            "style": spec.style, "seed": spec.seed, "exact": bool(exact),
            "fitted": ",".join(f"{k}={v}" for k, v in point.fitted.items()),
            "version": _version(), "sources": sources_digest()}


def point_key(task):
    """The cache key of a task: a hash of the canonical configuration, the workload (with its
    content), the input size, the floorplan style, the seed, exact or not, avta's version and
    the digest of its sources (:func:`sources_digest`)."""
    ident = {k: task[k] for k in ("config", "workload_id", "input_size", "style", "seed",
                                  "exact", "version", "sources")}
    text = json.dumps(ident, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def area(cfg, style="tiled"):
    """The floorplan model's die area of ``cfg`` and its breakdown, in mm^2: ``sram_mm2`` (the
    SRAM macros), ``sram_<memory>_mm2`` per scratchpad, ``logic_mm2`` (standard cells of GEMM,
    ALU and control, by the gate-equivalent model) and ``other_mm2`` (the rest of the die:
    spacing, halos, core margin, unused room), so that sram + logic + other = area."""
    from avta.floorplan.vta import build_floorplan
    plan = build_floorplan(cfg, style)
    report, fp = plan.report(), plan.floorplan
    row = {"area_mm2": report["die_area_mm2"], "sram_mm2": report["macro_area_mm2"],
           "logic_mm2": report["logic_area_mm2"]}
    row["other_mm2"] = row["area_mm2"] - row["sram_mm2"] - row["logic_mm2"]
    for memory, p in plan.inventory.plans.items():
        row[f"sram_{memory}_mm2"] = fp.um2(p.count * p.master.area) / 1e6
    return row


def evaluate(task):
    """Run ``task``: a row with ``status`` ``ok`` and the figures, or ``error`` and its message.
    Cycles are fsim's cycle model, run timing-only (tsim's count with ``exact``)."""
    from avta.isa.config import Config
    from avta.runtime.net import random_input
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim.targets import load_network, make_device

    from .objectives import event_columns
    start = time.perf_counter()
    row = {"index": task["index"], **task["values"], "key": point_key(task),
           "fitted": task.get("fitted", "")}
    try:
        cfg = Config.from_dict(task["config"], name=task["name"])
        row["shape"] = f"{cfg.batch}x{cfg.block_in}x{cfg.block_out}"
        # Cycles do not depend on the weights: a timing-only point loads none (timing_graph).
        graph = load_network(task["workload"], task["input_size"], task["seed"], cfg,
                             timing_only=not task["exact"])
        x = random_input(graph, seed=task["seed"])
        target = "tsim" if task["exact"] else "fsim"
        # fsim's timing-only mode: a sweep wants cycles, which are the bit-exact run's.
        device = make_device(cfg, target, dram_bytes(cfg, graph), timing_only=not task["exact"])
        run = run_network(device, graph, x)
        total = run.total
        host = [layer for layer in run.layers if layer.on == "host"]
        row.update(status="ok", message="", cycles=total["cycles"],
                   ideal_cycles=total["ideal_cycles"], utilization=total["utilization"],
                   macs=total["macs"], host_layers=len(host),
                   estimated=run.estimated)
        if host:
            row["message"] = f"{len(host)} layer(s) on the host: {host[0].name}: {host[0].why}"
        row.update(area(cfg, task["style"]))
        row.update(event_columns(cfg, run))
    except Exception as error:          # a point's failure is its row, not the sweep's
        row.update(status="error", message=f"{type(error).__name__}: {error}")
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row
