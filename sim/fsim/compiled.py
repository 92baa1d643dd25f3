"""fsim's scheduler compiled: the timing-only run's schedule of a whole stream in one numba call.

:class:`~.launch.Launch` schedules one instruction at a time in Python, which is most of a
timing-only run. When nothing but the result is wanted (timing-only, no trace, no activity, the
in-order schedule), the schedule is a function of a few numbers per instruction once the
machine's own work on the instructions is done: its checks, the micro-op LOADs (the only data a
timing-only run keeps) and, for each GEMM, whether its ACC rows may meet those of the ALU
instruction before it in the compute stage (:func:`~.timing.banks_meet`). The compute stage runs
its instructions in program order, so that ALU instruction, and the micro-ops both read, are
known before scheduling: the machine does that work first in stream order
(:mod:`.prepare`), then :func:`schedule` runs :func:`_schedule`, the loop of
``Launch.run``, ``_execute`` and ``_compute_times`` over numpy arrays, with the same rules and
the same arithmetic (tests/sim/fsim/test_fsim_compiled.py holds the two equal on random legal
programs and every network layer).

The compiled loop reports whether the stream ran to FINISH with every instruction executed; a
run that deadlocks, overflows a token counter or ends before some instruction ran is left to the
Python scheduler (the reference), which says what went wrong.
"""

import functools

import numpy as np

from avta.isa.enums import Opcode, Stage

from . import timing

__all__ = ["Schedule", "row", "schedule", "stream_arrays", "wanted", "scheduled_in_python",
           "load", "BREAK_EVEN"]

#: What :func:`_schedule` returns as its status.
OK, NOT_RUN = 0, 1

_COMPUTE = int(Stage.COMPUTE)
_LOAD = int(Stage.LOAD)


class Schedule:
    """A finished run's figures: ``cycles``, ``stall`` and ``busy`` per stage, and ``order``
    (int64 array): the instructions' indices in the order they ran (the order the compiled data
    interpreter runs them in, :mod:`.compiled_exact`)."""

    def __init__(self, cycles, stall, busy, order):
        self.cycles, self.stall, self.busy, self.order = cycles, stall, busy, order


def row(stage, opcode, cycles, pops, pushes, reads, release=0):
    """The column of :func:`stream_arrays` of an instruction, but its ``meets``: stage, kind (0
    other, 1 GEMM, 2 ALU, 3 FINISH), cycles, the counters it pops and pushes as bit masks,
    whether it reads DRAM rows (a LOAD of ``x_size`` > 0), and a load-stage LOAD's
    :func:`~avta.isa.costs.load_release_cycles`."""
    return (stage, _KINDS.get(opcode, 0), cycles, sum(1 << c for c in pops),
            sum(1 << c for c in pushes), int(reads), release)


_KINDS = {int(Opcode.GEMM): 1, int(Opcode.ALU): 2, int(Opcode.FINISH): 3}

#: Numbers in a :func:`row`.
ROW_WIDTH = len(row(0, 0, 0, (), (), False, 0))


def stream_arrays(distinct, inverse, meets):
    """The table :func:`_schedule` reads, a column per instruction: its
    :attr:`~.statics.Static.row` (``distinct[inverse[i]]``: the statics of a stream's distinct
    instructions, :class:`~.stream.Stream`) and ``meets`` (1 when a GEMM's ACC rows may meet the
    last ALU instruction's, so it cannot run beside it)."""
    rows = np.array([static.row for static in distinct], np.int64).reshape(-1, ROW_WIDTH)
    table = np.empty((ROW_WIDTH + 1, len(inverse)), np.int64)
    table[:-1] = rows.T[:, inverse]
    table[-1] = meets
    return table


def schedule(table, start, token_max, gemm_drain, read_start):
    """The run of the stream ``table`` (:func:`stream_arrays`) with the stages free at
    ``start`` and the read engine at ``read_start``: a :class:`Schedule`, or None when the
    Python scheduler must run it (the module docstring)."""
    order = np.empty(table.shape[1], np.int64)
    status, cycles, stall, busy = _compiled()(
        table, start, token_max, timing.ALU_DISPATCH, timing.ALU_LATCH, timing.BESIDE_RETIRE,
        timing.LOAD_LEAD, timing.RELEASE_AFTER, gemm_drain, timing.ALU_BEHIND_GEMM, read_start,
        order)
    return Schedule(int(cycles), [int(v) for v in stall], [int(v) for v in busy], order) \
        if status == OK else None


#: Instructions the Python scheduler runs in one process before ``"auto"`` (``Fsim.compiled``)
#: turns to the compiled loop: about what loading it costs (importing numba and reading the
#: cached loop, about 0.45 s of CPU, at about 8 µs an instruction in Python). One ``avta run``
#: of ResNet-18 (about 17,000 instructions) never pays it; a process that schedules more (a
#: sweep worker, the fuzzer, the bench) pays it once it has spent as much in Python, so it never
#: spends more than twice what the better of the two would have.
BREAK_EVEN = 60_000

_python_instructions = 0


def scheduled_in_python(count):
    """Count ``count`` instructions a timing-only run scheduled in Python (:data:`BREAK_EVEN`)."""
    global _python_instructions
    _python_instructions += count


def wanted():
    """Whether ``"auto"`` schedules compiled now: the loop is loaded already, or the Python
    scheduler has run :data:`BREAK_EVEN` instructions in this process."""
    return _compiled.cache_info().currsize > 0 or _python_instructions >= BREAK_EVEN


def load():
    """Load the compiled loop now (a caller that knows it will run many streams)."""
    _compiled()


@functools.cache
def _compiled():
    """:func:`_schedule` compiled by numba (cached on disk beside this file), made on first use:
    importing numba takes a quarter of a second, and bit-exact runs never need it."""
    import numba
    return numba.njit(cache=True, nogil=True)(_schedule)


def _schedule(table, start, token_max, alu_dispatch, alu_latch, beside_retire, load_lead,
              release_after, gemm_drain, alu_behind_gemm, read_start, ran):
    """``(status, cycles, stall[3], busy[3])``: the loop of ``Launch.run`` with
    ``_execute`` and ``_compute_times`` (launch.py; the comments there say why), over arrays;
    ``ran`` receives the indices of the instructions run, in order."""
    n = table.shape[1]
    stage, kind, cost, pops, pushes, reads, release, meets = (
        table[0], table[1], table[2], table[3], table[4], table[5], table[6], table[7])
    # The stage queues: each stage's instruction indices in order, and how many have run.
    order = np.empty((3, n), np.int64)
    length = np.zeros(3, np.int64)
    for i in range(n):
        s = stage[i]
        order[s, length[s]] = i
        length[s] += 1
    head = np.zeros(3, np.int64)
    # Each token counter is a FIFO of the cycles its tokens were pushed at.
    tokens = np.empty((4, n + 1), np.int64)
    first = np.zeros(4, np.int64)
    last = np.zeros(4, np.int64)
    stage_free = np.full(3, start, np.int64)
    busy = np.zeros(3, np.int64)
    busy_until = np.zeros(3, np.int64)
    stall = np.zeros(3, np.int64)
    alu_free = 0
    gemm_end = 0
    gemm_done = 0
    read_free = read_start
    load_end = 0
    ready_set = np.empty(3, np.int64)
    executed = 0
    while True:
        n_ready = 0
        for s in range(3):
            if head[s] < length[s]:
                i = order[s, head[s]]
                runnable = True
                for c in range(4):
                    if pops[i] >> c & 1 and last[c] == first[c]:
                        runnable = False
                if runnable:
                    ready_set[n_ready] = i
                    n_ready += 1
        if n_ready == 0:
            return NOT_RUN, 0, stall, busy
        index = ready_set[0]
        for k in range(1, n_ready):
            if ready_set[k] < index:
                index = ready_set[k]
        if n_ready > 1 and reads[index]:
            # Of LOADs that could run, the one that starts first (then the first in the stream).
            best_start = -1
            for k in range(n_ready):
                i = ready_set[k]
                if not reads[i]:
                    continue
                at = stage_free[stage[i]]
                for c in range(4):
                    if pops[i] >> c & 1 and tokens[c, first[c]] > at:
                        at = tokens[c, first[c]]
                if best_start < 0 or at < best_start or (at == best_start and i < index):
                    best_start, index = at, i
        s = stage[index]
        head[s] += 1
        t0 = stage_free[s]
        ready = t0
        for c in range(4):
            if pops[index] >> c & 1:
                pushed = tokens[c, first[c]]
                first[c] += 1
                if pushed > ready:
                    ready = pushed
        cycles = cost[index]
        alu_running = False
        drains = kind[index] == 1 and cycles > 1      # a GEMM of steps
        if s == _COMPUTE:
            if kind[index] == 2:
                ready = max(ready, alu_free)
                t0 = min(max(t0, alu_free), ready)
            elif drains:
                alu_running = alu_free > ready and meets[index] == 0
                if not alu_running:
                    ready = max(ready, alu_free)
                t0 = min(max(t0, alu_free), ready)
            else:
                ready = max(ready, alu_free, gemm_end)
                t0 = min(max(t0, alu_free, gemm_end), ready)
        # ``Launch._read``: a LOAD's beats follow those of the LOADs before it on the one read
        # engine (only LOADs read, so never an ALU instruction).
        # ``Launch._load_times``: the load stage's read-ahead.
        issue = max(ready, load_end) if s == _LOAD and release[index] == 0 else ready
        if reads[index]:
            begin = max(issue + load_lead, read_free)
            done = read_free = begin + cycles - load_lead
        else:
            done = issue + cycles
        if s == _LOAD:
            end = free = max(done, load_end)
            if release[index]:
                free = min(end, max(ready + release[index], done - load_lead,
                                    load_end + release_after))
            load_end = end
        elif s != _COMPUTE:
            end = free = done
        elif kind[index] == 2:
            end = max(max(ready + alu_latch, gemm_done - alu_behind_gemm) + cycles,
                      gemm_end + beside_retire)
            alu_free = end
            free = ready + alu_dispatch
        else:
            end = free = max(done, alu_free + beside_retire if alu_running else alu_free)
            if drains:
                end = max(end, gemm_end + beside_retire)
                gemm_done = done
                free = max(done - gemm_drain, gemm_end + 1)
                if free >= end:
                    free = end
                else:
                    gemm_end = end
        if s == _LOAD and t0 < busy_until[s]:
            # A LOAD that starts beside the released one: it waits only once that one ends.
            stall[s] += max(0, ready - busy_until[s])
        else:
            stall[s] += ready - t0
        if end > busy_until[s]:
            busy[s] += max(0, end - max(ready, busy_until[s]))
            busy_until[s] = end
        stage_free[s] = free
        for c in range(4):
            if pushes[index] >> c & 1:
                if last[c] - first[c] >= token_max:
                    return NOT_RUN, 0, stall, busy
                tokens[c, last[c]] = end
                last[c] += 1
        ran[executed] = index
        executed += 1
        if kind[index] == 3:
            return (OK if executed == n else NOT_RUN), end, stall, busy
