"""``avta sweep SPEC.yaml -o DIR``: which configuration runs a network best for its area.

Runs every point of the spec (:mod:`.spec`) through :func:`~.engine.run_sweep` (or, with
``--search N``, the points a multi-objective search takes, :mod:`.search`), writes
``DIR/results.csv``, ``DIR/results.json``, ``DIR/sweep.svg`` and ``DIR/sweep.png``, and prints
the Pareto front. Exit status 0 when every valid point ran, 1 when a point failed (its row says
why; a rerun tries it again), 2 for bad input.
"""

import sys

from avta.errors import UserError, check_output_dir

__all__ = ["cmd_sweep"]


def cmd_sweep(args):
    from .chart import write_chart
    from .engine import front_table, run_sweep, write_results
    from .spec import load_spec
    spec = load_spec(args.spec)
    if args.workers is not None and args.workers < 0:
        raise UserError(f"--workers {args.workers}: give 0 (no Dask) or more")
    if args.workers is not None and args.scheduler:
        raise UserError("--workers sizes the LocalCluster; with --scheduler the cluster has "
                        "its own workers")
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
                        scheduler=args.scheduler, log=log, seed=args.search_seed)
    else:
        result = run_sweep(spec, out, exact=args.exact, workers=args.workers,
                           scheduler=args.scheduler, log=log)
    files = write_results(result, out)
    where = (f"{spec.workload}" + (f" at {spec.input_size}" if spec.input_size else ""))
    files |= write_chart(result, out, title=f"{where.split('/')[-1]} on {spec.base.name} "
                                            f"variants ({'tsim' if args.exact else 'fsim'})")
    errors = [r for r in result.rows if r["status"] == "error"]
    searched = f" of {len(spec.points())} searched" if args.search is not None else ""
    print(f"{len(result.rows)} points{searched} ({result.ran} run, {result.cached} cached, "
          f"{result.invalid} invalid, {len(errors)} failed) in {result.seconds:.1f} s")
    for r in result.rows:
        if r["status"] != "ok":
            print(f"  point {r['index']} {', '.join(f'{k}={r[k]}' for k in result.varied)}: "
                  f"{r['status']}: {' '.join(r['message'].split())}")
    if result.front:
        print("Pareto front (fewest cycles for the area):")
        for line in front_table(result):
            print(f"  {line}")
    print(f"wrote {', '.join(str(p) for p in files.values())}")
    return 1 if errors else 0
