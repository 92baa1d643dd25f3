"""``avta fuzz --config C -n N [--seed S] [-o DIR] [--memory random|plain] [--no-shrink]``.

Prints a progress line every 50 programs and each failure as it happens, then the summary
(programs, instructions, events compared, rate, coverage, failures). Exit status 0 when every
program matched, 1 when any differed (their folders are in DIR), 2 for bad arguments.
"""

import sys

from avta.errors import UserError
from avta.isa.config import load_config

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
    summary = fuzz(cfg, args.n, seed=args.seed, out_dir=args.output, memory=args.memory,
                   config_arg=args.config, shrink_failures=not args.no_shrink,
                   log=lambda line: print(f"avta fuzz: {line}", file=sys.stderr, flush=True))
    print(summary.format())
    return 0 if summary.ok else 1
