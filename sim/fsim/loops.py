"""The micro-op loop nest shared by GEMM and ALU (docs/isa.md §3.3), as flat index arrays.

Step ``s`` enumerates ``i_o < iter_out``, ``i_i < iter_in``, ``u`` in ``[uop_bgn, uop_end)``
with ``u`` innermost, so arrays indexed by ``s`` are in execution order.
"""

import numpy as np

from avta.isa.enums import ErrorCode

from .errors import MachineError

__all__ = ["LoopNest", "wrap_or_raise", "SEGMENT_STEPS"]


def wrap_or_raise(index, depth, strict, what, first_step=0):
    """Scratchpad indices modulo ``depth`` (docs/isa.md §3), or error 10 in strict mode;
    ``index[0]`` is micro-op step ``first_step``."""
    if strict and index.size and int(index.max()) >= depth:
        bad = int(np.flatnonzero(index >= depth)[0])
        raise MachineError(ErrorCode.SRAM_OUT_OF_RANGE,
                           f"{what} index {int(index[bad])} (at micro-op step "
                           f"{first_step + bad}) is past the end of the {depth}-row scratchpad")
    return index % depth


#: Steps computed at once: long instructions are processed in segments of at most this many
#: steps, in execution order, so fsim's memory stays bounded whatever the loop counts.
SEGMENT_STEPS = 1 << 18


class LoopNest:
    """The steps of one GEMM or ALU instruction and the micro-ops they execute.

    Indices are computed for a range of steps at a time (:meth:`segments`, :meth:`index`), never
    for the whole nest at once: a GEMM of 16383×16383 steps would need gigabytes.
    """

    def __init__(self, insn, pads, codec, *, strict):
        self.insn = insn
        self._count = max(0, insn.uop_end - insn.uop_bgn)
        self.steps = insn.iter_out * insn.iter_in * self._count
        if self.steps == 0:
            return
        depth = pads.depth("uop")
        uop_rows = slice(insn.uop_bgn, insn.uop_end) if insn.uop_end <= depth else \
            wrap_or_raise(np.arange(insn.uop_bgn, insn.uop_end, dtype=np.int64), depth, strict,
                          "micro-op")
        # The kernel's micro-ops (the memory is decoded once between writes), broadcast over
        # the loop nest.
        self._uops = tuple(field[uop_rows] for field in pads.uop_fields(codec))

    def segments(self, limit=None):
        """``(start, stop)`` ranges of steps, in execution order, each at most ``limit`` long
        (default :data:`SEGMENT_STEPS`)."""
        limit = limit or SEGMENT_STEPS
        return [(start, min(start + limit, self.steps)) for start in range(0, self.steps, limit)]

    def index(self, field, factor_out, factor_in, start=0, stop=None):
        """Index of micro-op field ``field`` (0 dst, 1 src, 2 wgt) plus the factors, for steps
        ``start`` to ``stop`` (default: the end)."""
        steps = np.arange(start, self.steps if stop is None else stop, dtype=np.int64)
        outer, u = np.divmod(steps, self._count)
        i_o, i_i = np.divmod(outer, self.insn.iter_in)
        return self._uops[field][u] + i_o * factor_out + i_i * factor_in

    def uop_field(self, field):
        """Field ``field`` (0 dst, 1 src, 2 wgt) of each of the kernel's micro-ops."""
        return self._uops[field]

    def check_index(self, field, factor_out, factor_in, depth, strict, what):
        """In strict mode, error 10 for the first step whose index is ``depth`` or more, found
        before anything changes (factors are never negative, so the largest index is known
        without enumerating the steps)."""
        if not strict:
            return
        largest = int(self._uops[field].max()) + (self.insn.iter_out - 1) * factor_out \
            + (self.insn.iter_in - 1) * factor_in
        if largest < depth:
            return
        for start, stop in self.segments():
            wrap_or_raise(self.index(field, factor_out, factor_in, start, stop), depth, True,
                          what, first_step=start)
