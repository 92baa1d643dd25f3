"""Errors a person caused, shared by the libraries and the command line.

A :class:`UserError` is bad input (a configuration, an assembly file, an image, an argument): the
command line prints its message as one line without a traceback and exits with status 2
(docs/cli.md). Library errors of that kind derive from it (``ConfigError``, ``AsmError``,
``EncodeError``, ``TraceFormatError``), so the libraries never import the command line and the
command line needs no list of them.
"""

__all__ = ["UserError"]


class UserError(Exception):
    """An error in what a person gave us; the message says what, the value, and what to do."""
