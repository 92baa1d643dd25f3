"""Timing-only, before the compiled schedule (:mod:`.compiled`): the machine's own work on a
stream's instructions, done for all of them at once where it can be.

- Every LOAD's and STORE's checks (errors 9 and 10): a function of the instruction and the
  DRAM's size and bases, as :func:`~.memops.execute_load` and ``execute_store`` make them
  (``data=False``). Their windows and rows are tested as arrays with the same tests
  (:meth:`.dram.Dram.window_inside`, :func:`~.memops.rows_fit`); an instruction those do not
  pass at once is checked alone, as the Python scheduler checks it (which raises on an error).
- The micro-op LOADs, executed (the cycle model reads the micro-ops), in stream order, which
  is the compute stage's (the only stage that reads or writes the micro-ops).
- Each GEMM and ALU instruction's checks, and whether a GEMM's ACC rows may meet those of the
  compute stage's last ALU instruction before it (:func:`~.timing.banks_meet`). Between two
  micro-op LOADs the micro-ops do not change, so a kernel there is its instruction word: the
  work is done once per distinct word of each such span, then once per distinct (GEMM, ALU)
  pair. A kernel's checks and ACC row bounds are functions of its loop fields and of the
  smallest and largest value of each micro-op field it runs, so a span's kernels are worked out
  together as arrays; one whose micro-ops wrap past the scratchpad, or that fails a test there,
  is checked alone as the Python scheduler checks it.

A check that fails raises :class:`~.errors.MachineError`, and the Python scheduler, the
reference, runs the stream and says what went wrong.
"""

import functools

import numpy as np

from avta.isa.enums import MemType, Opcode
from avta.isa.memories import memory, scratchpad

from . import timing
from .memops import load_rows, rows_fit
from .stream import unique_rows

__all__ = ["prepare", "by_type"]


def prepare(launch):
    """``meets`` (int64, one per instruction) of the stream of ``launch`` (a
    :class:`~.launch.Launch` that has fetched): 1 for a GEMM whose ACC rows may meet the last
    ALU instruction's before it, or any other instruction; 0 for a GEMM that may run beside it.
    Makes every check and micro-op LOAD first (the module docstring)."""
    stream = launch.stream
    opcode = stream.opcode
    moves = np.flatnonzero(opcode <= Opcode.STORE)
    moves = moves[stream.column("memory", "x_size", moves) > 0]
    mtype = stream.column("memory", "memory_type", moves)
    is_uop = (opcode[moves] == Opcode.LOAD) & (mtype == MemType.UOP)
    _check_moves(launch, moves[~is_uop])
    return _kernels(launch, moves[is_uop])


@functools.lru_cache(maxsize=None)
def by_type(cfg):
    """Per memory type number (an array index): its base register's key, element bytes and
    scratchpad depth (0, 0, 0 for a number that is no type)."""
    size = 1 + max(MemType)
    bases, elem, depth = [None] * size, np.zeros(size, np.int64), np.zeros(size, np.int64)
    for mtype in MemType:
        info = memory(cfg, mtype)
        bases[mtype] = info.base
        elem[mtype], depth[mtype] = info.elem_bytes, info.scratchpad.depth
    return bases, elem, depth


def _check_moves(launch, moves):
    """The checks of the LOADs and STOREs of rows ``moves`` (indices), micro-op LOADs aside."""
    if not len(moves):
        return
    stream, dram = launch.stream, launch.dram
    field = functools.partial(stream.column, "memory", where=moves)
    store = stream.opcode[moves] == Opcode.STORE
    # A STORE stores OUT whatever its type field says (execute_store).
    mtype = np.where(store, int(MemType.OUT), field("memory_type"))
    names, elem, depth = by_type(launch.cfg)
    base = np.array([dram.bases[name] if name else 0 for name in names], np.int64)[mtype]
    x, y = field("x_size"), field("y_size")
    ok = (y == 0) | dram.window_inside(base, field("dram_base"), y, x, field("x_stride"),
                                       elem[mtype])
    if launch.sim._strict:
        rows = np.where(store, x * y, load_rows(x, y, field("x_pad_0"), field("x_pad_1"),
                                                field("y_pad_0"), field("y_pad_1")))
        ok &= (rows == 0) | rows_fit(field("sram_base"), rows, depth[mtype])
    for index in moves[~ok].tolist():
        launch._check_move(index)


def _kernels(launch, uop_loads):
    """``meets`` of the stream, after every micro-op LOAD (indices ``uop_loads``) and GEMM and
    ALU check, in stream order."""
    stream = launch.stream
    meets = np.ones(len(stream), np.int64)
    opcode = stream.opcode
    kernels = np.flatnonzero((opcode == Opcode.GEMM) | (opcode == Opcode.ALU))
    if not len(kernels):
        for index in uop_loads.tolist():
            launch._run_uop_load(index)
        return meets
    is_alu = opcode[kernels] == Opcode.ALU
    # The last ALU instruction before each kernel (a position in ``kernels``; -1: none).
    last_alu = np.maximum.accumulate(np.where(is_alu, np.arange(len(kernels)), -1))
    before = np.r_[-1, last_alu[:-1]]
    gemm_after_alu = ~is_alu & (before >= 0)
    # Each kernel's span between micro-op LOADs, and its distinct (span, word).
    span = np.searchsorted(uop_loads, kernels)
    keyed = np.column_stack([span.astype(stream.words.dtype), stream.words[kernels]])
    first, distinct = unique_rows(keyed)
    bounded, lo, hi = _checked_bounds(launch, uop_loads, kernels[first], span[first])
    # Each GEMM after an ALU instruction: whether their banks meet (timing.banks_meet, over the
    # two bounds each kernel has; a GEMM's one is there twice).
    gemms = np.flatnonzero(gemm_after_alu)
    if len(gemms):
        g, a = distinct[gemms], distinct[before[gemms]]
        pad = scratchpad(launch.cfg, "acc")
        meet = ~(bounded[g] & bounded[a])
        for i in range(2):
            for j in range(2):
                meet |= timing.banks_overlap(lo[g, i], hi[g, i], lo[a, j], hi[a, j], pad)
        meets[kernels[gemms]] = meet
    return meets

#: The fields that place a kernel's steps, as both the GEMM and the ALU format name them
#: (docs/isa.md §3.3, §3.4).
_LOOP_FIELDS = ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                "src_factor_out", "src_factor_in")


def _checked_bounds(launch, uop_loads, at, span):
    """Each distinct kernel's :func:`~.timing.acc_row_bounds` (kernels at instruction indices
    ``at``, in spans ``span`` between micro-op LOADs), its checks made and every micro-op LOAD
    run, in stream order: ``(bounded, lo, hi)``, whether it has bounds and their first and
    last rows, two per kernel (a GEMM's one bound twice).

    A kernel's checks and bounds are functions of its loop fields and of the smallest and
    largest value of each micro-op field it runs (factors are never negative), so those of a
    span's kernels are worked out at once, with :func:`numpy.minimum.reduceat` over the
    micro-ops as they are in that span. A kernel whose micro-ops wrap past the scratchpad, or
    that these tests do not pass, is checked alone, as the Python scheduler checks it (which
    raises on an error)."""
    stream, sim = launch.stream, launch.sim
    pads = sim._pads
    alu = stream.opcode[at] == Opcode.ALU

    def field(name):
        return np.where(alu, stream.column("alu", name, at), stream.column("gemm", name, at))
    begin, end, outer, inner, dst_out, dst_in, src_out, src_in = map(field, _LOOP_FIELDS)
    wgt_out, wgt_in = (stream.column("gemm", name, at) for name in ("wgt_factor_out",
                                                                    "wgt_factor_in"))
    reset = ~alu & (stream.column("gemm", "reset", at) != 0)
    runs = (end > begin) & (outer > 0) & (inner > 0)
    whole = runs & (end <= pads.depth("uop"))
    acc, inp, wgt = (pads.depth(name) for name in ("acc", "inp", "wgt"))
    bounded = np.zeros(len(at), bool)
    lo, hi = np.zeros((len(at), 2), np.int64), np.zeros((len(at), 2), np.int64)
    loads = iter(uop_loads.tolist())
    done = 0
    order = np.argsort(span, kind="stable")
    for group in np.split(order, np.flatnonzero(np.diff(span[order])) + 1):
        while done < span[group[0]]:
            launch._run_uop_load(next(loads))
            done += 1
        alone = group[runs[group] & ~whole[group]].tolist()
        fast = group[whole[group]]
        if len(fast):
            ranges = np.column_stack([begin[fast], end[fast]]).ravel()

            def extent(values, f_out, f_in):
                # reduceat reads [ranges[2k], ranges[2k + 1]); a range may end at the depth.
                values = np.append(values, 0)
                return (np.minimum.reduceat(values, ranges)[::2],
                        np.maximum.reduceat(values, ranges)[::2] + (outer[fast] - 1) *
                        f_out[fast] + (inner[fast] - 1) * f_in[fast])
            dst, src, wgt_uop = pads.uop_fields(sim._codec)
            dst_lo, dst_hi = extent(dst, dst_out, dst_in)
            src_lo, src_hi = extent(src, src_out, src_in)
            wgt_hi = extent(wgt_uop, wgt_out, wgt_in)[1]
            is_alu = alu[fast]
            # gemm.py and alu.py: the indices each checks in strict mode.
            ok = (dst_hi < acc) & np.where(is_alu, src_hi < acc,
                                           reset[fast] | ((src_hi < inp) & (wgt_hi < wgt)))
            if not sim._strict:
                ok[:] = True
            alone += fast[~ok].tolist()
            # timing.acc_row_bounds: a GEMM's dst rows; an ALU instruction's dst and src rows
            # when it has one micro-op; none past the end of ACC.
            one = end[fast] - begin[fast] == 1
            bounded[fast] = ok & (dst_hi < acc) & np.where(is_alu, one & (src_hi < acc), True)
            lo[fast, 0], hi[fast, 0] = dst_lo, dst_hi
            lo[fast, 1] = np.where(is_alu, src_lo, dst_lo)
            hi[fast, 1] = np.where(is_alu, src_hi, dst_hi)
        for k in alone:
            bounds = launch._check_kernel(int(at[k]))
            bounded[k] = bounds is not None
            if bounds is not None:
                (lo[k, 0], hi[k, 0]), (lo[k, 1], hi[k, 1]) = bounds[0], bounds[-1]
    for index in loads:
        launch._run_uop_load(index)
    return bounded, lo, hi
