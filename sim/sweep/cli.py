"""``avta sweep SPEC.yaml -o DIR``: which configuration runs a network best for its area.

Runs every point of the spec (:mod:`.spec`) through :func:`~.engine.run_sweep` (or, with
``--search N``, the points a multi-objective search takes, :mod:`.search`), gives every
point its clock, latency, energy and EDP (:mod:`.objectives`), writes ``DIR/results.csv``,
``DIR/results.json``, ``DIR/sweep.svg`` and ``DIR/sweep.png`` (cycles against area) and the
objectives' charts ``DIR/front_<y>_<x>.{svg,png}``, and prints the Pareto front of
``--objectives``. Exit status 0 when every valid point ran, 1 when a point failed (its row says
why; a rerun tries it again), 2 for bad input.
"""

import math
import sys

from avta.errors import UserError, check_output_dir

__all__ = ["cmd_sweep"]


def cmd_sweep(args):
    from avta.sim.energy import load_table

    from .chart import write_chart
    from .engine import WORKER_TIMEOUT, run_sweep, write_results
    from .objective_chart import write_objective_charts
    from .objectives import DEFAULT_OBJECTIVES, front_lines, parse_objectives
    from .spec import load_spec
    spec = load_spec(args.spec)
    objectives = parse_objectives(args.objectives) if args.objectives else DEFAULT_OBJECTIVES
    table = load_table(args.tech)
    if args.workers is not None and args.workers < 0:
        raise UserError(f"--workers {args.workers}: give 0 (no Dask) or more")
    if args.workers is not None and args.scheduler:
        raise UserError("--workers sizes the LocalCluster; with --scheduler the cluster has "
                        "its own workers")
    timeout = WORKER_TIMEOUT if args.worker_timeout is None else args.worker_timeout
    if not 0 < timeout < math.inf:
        raise UserError(f"--worker-timeout {timeout:g}: give a positive number of seconds")
    out = check_output_dir(args.output, "output folder")
    log = lambda message: print(message, file=sys.stderr, flush=True)   # noqa: E731
    if args.search is not None:
        from .search import search
        if not 1 <= args.search < 1 << 31:
            raise UserError(f"--search {args.search}: give the number of points to take, "
                            f"1 or more")
        if not 0 <= args.search_seed < 1 << 32:
            raise UserError(f"--search-seed {args.search_seed}: give 0..2^32-1")
        result = search(spec, out, args.search, exact=args.exact, workers=args.workers,
                        scheduler=args.scheduler, log=log, seed=args.search_seed,
                        worker_timeout=timeout)
    else:
        result = run_sweep(spec, out, exact=args.exact, workers=args.workers,
                           scheduler=args.scheduler, worker_timeout=timeout, log=log)
    where = (f"{spec.workload}" + (f" at {spec.input_size}" if spec.input_size else ""))
    title = (f"{where.split('/')[-1]} on {spec.base.name} variants "
             f"({'tsim' if args.exact else 'fsim'})")
    # The cycles-area chart keeps its own front; the rows then get the objectives' front.
    files = write_chart(result, out, title=title)
    missing = _time_and_energy(result, spec, table, objectives)
    files |= write_results(result, out)
    files |= write_objective_charts(result.rows, objectives, out, title=title)
    errors = [r for r in result.rows if r["status"] == "error"]
    searched = f" of {len(spec.points())} searched" if args.search is not None else ""
    print(f"{len(result.rows)} points{searched} ({result.ran} run, {result.cached} cached, "
          f"{result.invalid} invalid, {len(errors)} failed) in {result.seconds:.1f} s")
    for r in result.rows:
        if r["status"] != "ok":
            print(f"  point {r['index']} {', '.join(f'{k}={r[k]}' for k in result.varied)}: "
                  f"{r['status']}: {' '.join(r['message'].split())}")
    if missing:
        print(f"  {missing} cached point(s) have no event counts (cached by an older avta): "
              f"no time or energy; delete {out / 'cache'} to run them again")
    if any(r.get("pareto") for r in result.rows):
        print(f"Pareto front of {', '.join(objectives)} (energy table {table.name}):")
        for line in front_lines(result.rows, result.varied, objectives):
            print(f"  {line}")
    print(f"wrote {', '.join(str(p) for p in files.values())}")
    return 1 if errors else 0


def _time_and_energy(result, spec, table, objectives):
    """Clock, latency, energy and EDP on every row, and the front over ``objectives``; the
    number of ok rows without event counts."""
    from .objectives import add_time_and_energy, mark_front
    configs = {p.index: p.config for p in spec.points() if p.config is not None}
    missing = add_time_and_energy(result.rows, configs, table)
    mark_front(result.rows, objectives)
    return missing
