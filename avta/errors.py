"""Errors a person caused, shared by the libraries and the command line.

A :class:`UserError` is bad input (a configuration, an assembly file, an image, an argument): the
command line prints its message as one line without a traceback and exits with status 2
(docs/cli.md). Library errors of that kind derive from it (``ConfigError``, ``AsmError``,
``EncodeError``, ``TraceFormatError``), so the libraries never import the command line and the
command line needs no list of them.
"""

__all__ = ["UserError", "read_input", "check_output_file", "check_output_dir"]


class UserError(Exception):
    """An error in what a person gave us; the message says what, the value, and what to do."""


def read_input(path, what, *, binary=False):
    """The contents of the file a person named as ``what`` (``"configuration"``, ``"image"``…):
    text (UTF-8) or, with ``binary``, bytes. Anything that makes it unreadable (missing, a
    folder, no permission, not UTF-8 text) is a :class:`UserError` that says which."""
    from pathlib import Path
    path = Path(path)
    if not path.exists():
        raise UserError(f"{what} {str(path)!r} does not exist")
    if path.is_dir():
        raise UserError(f"{what} {str(path)!r} is a folder; give a file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {what} {str(path)!r}: {error.strerror}") from None
    if binary:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{what} {str(path)!r} is not UTF-8 text (byte {error.start} is "
                        f"0x{data[error.start]:02x}); is it the right file?") from None


def check_output_file(path, what):
    """Refuse, before any work is done, an output file that cannot be written: one whose folder
    is missing, or that names an existing folder."""
    from pathlib import Path
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{what} {str(path)!r} is a folder; give a file name")
    if not path.parent.is_dir():
        raise UserError(f"the folder of {what} {str(path)!r} does not exist; create "
                        f"{str(path.parent)!r} first")
    return path


def check_output_dir(path, what):
    """An output folder, created if missing; an existing file in its place is a
    :class:`UserError`."""
    from pathlib import Path
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{what} {str(path)!r} is a file, not a folder; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {what} {str(path)!r}: {error.strerror}") from None
    return path
