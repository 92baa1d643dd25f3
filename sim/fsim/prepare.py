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
  pair.

A check that fails raises :class:`~.errors.MachineError`, and the Python scheduler, the
reference, runs the stream and says what went wrong.
"""

import functools

import numpy as np

from avta.isa.enums import MemType, Opcode
from avta.isa.memories import memory, scratchpad

from . import timing
from .gemm import execute_gemm
from .alu import execute_alu
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
    bounded = np.zeros(len(first), bool)
    bounded[distinct[is_alu | gemm_after_alu]] = True
    bounds = [None] * len(first)
    loads = iter(uop_loads.tolist())
    done = 0
    spans, indices, needed = span[first].tolist(), kernels[first].tolist(), bounded.tolist()
    for k in np.argsort(first, kind="stable").tolist():
        index = indices[k]
        # The micro-op LOADs before this kernel, in stream order.
        while done < spans[k]:
            launch._run_uop_load(next(loads))
            done += 1
        insn = stream.insn(index)
        key = launch._kernel(index, insn)
        launch._check_once(execute_gemm if insn.opcode == Opcode.GEMM else execute_alu, insn,
                           key)
        if needed[k]:
            bounds[k] = launch._acc_bounds(index, insn, key)
    for index in list(loads):
        launch._run_uop_load(index)
    # Each GEMM after an ALU instruction: whether their banks meet, once per distinct pair.
    gemms = np.flatnonzero(gemm_after_alu)
    if len(gemms):
        pairs = np.column_stack([distinct[gemms], distinct[before[gemms]]])
        first_pair, which = unique_rows(pairs)
        pair = pairs[first_pair]
        pad = scratchpad(launch.cfg, "acc")
        meet = np.array([timing.banks_meet(bounds[g], bounds[a], pad)
                         for g, a in pair.tolist()], np.int64)
        meets[kernels[gemms]] = meet[which]
    return meets
