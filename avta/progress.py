"""Progress of long commands (``avta run``, ``avta fuzz``): a tqdm bar on stderr when stderr is a
terminal, nothing otherwise, so logs and pipes get only the results."""

import sys

from tqdm import tqdm

__all__ = ["progress"]


def progress(total, desc, *, unit="it", stream=None):
    """A tqdm bar of ``total`` steps, disabled unless ``stream`` (stderr) is a terminal; call
    ``.update()`` per step, ``.set_postfix_str()`` to show the current item, ``.write()`` to
    print a line without breaking the bar, and ``.close()`` (or use it as a context manager)."""
    stream = sys.stderr if stream is None else stream
    return tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False,
                disable=not stream.isatty(), dynamic_ncols=True)
