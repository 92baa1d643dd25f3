"""The corners a random program may visit, each drawn per program with its own weight.

A *corner* is a way of building the program that ordinary tiles never reach: a field near its
maximum, a page boundary, a queue or token counter filled up, an illegal instruction. The weights
make every corner occur in a few percent of programs at least, so a 1,000-program campaign visits
each one many times (tests/sim/fuzz checks that the features they cause all appear).
:func:`draw_corners` picks a program's set from its seed; :func:`avta.sim.fuzz.coverage.coverage`
reports what the program actually contains, which is what a campaign is judged by.
"""

import random
from dataclasses import dataclass

__all__ = ["Corner", "CORNERS", "draw_corners"]


@dataclass(frozen=True)
class Corner:
    """``weight``: the probability that a program uses the corner; ``meaning``: what it does."""
    weight: float
    meaning: str


CORNERS = {
    "high addresses": Corner(
        0.3, "the data starts at a random offset of 24 KiB to 1 MiB that is not page-aligned, so "
             "addresses pass 24 KiB and transfers cross 4 KiB pages"),
    "base registers": Corner(
        0.3, "non-zero *_BASE registers, aligned only as docs/isa.md §3 requires (not always a "
             "multiple of the element); instruction addresses count from them"),
    "big tensors": Corner(
        0.25, "input tensors of 8-64 KiB: LOADs of more than 128 rows and strides above 85"),
    "long kernels": Corner(
        0.2, "GEMM/ALU loops of 17-255 iterations and up to 4,096 steps"),
    "zero-trip": Corner(
        0.15, "GEMM/ALU instructions whose iter_out, iter_in or micro-op range is 0"),
    "tall stores": Corner(
        0.25, "STOREs of 5-16 rows (y_size above 4)"),
    "high micro-ops": Corner(
        0.25, "micro-op kernels placed from a random row up to the scratchpad's end"),
    "factor max": Corner(
        0.25, "loop factors at their field maximum"),
    "token bursts": Corner(
        0.25, "several tokens pushed before any is popped, up to the counter's maximum"),
    "full queue": Corner(
        0.06, "more than INSN_QUEUE_DEPTH no-ops queued behind a stage that waits on a long GEMM"),
    "stream at DRAM end": Corner(
        0.15, "the instruction stream ends exactly where DRAM ends"),
    "wrap": Corner(
        0.12, "single-buffered, with LOADs and kernels whose rows wrap past the scratchpad's end "
              "(fsim runs non-strict, as the RTL behaves)"),
    "error": Corner(
        0.12, "one instruction made illegal or out of range, or one token push dropped: both "
              "targets must end with the expected error code and index, or in deadlock"),
}


def draw_corners(seed):
    """The corners of program ``seed``: each with its weight, independently."""
    rng = random.Random(f"avta-fuzz-corners:{seed}")
    return frozenset(name for name, corner in CORNERS.items() if rng.random() < corner.weight)
