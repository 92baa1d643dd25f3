"""How fast a sweep goes: points per second and the time left, for its progress lines.

The rate counts only the points run this time (cached ones cost nothing) over the wall time
since the first point was submitted, so on a cluster of W workers it is W points in flight at
once, as it should be for an estimate of the time left.
"""

import time

__all__ = ["Rate"]


class Rate:
    """Points done out of ``total``; :meth:`done` notes one and returns the progress text."""

    def __init__(self, total, *, clock=time.perf_counter):
        if total < 0:
            raise ValueError(f"total = {total}: a sweep has zero points or more")
        self.total = total
        self.finished = 0
        self._clock = clock
        self._start = clock()

    @property
    def per_second(self):
        """Points finished per second of wall time so far (0.0 before the first)."""
        elapsed = self._clock() - self._start
        return self.finished / elapsed if elapsed > 0 else 0.0

    @property
    def seconds_left(self):
        """The time the points not yet finished take at the rate so far (``None`` before the
        first point, when there is no rate)."""
        rate = self.per_second
        return (self.total - self.finished) / rate if rate > 0 else None

    def done(self):
        """Note one finished point; ``"[i/N] 1.23 points/s, 4m05s left"``."""
        self.finished += 1
        left = self.seconds_left
        return (f"[{self.finished}/{self.total}] {self.per_second:.3g} points/s, "
                f"{_duration(left) if left is not None else '?'} left")


def _duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
