"""Per-stage activity over a run, binned: where the cycles go.

An :class:`Activity` holds, per lane (``load``, ``compute``, ``store``: the three stages) and per
state, the cycles of each bin of the run the stage spent in that state:

* ``load`` and ``store``: ``busy`` (executing an instruction, including the cycle it starts),
  ``wait`` (holding an instruction that waits on a token), ``idle`` (no instruction);
* ``compute``: its busy cycles split into ``gemm``, ``alu`` and ``other`` (LOAD UOP/ACC and
  FINISH, the compute stage's other instructions), then ``wait`` and ``idle``.

Bins are ``bin_cycles`` wide, a power of two, except the last, which holds what is left of the
run; for every lane the states of a bin add up to the bin's cycles and all bins to the run's
``cycles`` (:meth:`Activity.check`). Activity is binned as it is recorded: tsim's harness
(``sim/tsim/activity.h``) adds each cycle to its bin in C++ and merges pairs of bins, doubling
the width, when a run outgrows ``max_bins``; fsim builds the same bins from its cycle model's
instruction intervals with numpy (:func:`from_intervals`), an estimate like its cycle counts.
Either way a run of any length takes at most ``max_bins`` bins per lane: the width is the
smallest ``initial width * 2**k`` with ``ceil(cycles / width) <= max_bins``.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Activity", "LANES", "COLUMNS", "DEFAULT_MAX_BINS", "bin_width", "from_intervals",
           "from_columns"]

#: Each lane's states, busy states first (the compute stage's busy cycles split three ways).
LANES = {
    "load": ("busy", "wait", "idle"),
    "compute": ("gemm", "alu", "other", "wait", "idle"),
    "store": ("busy", "wait", "idle"),
}
#: ``(lane, state)`` of each column of a bin, in the order tsim's recorder writes them.
COLUMNS = tuple((lane, state) for lane, states in LANES.items() for state in states)
#: States that are not busy.
NOT_BUSY = ("wait", "idle")
#: Bins a run is recorded in, at most.
DEFAULT_MAX_BINS = 2048


def _check_power_of_two(name, value, least=1):
    if not isinstance(value, (int, np.integer)) or value < least or value & (value - 1):
        raise ValueError(f"{name} must be a power of two >= {least}, not {value!r}")


def bin_width(cycles, *, bin_cycles=1, max_bins=DEFAULT_MAX_BINS):
    """The width a run of ``cycles`` ends with when recorded from ``bin_cycles``-wide bins with at
    most ``max_bins`` bins: ``bin_cycles`` doubled until the run fits."""
    _check_power_of_two("bin_cycles", bin_cycles)
    _check_power_of_two("max_bins", max_bins, 2)
    width = int(bin_cycles)
    while -(-cycles // width) > max_bins:
        width *= 2
    return width


@dataclass(frozen=True, eq=False)
class Activity:
    """Binned per-stage activity of one run (see the module docstring).

    ``lanes[lane][state]`` is an int64 array of per-bin cycle counts; ``estimated`` is True for
    fsim's (from its cycle model). ``insn_start`` optionally holds the cycle each instruction
    started (-1: never started), for marking layer boundaries.
    """
    bin_cycles: int
    cycles: int
    lanes: dict
    estimated: bool = False
    insn_start: np.ndarray = field(default=None, compare=False)

    @property
    def bins(self):
        """The number of bins."""
        return -(-self.cycles // self.bin_cycles)

    def bin_lengths(self):
        """Cycles of each bin: ``bin_cycles``, the last one what remains of the run."""
        lengths = np.full(self.bins, self.bin_cycles, dtype=np.int64)
        if self.bins:
            lengths[-1] = self.cycles - (self.bins - 1) * self.bin_cycles
        return lengths

    def busy(self, lane):
        """Per-bin busy cycles of ``lane`` (for compute: gemm + alu + other)."""
        states = self.lanes[lane]
        return sum(states[s] for s in LANES[lane] if s not in NOT_BUSY)

    def totals(self):
        """``{lane: {state: cycles over the whole run}}``."""
        return {lane: {state: int(counts.sum()) for state, counts in states.items()}
                for lane, states in self.lanes.items()}

    def check(self):
        """Raise ValueError unless every lane's states add up to each bin's cycles."""
        lengths = self.bin_lengths()
        for lane, states in LANES.items():
            if set(self.lanes[lane]) != set(states):
                raise ValueError(f"lane {lane} has states {sorted(self.lanes[lane])}, "
                                 f"not {sorted(states)}")
            total = sum(self.lanes[lane][s] for s in states)
            if len(total) != len(lengths) or not np.array_equal(total, lengths):
                raise ValueError(f"lane {lane}: the states of the bins add up to "
                                 f"{total.tolist()[:8]}..., not the bins' cycles")
        return self


def from_columns(counts, *, bin_cycles, cycles, estimated=False, insn_start=None):
    """An :class:`Activity` from a ``(bins, len(COLUMNS))`` array of counts."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, len(COLUMNS))
    lanes = {lane: {} for lane in LANES}
    for column, (lane, state) in enumerate(COLUMNS):
        lanes[lane][state] = counts[:, column].copy()
    return Activity(int(bin_cycles), int(cycles), lanes, estimated, insn_start)


def _covered(starts, ends, edges):
    """Cycles of the intervals ``[starts, ends)`` (disjoint or not) before each of ``edges``:
    sum over intervals of ``clip(edge - start, 0, end - start)``, by sorting and cumulative
    sums (no loop over intervals or cycles)."""
    def ramp(points):
        points = np.sort(points)
        before = np.searchsorted(points, edges, side="left")
        sums = np.concatenate(([0], np.cumsum(points)))
        return before * edges - sums[before]
    return ramp(np.asarray(starts, np.int64)) - ramp(np.asarray(ends, np.int64))


def from_intervals(cycles, intervals, *, bin_cycles=1, max_bins=DEFAULT_MAX_BINS,
                   estimated=True, insn_start=None):
    """An :class:`Activity` of a run of ``cycles`` from intervals of activity.

    ``intervals`` maps ``(lane, state)`` for every state but ``idle`` to ``(starts, ends)``:
    arrays of half-open cycle intervals in which the lane was in that state; the intervals of
    one lane must not overlap. They are clipped to the run; ``idle`` is the rest. Vectorized:
    the cost grows with the number of intervals and bins, not with the cycles.
    """
    width = bin_width(cycles, bin_cycles=bin_cycles, max_bins=max_bins)
    bins = -(-cycles // width)
    edges = np.minimum(np.arange(bins + 1, dtype=np.int64) * width, cycles)
    lengths = np.diff(edges)
    lanes = {}
    for lane, states in LANES.items():
        lanes[lane] = {}
        used = np.zeros(bins, dtype=np.int64)
        for state in states:
            if state == "idle":
                continue
            starts, ends = intervals.get((lane, state), ((), ()))
            starts = np.clip(np.asarray(starts, np.int64), 0, cycles)
            ends = np.clip(np.asarray(ends, np.int64), 0, cycles)
            per_bin = np.diff(_covered(starts, ends, edges)) if bins else \
                np.zeros(0, np.int64)
            lanes[lane][state] = per_bin
            used += per_bin
        lanes[lane]["idle"] = lengths - used
    return Activity(width, int(cycles), lanes, estimated, insn_start)
