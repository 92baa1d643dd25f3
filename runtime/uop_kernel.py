"""Micro-op kernels and the cache of kernels resident in the micro-op scratchpad.

A kernel is what upstream's runtime records between ``VTAUopLoopBegin``/``VTAUopLoopEnd`` and
``VTAUopPush``: a list of micro-ops (``dst``, ``src``, ``wgt`` indices) and
up to two affine loops around them. A GEMM or ALU instruction runs it as the loop nest of docs/isa.md
§3.3: for every outer and inner iteration, every micro-op in order, with each index advanced by
the loop factors. :class:`KernelRecorder` offers upstream's begin/push/end calls; operators
usually build :class:`UopKernel` directly.

:class:`UopCache` decides where each kernel lives in the micro-op scratchpad (as the Intel Labs
runtime does): a kernel whose micro-ops are already resident is reused without a LOAD; otherwise it is
placed after the last one, wrapping to 0 when the scratchpad is full and forgetting the kernels it
overwrites.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.formats import ITER_BITS
from avta.isa.insn import Uop

__all__ = ["Loop", "UopKernel", "KernelRecorder", "UopCache", "Placement", "KernelError",
           "ITER_BITS"]

class KernelError(ValueError):
    """A kernel that cannot run on this configuration (a bad loop, index or size)."""


@dataclass(frozen=True)
class Loop:
    """One affine loop: ``extent`` iterations, each adding the three factors to the indices."""
    extent: int
    dst_factor: int = 0
    src_factor: int = 0
    wgt_factor: int = 0


@dataclass(frozen=True)
class UopKernel:
    """Micro-ops and up to two loops, outermost first.

    ``uops`` are :class:`~avta.isa.insn.Uop` values or ``(dst, src, wgt)`` tuples; ``wgt`` may be
    omitted (ALU kernels).
    """
    uops: tuple
    loops: tuple = ()

    def __post_init__(self):
        uops = tuple(u if isinstance(u, Uop) else Uop(*u) for u in self.uops)
        loops = tuple(lp if isinstance(lp, Loop) else Loop(*lp) for lp in self.loops)
        object.__setattr__(self, "uops", uops)
        object.__setattr__(self, "loops", loops)
        if not uops:
            raise KernelError("a micro-op kernel needs at least one micro-op")
        if len(loops) > 2:
            raise KernelError(f"a kernel has at most two loops (docs/isa.md §3.3); got {len(loops)}")
        for lp in loops:
            if not 1 <= lp.extent < (1 << ITER_BITS):
                raise KernelError(f"loop extent {lp.extent} is outside 1..{(1 << ITER_BITS) - 1} "
                                  f"(the {ITER_BITS}-bit iter fields; 0 would make the "
                                  f"instruction a no-op)")
            if min(lp.dst_factor, lp.src_factor, lp.wgt_factor) < 0:
                raise KernelError(f"loop factors are unsigned; got {lp}")
        for u in uops:
            if min(u.dst_idx, u.src_idx, u.wgt_idx) < 0:
                raise KernelError(f"micro-op indices are unsigned; got {u}")

    def __len__(self):
        return len(self.uops)

    @property
    def steps(self):
        """Micro-op steps one instruction runs: product of the extents times the micro-ops."""
        n = len(self.uops)
        for lp in self.loops:
            n *= lp.extent
        return n

    def padded_loops(self, *, single_inner):
        """``(outer, inner)`` loops, a missing loop being extent 1 with zero factors.

        Upstream's runtime puts a single GEMM loop in the outer slot and a single ALU loop in the
        inner slot; ``single_inner`` chooses which.
        """
        unit = Loop(1)
        if len(self.loops) == 2:
            return self.loops
        if len(self.loops) == 1:
            return (unit, self.loops[0]) if single_inner else (self.loops[0], unit)
        return unit, unit

    def indices(self):
        """``(dst, src, wgt)`` index arrays of every step, in execution order (docs/isa.md §3.3)."""
        outer, inner = self.padded_loops(single_inner=False)
        arr = np.array([(u.dst_idx, u.src_idx, u.wgt_idx) for u in self.uops], dtype=np.int64)
        out = []
        for col, name in enumerate(("dst_factor", "src_factor", "wgt_factor")):
            o = np.arange(outer.extent, dtype=np.int64) * getattr(outer, name)
            i = np.arange(inner.extent, dtype=np.int64) * getattr(inner, name)
            out.append((o[:, None, None] + i[None, :, None] + arr[None, None, :, col]).ravel())
        return tuple(out)

    def max_indices(self):
        """The largest ``(dst, src, wgt)`` index any step reaches."""
        best = [max(getattr(u, f) for u in self.uops) for f in ("dst_idx", "src_idx", "wgt_idx")]
        for lp in self.loops:
            best[0] += (lp.extent - 1) * lp.dst_factor
            best[1] += (lp.extent - 1) * lp.src_factor
            best[2] += (lp.extent - 1) * lp.wgt_factor
        return tuple(best)


class KernelRecorder:
    """Upstream's recording calls (``VTAUopLoopBegin``/``End``, ``VTAUopPush``) for one kernel.

    Loops must be opened before the first micro-op, as upstream requires; :meth:`kernel` returns
    the finished :class:`UopKernel`.
    """

    def __init__(self):
        self._loops = []
        self._uops = []
        self._open = 0

    def loop_begin(self, extent, dst_factor=0, src_factor=0, wgt_factor=0):
        if self._uops:
            raise KernelError("open every loop before the first micro-op (upstream's rule)")
        self._loops.append(Loop(extent, dst_factor, src_factor, wgt_factor))
        self._open += 1

    def loop_end(self):
        if not self._open:
            raise KernelError("loop_end without a matching loop_begin")
        self._open -= 1

    def push(self, dst, src=0, wgt=0):
        self._uops.append(Uop(dst, src, wgt))

    def kernel(self):
        if self._open:
            raise KernelError(f"{self._open} loop(s) still open")
        return UopKernel(tuple(self._uops), tuple(self._loops))


@dataclass(frozen=True)
class Placement:
    """Where a kernel's micro-ops sit: scratchpad rows ``[begin, end)``; ``load`` says whether
    they must be loaded first (they were not resident)."""
    begin: int
    end: int
    load: bool


class UopCache:
    """Resident kernels of a micro-op scratchpad of ``depth`` rows, keyed by micro-op values.

    The micro-op scratchpad is read and written only by the compute stage, which runs in order,
    so overwriting a kernel that an earlier instruction used needs no tokens (docs/isa.md §3).
    """

    def __init__(self, depth, *, start=0):
        if not 0 <= start < depth:
            raise KernelError(f"micro-op start row {start} is outside the {depth}-row scratchpad")
        self._depth = depth
        self._resident = {}      # uops tuple -> begin
        self._next = start

    @property
    def depth(self):
        return self._depth

    def place(self, uops):
        """The :class:`Placement` of micro-op tuple ``uops``, loading it if not resident."""
        uops = tuple(uops)
        n = len(uops)
        if n > self._depth:
            raise KernelError(f"a kernel of {n} micro-ops does not fit the {self._depth}-row "
                              f"micro-op scratchpad; split it into smaller kernels")
        begin = self._resident.get(uops)
        if begin is not None:
            return Placement(begin, begin + n, False)
        if self._next + n > self._depth:
            self._next = 0       # wholesale wrap, as upstream's UopQueue evicts (§5.2)
        begin, end = self._next, self._next + n
        self._resident = {k: b for k, b in self._resident.items()
                          if b + len(k) <= begin or b >= end}
        self._resident[uops] = begin
        self._next = end
        return Placement(begin, end, True)

    def clear(self):
        self._resident.clear()
        self._next = 0
