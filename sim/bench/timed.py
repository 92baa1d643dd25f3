"""Seconds spent in a backend's runs alone: what the simulator benchmarks time (not building
programs on the host, not the numpy references)."""

import time
from contextlib import contextmanager

__all__ = ["run_seconds"]


@contextmanager
def run_seconds(backend):
    """While the block runs, time every ``backend.run`` call; yields a list that receives each
    call's seconds (``sum()`` it afterwards)."""
    spent = []
    inner = backend.run

    def timed_run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    backend.run = timed_run
    try:
        yield spent
    finally:
        del backend.run
