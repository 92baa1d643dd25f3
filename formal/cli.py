"""``avta formal``: the blocks' properties proven with SymbiYosys (docs/formal.md, docs/cli.md)."""

import json
import math
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from avta.errors import UserError, check_output_dir, check_output_file
from avta.files import write_atomic
from avta.hw.core.faults import ALL_FAULTS, check_faults
from avta.isa.config import load_config
from avta.progress import progress

from .blocks import BLOCKS, block_checks
from .replay import write_replay_test
from .runner import run_check

__all__ = ["cmd_formal", "run_formal", "format_table"]


def _status_text(result):
    if result.status == "bounded":
        return f"bounded to depth {result.depth}"
    return {"proven": "proven", "failed": "FAILED", "timeout": "TIMEOUT"}[result.status]


def format_table(results):
    """The results as an aligned text table (block, property, status, covers, wall-clock
    seconds, CPU seconds of the tools)."""
    rows = [("block", "property", "status", "covers", "seconds", "CPU s")]
    rows += [(r.block, r.name, _status_text(r), f"{r.covers_reached}/{r.covers_total}",
              f"{r.seconds:.1f}", f"{r.cpu_seconds:.1f}") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i < 3 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    return "\n".join(lines)


def _check_blocks(names):
    """``names`` (``BLOCK`` or ``BLOCK.PROPERTY``) without repeats, refusing unknown blocks."""
    unknown = [n for n in names if n.partition(".")[0] not in BLOCKS]
    if unknown:
        raise UserError(f"unknown block(s) {', '.join(unknown)}; known blocks: "
                        f"{', '.join(BLOCKS)}")
    return list(dict.fromkeys(names))


def _select_checks(names, cfg, faults):
    """The checks ``names`` select: every property of a ``BLOCK``, one of ``BLOCK.PROPERTY``;
    in the order given, each once."""
    checks = {}
    for name in names:
        block, _, prop = name.partition(".")
        found = [c for c in block_checks(block, cfg, faults) if not prop or c.name == prop]
        if not found:
            known = ", ".join(f"{block}.{c.name}" for c in block_checks(block, cfg, faults))
            raise UserError(f"block {block!r} has no property {prop!r}; it has: {known}")
        checks.update((c.key, c) for c in found)
    return list(checks.values())


def _check_plant(names):
    try:
        return check_faults(names)
    except ValueError:
        unknown = sorted(set(names) - set(ALL_FAULTS))
        raise UserError(f"unknown fault(s) {', '.join(unknown)}; known faults (avta formal "
                        f"--list-faults): {', '.join(ALL_FAULTS)}") from None


def run_formal(cfg, *, blocks=None, faults=(), jobs=1, output, solver=None, timeout=None,
               log=None):
    """Run every check of ``blocks`` (all by default; a name ``BLOCK.PROPERTY`` selects one
    property) for ``cfg``; the :class:`Result` list in table order. Each check runs for at
    most ``timeout`` seconds of wall-clock time, or by default for its own budget of CPU
    seconds (:attr:`Check.budget`, :func:`~avta.formal.runner.run_check`). A failed check
    leaves its counterexample in ``output/counterexamples/`` as a VCD and a replay test
    (:mod:`avta.formal.replay`)."""
    blocks = _check_blocks(blocks or list(BLOCKS))
    faults = _check_plant(faults)
    output = Path(output)
    checks = _select_checks(blocks, cfg, faults)
    results = {}
    with progress(len(checks), "formal", unit="check") as bar, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_check, c, output / "work" / c.block / c.name, solver=solver,
                               timeout=timeout): c for c in checks}
        for future in as_completed(futures):
            check = futures[future]
            result = results[check.key] = future.result()
            bar.update()
            bar.set_postfix_str(check.key)
            if log is not None:
                log(f"{check.key}: {_status_text(result)} ({result.seconds:.1f} s, "
                    f"{result.cpu_seconds:.1f} CPU s)")
    ordered = [results[c.key] for c in checks]
    for check, result in zip(checks, ordered):
        if result.vcd:
            _save_counterexample(result, check, cfg, faults, output / "counterexamples")
    return ordered


def _save_counterexample(result, check, cfg, faults, folder):
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{check.block}-{check.name}"
    vcd = folder / f"{stem}.vcd"
    shutil.copyfile(result.vcd, vcd)
    result.vcd = str(vcd)
    result.replay = str(write_replay_test(result, check, cfg, faults,
                                          folder / f"test_{stem.replace('-', '_')}.py"))


def cmd_formal(args):
    if args.list_faults:
        print("\n".join(ALL_FAULTS))
        return 0
    cfg = load_config(args.config)
    if args.jobs < 1:
        raise UserError(f"-j {args.jobs}: give at least one job")
    if args.timeout is not None and not 0 < args.timeout < math.inf:
        raise UserError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    blocks = _check_blocks(args.block or list(BLOCKS))
    faults = _check_plant(args.plant or ())
    output = check_output_dir(args.output or Path("build") / "formal" / cfg.name, "output")
    if args.json:
        check_output_file(args.json, "--json file")
    results = run_formal(cfg, blocks=blocks, faults=faults, jobs=args.jobs, output=output,
                         solver=args.solver, timeout=args.timeout)
    print(f"configuration {cfg.name}" + (f", planted: {', '.join(sorted(faults))}"
                                         if faults else ""))
    print(format_table(results))
    for result in results:
        if not result.ok:
            print(f"\n{result.block}.{result.name}: {result.status}: {result.message}")
            if result.vcd:
                print(f"  counterexample: {result.vcd}\n  replay test:    {result.replay}")
    if args.json:
        report = {"config": cfg.name, "faults": sorted(faults), "solver": args.solver or "per check",
                  "properties": [r.to_dict() for r in results]}
        write_atomic(args.json, json.dumps(report, indent=2) + "\n")
    failed = sum(not r.ok for r in results)
    print(f"\n{len(results) - failed} of {len(results)} properties hold"
          + (f"; {failed} failed" if failed else ""), file=sys.stderr)
    return 1 if failed else 0
