"""A conv2d tile's requantization passes and the GEMM parts beside them: what each pass costs
(a tail's passes as the planner's estimate and the emitter count them) and how the passes of
one tile spread over the next tile's GEMMs.

The compute stage runs a GEMM beside the one ALU instruction before it (docs/architecture.md,
compute stage), so conv2d splits a tile's GEMM into parts, one pass before each, each part
about as long as its pass (:func:`split_parts`); a GEMM shorter than the passes takes those
that fit beside it, or an even share (:func:`passes_beside`). The emitter
(:mod:`.conv_emit`) decides so, and the estimate's walk (:mod:`.conv_walk`) decides the same
from the same costs (:func:`tail_passes`).
"""

__all__ = ["tail_passes", "tail_weights", "tail_blocks", "passes_beside", "split_parts"]


def tail_passes(tail_steps):
    """The passes of a requantization tail after the accumulator start, as a tuple of
    ``(cycles per ACC row, cycles per output block)``: ``tail_steps`` is a tuple of passes,
    each its cycles a row (1 with an immediate, :func:`~avta.isa.costs.two_operand_step` with
    two operands) or such a pair (a two-operand pass that holds its src row reads it again at
    each block's first step, :func:`~.conv_tail.tail_weights`), or an int, the start and
    ``tail_steps − 1`` one-cycle passes."""
    if isinstance(tail_steps, tuple):
        passes = tuple(w if isinstance(w, tuple) else (w, 0) for w in tail_steps)
        if not all(len(p) == 2 and all(isinstance(c, int) and not isinstance(c, bool)
                                       for c in p) and p[0] >= 1 and p[1] >= 0 for p in passes):
            raise ValueError(f"tail passes {tail_steps!r} must be cycles per row, integers >= 1, "
                             f"or pairs of them and cycles per block, integers >= 0")
        return passes
    if isinstance(tail_steps, bool) or not isinstance(tail_steps, int) or tail_steps < 1:
        raise ValueError(f"tail_steps {tail_steps!r} must be an integer >= 1 (the start and "
                         f"the passes after it) or a tuple of the passes' cycles per row")
    return ((1, 0),) * (tail_steps - 1)


def tail_weights(tail_steps):
    """Cycles per ACC row of each pass of a tail after its start (:func:`tail_passes`)."""
    return tuple(w for w, _ in tail_passes(tail_steps))


def tail_blocks(tail_steps):
    """Cycles per output block of each pass of a tail after its start (:func:`tail_passes`):
    a pass over a tile of ``nco`` blocks of ``rows`` ACC rows each takes
    ``rows · nco · weight + nco · block + ALU_FILL`` cycles, what the emitter counts
    (:func:`~.conv_tail.kernel_cycles`) when it puts passes beside GEMMs."""
    return tuple(b for _, b in tail_passes(tail_steps))


def passes_beside(costs, gemm, tasks_left):
    """How many of the pending passes (``costs``, cycles each, in order) run beside a GEMM of
    ``gemm`` cycles with ``tasks_left`` GEMMs of its tile left, this one included: all of them
    on the last; otherwise those that fit beside it, or an even share of all of them if that is
    more (one pass at least): the passes then spread over the tile's GEMMs instead of outlasting
    the first."""
    n = len(costs)
    if tasks_left <= 1:
        return n
    total = 0
    for c in costs:
        total += c
    taken = cycles = 0
    while taken < n:
        c = cycles + costs[taken]
        if taken and c > gemm and c * tasks_left > total:
            break
        taken, cycles = taken + 1, c
    return taken


def split_parts(n, costs):
    """``[(start, stop), ...]``: ``n`` micro-ops split into one range per pass of ``costs``
    (at most ``n`` of them), each range's share of the micro-ops its pass's share of the cycles
    (rounded, one micro-op at least), so that a GEMM part lasts about as long as the pass beside
    it."""
    parts = len(costs)
    if not 1 <= parts <= n:
        raise ValueError(f"{parts} parts of a GEMM of {n} micro-ops")
    total, cum, bounds = sum(costs), 0, [0]
    for k in range(parts - 1):
        cum += costs[k]
        bounds.append(min(n - (parts - 1 - k), max(bounds[-1] + 1,
                                                     (2 * n * cum + total) // (2 * total))))
    bounds.append(n)
    return list(zip(bounds, bounds[1:]))
