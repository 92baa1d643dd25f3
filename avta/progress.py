"""Progress of long commands (``avta run``, ``avta fuzz``, ``avta profile``, Verilator builds): a
tqdm bar on stderr when stderr is a terminal, nothing otherwise, so logs and pipes get only the
results."""

import sys
import threading
from contextlib import contextmanager

from tqdm import tqdm

__all__ = ["progress", "working"]


def progress(total, desc, *, unit="it", stream=None):
    """A tqdm bar of ``total`` steps, disabled unless ``stream`` (stderr) is a terminal; call
    ``.update()`` per step, ``.set_postfix_str()`` to show the current item, ``.write()`` to
    print a line without breaking the bar, and ``.close()`` (or use it as a context manager)."""
    stream = sys.stderr if stream is None else stream
    return tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False,
                disable=not stream.isatty(), dynamic_ncols=True)


@contextmanager
def working(desc, *, stream=None, tick=1.0):
    """A bar without a total for one long step whose progress is not known (a Verilator build):
    it shows ``desc``, the elapsed time (a thread refreshes it every ``tick`` seconds) and what
    ``.set_postfix_str()`` says; on a terminal only, like :func:`progress`."""
    bar = progress(None, desc, unit="step", stream=stream)
    if bar.disable:
        with bar:
            yield bar
        return
    stop = threading.Event()

    def refresh():
        while not stop.wait(tick):
            bar.refresh()

    thread = threading.Thread(target=refresh, name="avta-progress", daemon=True)
    thread.start()
    try:
        yield bar
    finally:
        stop.set()
        thread.join()
        bar.close()
