"""How many planted bugs a fuzz campaign finds: ``python -m avta.sim.fuzz.detect``.

For each planted fault of :data:`avta.hw.core.faults.FAULTS`, a campaign of ``-n`` programs runs
on a design with that one fault (nothing saved, nothing shrunk), and the table says how many
programs exposed it, how many of those had no corner at all (what the fuzzer found before it
learned the corners), and the first seed that did. A fault no program exposes is a hole in the
fuzzer: exit status 1.

    python -m avta.sim.fuzz.detect --config tiny -n 1000 [--seed S] [--fault NAME ...]
"""

import argparse
import sys
import time

from avta.hw.core.faults import FAULTS
from avta.isa.config import load_config

from .corners import draw_corners
from .runner import fuzz

__all__ = ["detection_table", "main"]


def detection_table(cfg, count, *, seed=0, faults=None, log=None):
    """Rows ``(fault, unit, corner, found, found_without_corners, first_seed, seconds)``, one per
    fault (all of :data:`FAULTS` by default)."""
    rows = []
    for name in faults or FAULTS:
        start = time.perf_counter()
        summary = fuzz(cfg, count, seed=seed, faults={name}, save=False)
        seeds = [failure.seed for failure in summary.failures]
        plain = sum(1 for s in seeds if not draw_corners(s))
        fault = FAULTS[name]
        rows.append((name, fault.unit, fault.corner, len(seeds), plain,
                     seeds[0] if seeds else None, time.perf_counter() - start))
        if log:
            log(f"{name}: {len(seeds)} of {count} programs")
    return rows


def format_table(rows, count):
    lines = [f"| fault | unit | found in (of {count}) | of them without corners | first seed "
             f"| triggered by |", "|---|---|---|---|---|---|"]
    for name, unit, corner, found, plain, first, _ in rows:
        lines.append(f"| `{name}` | {unit} | {found} | {plain} | {first} | {corner} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m avta.sim.fuzz.detect",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tiny")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    # Plain names, so that the usage and an unknown name's error list them as the user types them.
    parser.add_argument("--fault", action="append", choices=sorted(map(str, FAULTS)))
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    rows = detection_table(cfg, args.n, seed=args.seed, faults=args.fault,
                           log=lambda line: print(line, file=sys.stderr, flush=True))
    print(format_table(rows, args.n))
    return 0 if all(row[3] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
