"""The fsim machine: fetch, decode check, three in-order stages and the token counters.

docs/isa.md §3: the load, compute and store stages each run their own instructions strictly in
program order; an instruction starts only when every token counter it pops is non-zero,
decrements them at start and increments the counters it pushes when it completes. fsim runs one
instruction at a time from start to completion, which is one legal interleaving: by default the
runnable stage whose next instruction comes first in the stream; with ``schedule="random"`` a
seeded random runnable stage, so a program that is missing a dependency shows it.

With ``timing_only=True`` the machine computes no data: it runs the same schedule, token
counters, cycle model, counters and activity, and makes the same checks (errors 9 and 10 among
them), but of the data only micro-op LOADs are executed, because the cycle model reads the
micro-ops (the ACC rows an ALU instruction and a GEMM beside it touch, timing.py). Scratchpads
other than the micro-ops and the DRAM are left as they are. The cycles, counters and activity
are those of the bit-exact run of the same program whatever the data (tests/runtime hold them
equal on every operator and network test), at a fraction of the time: what design-space
exploration needs. When nothing but the result is wanted (no trace, no activity, in order) the
stream is scheduled by the compiled loop of :mod:`.compiled` (the same rules, held equal to
this module's scheduler, which stays the reference).

A bit-exact run under the same conditions is run whole by the compiled data interpreter of
:mod:`.compiled_exact` (checks, schedule and data in three numba calls), held equal to the
Python machine byte for byte; a stream it does not run whole (an error, a deadlock, an index
that wraps) goes to the Python machine untouched. ``Fsim.compiled`` picks (``"auto"``: once
loading the compiled code pays in the process).
"""

import functools
import random
import time

import numpy as np

from avta.isa.encoding import INSN_BYTES, codec

from . import compiled, compiled_exact
from .dram import Dram
from .events import STAGE_NAMES, Tracer
from .launch import Launch
from .state import Scratchpads
from .statics import TOKEN_COUNTERS
from .stream import cache_put, fact_of

__all__ = ["Fsim", "SCHEDULES", "TOKEN_COUNTERS"]

SCHEDULES = ("inorder", "random")


class Fsim:
    """The bit-exact behavioral model of one configuration (docs/isa.md is the specification).

    Parameters
    ----------
    cfg : Config
    strict : bool
        Stop with error 10 on a scratchpad index past the end instead of wrapping (docs/isa.md §3).
    schedule : ``"inorder"`` or ``"random"``
        How to pick among stages that can start (results agree on well-formed programs).
    seed : int or None
        Seed of the random schedule.
    trace : callable or None
        Receives one event dict per event (:mod:`avta.sim.fsim.events`); no cost when None.
    trace_mode : str
        ``retire``, or ``arch`` (alias ``equiv``, ``full``) to also see every write.
    timing_only : bool
        Compute no data, only the cycle estimate, counters and activity (module docstring);
        cannot be traced.

    Scratchpads are zero when the object is built and keep their contents across :meth:`run`
    calls; each run starts with empty token counters, zero counters and no error (launch).
    """

    def __init__(self, cfg, *, strict=False, schedule="inorder", seed=None, trace=None,
                 trace_mode="arch", timing_only=False):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
        #: Whether data is computed (False: timing-only mode, the module docstring).
        self.data = not timing_only
        self._cfg = cfg
        self._codec = codec(cfg)
        self._strict = bool(strict)
        self._schedule = schedule
        self._rng = random.Random(seed)
        self._tracer = None
        self.set_trace(trace, trace_mode)
        self._pads = Scratchpads(cfg)
        # Decode's facts, by bytes (sim/fsim/stream.py): each distinct key's (Violation,
        # Static), and each distinct word's instruction when one is asked for.
        self._facts = {}
        self._decoded = {}
        # By (instruction bytes, its micro-ops' words), both pure functions of them: the ACC row
        # bounds of a GEMM or ALU instruction (timing.acc_row_bounds), and in timing-only mode
        # the kernels whose checks passed. Streams repeat the same few kernels many times.
        self._bounds = {}
        self._checked = set()
        self._token_max = (1 << cfg.token_bits) - 1
        # While run_activity runs: a list of (index, stage, start, ready, end, kind) per
        # instruction executed (kind: 0 GEMM, 1 ALU, 2 anything else).
        self._record = None
        #: Whether runs are the compiled ones (timing-only: the compiled scheduler,
        #: :mod:`.compiled`; bit-exact: the compiled data interpreter, :mod:`.compiled_exact`):
        #: True, False (the Python machine, the reference, for comparing them) or ``"auto"``,
        #: once loading them pays (:data:`.compiled.BREAK_EVEN`,
        #: :data:`.compiled_exact.BREAK_EVEN_SECONDS`).
        self.compiled = "auto"

    @property
    def cfg(self):
        return self._cfg

    #: The ``target`` a trace of this simulator names in its header.
    TRACE_TARGET = "fsim"

    def _compiled_ok(self):
        """Whether a run may be the compiled one (:mod:`.compiled` timing-only,
        :mod:`.compiled_exact` bit-exact): only the result is wanted (no trace or activity) and
        the schedule is in order."""
        if self._tracer is not None or self._record is not None \
                or self._schedule != "inorder" or not self.compiled:
            return False
        return self.compiled is True or (compiled_exact.wanted() if self.data
                                         else compiled.wanted())

    def set_trace(self, trace, trace_mode="arch"):
        """Send the events of later runs to ``trace`` (a callable; None: stop tracing)."""
        if trace is not None and not self.data:
            raise ValueError("a timing-only fsim computes no data, so it has no writes to "
                             "trace; trace a bit-exact one (timing_only=False)")
        self._tracer = None if trace is None else Tracer(trace, trace_mode)

    def run_traced(self, writer, mode, dram, insn_addr, insn_count, *, bases=None):
        """:meth:`run` with this run's events of ``mode`` sent to ``writer`` (a
        :class:`~avta.sim.trace.schema.TraceWriter`, or any callable taking an event)."""
        self.set_trace(writer, mode)
        try:
            return self.run(dram, insn_addr, insn_count, bases=bases)
        finally:
            self.set_trace(None)

    def sram(self, name):
        """Read-only view of scratchpad ``name`` (uop, inp, wgt, acc, out); see
        :meth:`Scratchpads.view` for the shapes."""
        return self._pads.view(name)

    # -- one launch -------------------------------------------------------------------------------

    def run(self, dram, insn_addr, insn_count, *, bases=None):
        """Run ``insn_count`` instructions at byte address ``insn_addr`` of ``dram`` (modified in
        place); ``bases`` maps UOP/INP/WGT/ACC/OUT to their *_BASE register. Returns a
        :class:`RunResult`."""
        memory = Dram(dram, bases)
        for name, value in (("insn_addr", insn_addr), ("insn_count", insn_count)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or not 0 <= value < 1 << 32:
                raise ValueError(f"{name} = {value!r}: must be an integer in 0..2^32-1")
        insn_addr, insn_count = int(insn_addr), int(insn_count)
        if insn_addr % INSN_BYTES:
            raise ValueError(f"insn_addr 0x{insn_addr:x} is not {INSN_BYTES}-byte aligned: "
                             f"instructions start on a {INSN_BYTES}-byte boundary")
        if not self.data:
            return Launch(self, memory, insn_addr, insn_count).run()
        launch = Launch(self, memory, insn_addr, insn_count, python_context=_one_blas_thread)
        start = time.process_time()
        result = launch.run()
        if not launch.ran_compiled:
            compiled_exact.ran_in_python(time.process_time() - start)
        return result

    def run_activity(self, dram, insn_addr, insn_count, *, bases=None, bin_cycles=1,
                     max_bins=None):
        """:meth:`run`, with the run's activity by the cycle model: ``(RunResult, Activity)``.

        Each executed instruction gives its stage a ``wait`` interval (from the end of the
        stage's previous instruction until its tokens have been pushed) and a busy interval of
        its estimated cycles (compute: ``gemm``, ``alu`` or ``other`` by opcode); the rest of the
        run is ``idle``. Binned with numpy (:func:`avta.sim.activity.from_intervals`), like
        tsim's (``max_bins`` default :data:`~avta.sim.activity.DEFAULT_MAX_BINS`), and marked
        estimated; ``insn_start`` holds the cycle each instruction started executing.
        """
        from avta.sim.activity import DEFAULT_MAX_BINS, from_intervals
        self._record = []
        try:
            result = self.run(dram, insn_addr, insn_count, bases=bases)
            record = np.array(self._record, dtype=np.int64).reshape(-1, 6)
        finally:
            self._record = None
        index, stage, start, ready, end, kind = record.T
        intervals = {}
        for s, lane in enumerate(STAGE_NAMES):
            mine = stage == s
            intervals[(lane, "wait")] = (start[mine], ready[mine])
            busy = ("gemm", "alu", "other") if lane == "compute" else ("busy",)
            for k, state in enumerate(busy):
                chosen = mine & (kind == k) if lane == "compute" else mine
                intervals[(lane, state)] = (ready[chosen], end[chosen])
        insn_start = np.full(int(insn_count), -1, dtype=np.int64)
        insn_start[index[::-1]] = ready[::-1]     # an instruction's first record counts
        return result, from_intervals(
            result.cycles, intervals, bin_cycles=bin_cycles,
            max_bins=DEFAULT_MAX_BINS if max_bins is None else max_bins, insn_start=insn_start)

    def _fact(self, key):
        """:func:`~.stream.fact_of` key ``key`` (an instruction's bytes less a LOAD's or
        STORE's addresses, :class:`~.stream.Stream`); cached."""
        fact = self._facts.get(key)
        return fact if fact is not None else \
            cache_put(self._facts, key, fact_of(self._cfg, self._codec, key))

    def _instruction(self, word):
        """The instruction of 16 bytes ``word``, decoded; cached (streams repeat a lot)."""
        insn = self._decoded.get(word)
        return insn if insn is not None else \
            cache_put(self._decoded, word, self._codec.decode(word))


@functools.cache
def _blas():
    from threadpoolctl import ThreadpoolController
    return ThreadpoolController()


def _one_blas_thread():
    """A context in which BLAS runs on one thread: fsim's matrix products (GEMM, gemm.py) are
    small, and a second thread only spins, doubling the CPU time (tenfold on a busy machine)."""
    return _blas().limit(limits=1, user_api="blas")
