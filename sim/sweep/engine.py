"""Running a sweep: every point a task on Dask, each result cached, the table and its front.

:func:`run_sweep` expands the spec, records invalid configurations, reads the points already in
``DIR/cache/`` and runs only the others: on a ``LocalCluster`` of ``workers`` processes with one
thread each, on the cluster at ``scheduler``, or (``workers=0``) one by one in this process. Each
finished point is written to ``DIR/cache/<key>.json`` at once (temporary file, then rename), so
an interrupted sweep resumes where it stopped and a worker that dies loses only its point (whose
row says ``error``, and which the next run tries again). Each finished point's line says how
many are done, the points per second and the time left (:class:`~.rate.Rate`).
"""

import csv
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .point import AREA_COLUMNS, evaluate, point_key, task
from .rate import Rate

__all__ = ["run_sweep", "SweepResult", "pareto", "write_results", "front_table"]

_FIRST = ("index",)
_LAST = ("status", "shape", "cycles", "ideal_cycles", "utilization", "macs", "host_layers",
         *AREA_COLUMNS)
_TAIL = ("pareto", "message", "estimated", "cached", "seconds", "key")


@dataclass
class SweepResult:
    rows: list
    varied: list
    ran: int = 0                    # points run this time
    cached: int = 0                 # points read from the cache
    invalid: int = 0
    seconds: float = 0.0
    files: dict = field(default_factory=dict)

    @property
    def front(self):
        return sorted((r for r in self.rows if r.get("pareto")), key=lambda r: r["area_mm2"])


def _whole(row):
    """An ``ok`` row whose every layer ran on the device (a host layer's cycles are not
    counted, so such a point would look faster than it is)."""
    return row.get("status") == "ok" and not row.get("host_layers")


def pareto(rows):
    """Mark ``row["pareto"]`` on every row: true for an ``ok`` row with every layer on the
    device that no other such row dominates (fewer-or-equal cycles and smaller-or-equal area,
    one of them strictly). Rows with host layers are never on the front."""
    ok = [r for r in rows if _whole(r)]
    for r in rows:
        r["pareto"] = _whole(r) and not any(
            q["cycles"] <= r["cycles"] and q["area_mm2"] <= r["area_mm2"]
            and (q["cycles"] < r["cycles"] or q["area_mm2"] < r["area_mm2"]) for q in ok)
    return rows


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_cache(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None                  # missing or half-written: run it again


def _client(workers, scheduler):
    from dask.distributed import Client, LocalCluster
    if scheduler:
        return Client(scheduler), None
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                           processes=True, dashboard_address=":0")
    return Client(cluster), cluster


def run_sweep(spec, out, *, exact=False, workers=None, scheduler=None, log=None,
              evaluate_fn=evaluate, only=None):
    """Run every point of ``spec`` not yet cached in ``out``; a :class:`SweepResult` whose rows
    are in point order. ``log(message)`` hears about progress. ``evaluate_fn`` runs one task
    (:func:`~.point.evaluate`; tests count runs with it). ``only``: the indices of the points
    to take (default all; a search, :mod:`.search`, asks for a few at a time)."""
    log = log or (lambda message: None)
    start = time.perf_counter()
    out = Path(out)
    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    points = spec.points()
    if only is not None:
        points = [p for p in points if p.index in only]
    rows, todo = {}, []
    result = SweepResult(rows=[], varied=list(spec.vary))
    for point in points:
        if point.config is None:
            rows[point.index] = {"index": point.index, **point.values, "status": "invalid",
                                 "message": point.error}
            result.invalid += 1
            continue
        t = task(spec, point, exact=exact)
        hit = _read_cache(cache / f"{point_key(t)}.json")
        if hit is not None and hit.get("status") == "ok":
            rows[point.index] = hit | {"index": point.index, **point.values, "cached": True}
            result.cached += 1
        else:
            todo.append(t)
    log(f"{len(points)} points: {result.cached} cached, {result.invalid} invalid, "
        f"{len(todo)} to run")
    rate = Rate(len(todo))

    def done(t, row):
        row = row | {"cached": False}
        rows[t["index"]] = row
        result.ran += 1
        if row.get("status") == "ok":
            _write_atomic(cache / f"{row['key']}.json", json.dumps(row, sort_keys=True) + "\n")
        log(f"{rate.done()}: point {t['index']} {t['values']}: {row['status']}"
            + (f", {row['cycles']:,} cycles, {row['area_mm2']:.3f} mm^2"
               if row["status"] == "ok" else f": {row.get('message', '')}"))

    if todo and workers == 0 and not scheduler:
        for t in todo:
            done(t, evaluate_fn(t))
    elif todo:
        from dask.distributed import as_completed
        client, cluster = _client(workers, scheduler)
        try:
            futures = {client.submit(evaluate_fn, t, key=f"avta-sweep-{point_key(t)}",
                                     pure=False): t for t in todo}
            for future in as_completed(futures):
                t = futures[future]
                try:
                    row = future.result()
                except Exception as error:          # e.g. KilledWorker: only this point
                    row = {"index": t["index"], **t["values"], "key": point_key(t),
                           "status": "error", "message": f"{type(error).__name__}: {error}"}
                done(t, row)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    result.rows = pareto([rows[i] for i in sorted(rows)])
    result.seconds = time.perf_counter() - start
    return result


def _columns(result):
    seen = list(_FIRST) + list(result.varied) + list(_LAST)
    for row in result.rows:
        for key in row:
            if key not in seen and key not in _TAIL:
                seen.append(key)
    return seen + list(_TAIL)


def write_results(result, out):
    """Write ``results.csv`` and ``results.json`` into ``out``; their paths."""
    out = Path(out)
    columns = _columns(result)
    rows = [{c: row.get(c, "") for c in columns} for row in result.rows]
    csv_path, json_path = out / "results.csv", out / "results.json"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    json_path.write_text(json.dumps({"varied": result.varied, "rows": result.rows},
                                    indent=2) + "\n")
    return {"csv": csv_path, "json": json_path}


def front_table(result):
    """The Pareto front as lines of text, smallest area first."""
    head = [*result.varied, "shape", "cycles", "area_mm2", "utilization", "host_layers"]
    lines = [head]
    for r in result.front:
        lines.append([*(str(r[k]) for k in result.varied), r["shape"], f"{r['cycles']:,}",
                      f"{r['area_mm2']:.3f}", f"{r['utilization']:.1%}", str(r["host_layers"])])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines]
