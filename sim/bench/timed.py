"""Seconds spent in a backend's runs alone: what the simulator benchmarks time (not building
programs on the host, not the numpy references)."""

import time
from contextlib import contextmanager

__all__ = ["run_seconds"]


@contextmanager
def run_seconds(backend, clock=time.perf_counter):
    """While the block runs, time every ``backend.run`` call by ``clock`` (wall time; CPU time
    with ``time.process_time``); yields a list that receives each call's seconds (``sum()``
    it afterwards)."""
    spent = []
    inner = backend.run

    def timed_run(*args, **kwargs):
        start = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            spent.append(clock() - start)

    backend.run = timed_run
    try:
        yield spent
    finally:
        del backend.run
