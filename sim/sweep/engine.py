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
import io
import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from avta.errors import UserError
from avta.files import output_files, write_atomic

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


#: What a cached row must hold to stand for its point: these figures, as non-negative numbers.
_CACHED_FIGURES = ("cycles", "ideal_cycles", "utilization", "macs", "host_layers", *AREA_COLUMNS)


def _read_cache(path, key):
    """The cached ``ok`` row of the point ``key`` at ``path``, or None (run it again) when the
    file is missing, half-written, not a row, another point's row (its own ``key`` differs)
    or short of a figure."""
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or row.get("key") != key or row.get("status") != "ok":
        return None
    for name in _CACHED_FIGURES:
        value = row.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            return None
    return row


def _client(workers, scheduler):
    from dask.distributed import Client, LocalCluster
    if scheduler:
        try:
            return Client(scheduler), None
        except (ValueError, TypeError) as error:
            raise UserError(f"--scheduler {scheduler!r}: not a scheduler address ({error}); "
                            f"give one as tcp://HOST:PORT") from None
    # The workers' own warnings and errors (a task cancelled by Ctrl-C, a worker stopped while
    # it waits to finish, a worker killed at shutdown) are not the sweep's news: a failed point
    # is its row, and its error is that row's message.
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                           processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL)
    return Client(cluster), cluster


#: Seconds a sweep waits for a cluster without any worker before it gives up on its points.
WORKER_TIMEOUT = 120.0


def run_sweep(spec, out, *, exact=False, workers=None, scheduler=None, log=None,
              evaluate_fn=evaluate, worker_timeout=WORKER_TIMEOUT, only=None):
    """Run every point of ``spec`` not yet cached in ``out``; a :class:`SweepResult` whose rows
    are in point order. ``log(message)`` hears about progress. ``evaluate_fn`` runs one task
    (:func:`~.point.evaluate`; tests count runs with it). When the cluster has had no worker
    for ``worker_timeout`` seconds, the points not done are ``error`` rows (uncached: a rerun
    runs them). ``only``: the indices of the points to take (default all; a search,
    :mod:`.search`, asks for a few at a time)."""
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
        key = point_key(t)
        hit = _read_cache(cache / f"{key}.json", key)
        if hit is not None:
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
            write_atomic(cache / f"{row['key']}.json", json.dumps(row, sort_keys=True) + "\n")
        log(f"{rate.done()}: point {t['index']} {t['values']}: {row['status']}"
            + (f", {row['cycles']:,} cycles, {row['area_mm2']:.3f} mm^2"
               if row["status"] == "ok" else f": {row.get('message', '')}"))

    if todo and workers == 0 and not scheduler:
        for t in todo:
            done(t, evaluate_fn(t))
    elif todo:
        client, cluster = _client(workers, scheduler)
        try:
            futures = {client.submit(evaluate_fn, t, key=f"avta-sweep-{point_key(t)}",
                                     pure=False): t for t in todo}
            for future, error in _results(client, futures, worker_timeout, log):
                t, row = futures[future], None
                try:
                    row = future.result() if error is None else None
                except Exception as failure:        # e.g. KilledWorker: only this point
                    error = f"{type(failure).__name__}: {failure}"
                if row is None:
                    row = {"index": t["index"], **t["values"], "key": point_key(t),
                           "status": "error", "message": error}
                done(t, row)
        except KeyboardInterrupt:
            # Ctrl-C reaches the workers too; what the cluster says while it falls apart is
            # noise after the one line the command line prints.
            for name in ("distributed", "distributed.nanny", "distributed.core",
                         "distributed.worker", "tornado", "asyncio"):
                logging.getLogger(name).setLevel(logging.CRITICAL + 1)
            raise
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    result.rows = pareto([rows[i] for i in sorted(rows)])
    result.seconds = time.perf_counter() - start
    return result


def _results(client, futures, worker_timeout, log):
    """``(future, None)`` for each finished future, as they finish; once the cluster has had no
    worker for ``worker_timeout`` seconds, ``(future, message)`` for each one not finished
    (cancelled). A cluster that lost its workers would otherwise be waited on forever."""
    from dask.distributed import as_completed
    pending = as_completed(futures)
    alone_since = None
    while not pending.is_empty():
        if pending.has_ready():
            for future in pending.next_batch(block=False):
                yield future, None
            continue
        if client.nthreads():
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
            log(f"the cluster has no worker; waiting up to {worker_timeout:g} s for one")
        elif time.monotonic() - alone_since > worker_timeout:
            left = [f for f in futures if not f.done()]
            client.cancel(left)
            message = (f"the cluster had no worker for {worker_timeout:g} s; the point did not "
                       f"run (a rerun runs it)")
            log(f"giving up: {message.split(';')[0]}; {len(left)} point(s) not run")
            for future in left:
                yield future, message
            return
        time.sleep(0.2)


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
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    with output_files(csv_path, json_path) as (csv_tmp, json_tmp):
        csv_tmp.write_text(table.getvalue(), newline="")
        json_tmp.write_text(json.dumps({"varied": result.varied, "rows": result.rows},
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
