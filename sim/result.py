"""Moved to :mod:`avta.runtime.backend` (temporary re-export while the tsim driver moves)."""

from avta.runtime.backend import STATUSES, RunResult

__all__ = ["RunResult", "STATUSES"]
