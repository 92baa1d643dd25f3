"""``avta trace-diff A B``: print where two traces diverge; exit 0 only when they match."""

from avta.errors import UserError

from .diff import diff_files
from .schema import TraceFormatError

__all__ = ["cmd_trace_diff"]


def cmd_trace_diff(args):
    try:
        report = diff_files(args.a, args.b)
    except TraceFormatError as error:
        raise UserError(str(error)) from None
    print(report.format())
    return 0 if report.matched else 1
