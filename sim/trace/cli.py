"""``avta trace-diff A B``: print where two traces diverge; exit 0 only when they match.

An unreadable or invalid trace raises :class:`~avta.sim.trace.schema.TraceFormatError`, a
:class:`~avta.errors.UserError`: the command line prints it and exits 2.
"""

from .diff import diff_files

__all__ = ["cmd_trace_diff"]


def cmd_trace_diff(args):
    report = diff_files(args.a, args.b)
    print(report.format())
    return 0 if report.matched else 1
