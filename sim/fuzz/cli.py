"""``avta fuzz --config C -n N [--seed S] [-o DIR] [--memory random|plain] [--no-shrink]``.

Shows a progress bar on a terminal, prints each failure as it happens, then the summary
(programs, instructions, events compared, rate, coverage, failures). Exit status 0 when every
program matched, 1 when any differed (their folders are in DIR), 2 for bad arguments.
"""

import sys

from avta.errors import UserError
from avta.isa.config import load_config
from avta.progress import progress

from .runner import fuzz

__all__ = ["cmd_fuzz"]


def cmd_fuzz(args):
    if args.n < 1:
        raise UserError(f"-n {args.n}: run at least one program")
    if args.seed < 0:
        raise UserError(f"--seed {args.seed} must be non-negative")
    cfg = load_config(args.config)
    print(f"avta fuzz: {args.n} random well-formed programs on {cfg.name} ({cfg.shape_name}, "
          f"AXI {cfg.axi_data_bits}), seeds {args.seed}..{args.seed + args.n - 1}, "
          f"{args.memory} AXI memory", file=sys.stderr)
    with progress(args.n, f"fuzz {cfg.name}", unit="program") as bar:
        def step(summary):
            bar.update()
            bar.set_postfix_str(f"{len(summary.failures)} differ")
        summary = fuzz(cfg, args.n, seed=args.seed, out_dir=args.output, memory=args.memory,
                       config_arg=args.config, shrink_failures=not args.no_shrink, step=step,
                       log=lambda line: bar.write(f"avta fuzz: {line}", file=sys.stderr))
    print(summary.format())
    return 0 if summary.ok else 1
