"""How an execution-time error (docs/isa.md §3.5, codes 7, 9 and 10) stops fsim.

The executors raise :class:`MachineError`; the machine latches its code and the index of the
instruction that raised it and ends the run with status ``error``.
"""

from avta.isa.enums import ErrorCode

__all__ = ["MachineError"]


class MachineError(Exception):
    """An error the machine latches: ``code`` is an :class:`ErrorCode`, the message says why."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = ErrorCode(code)
