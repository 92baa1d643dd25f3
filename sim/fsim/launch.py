"""One run of the fsim machine (:class:`Launch`): its token counters, stage queues, counters and
cycle estimate, the Python scheduler (the reference) and the timing-only path to the compiled
one (:mod:`.compiled`). :class:`~.machine.Fsim` makes one per run; the rules are the module
docstring of :mod:`.machine`."""

import collections
import contextlib

import numpy as np

from avta.isa import costs
from avta.isa.asm import format_insn
from avta.isa.encoding import INSN_BYTES
from avta.isa.enums import ErrorCode, MemType, Opcode, Stage
from avta.isa.memories import base_alignment, scratchpad, unaligned_bases
from avta.isa.registers import COUNTER_NAMES, STAGE_CODES
from avta.runtime.backend import RunResult

from . import compiled, compiled_exact, timing
from .alu import execute_alu
from .errors import MachineError
from .events import STAGE_NAMES
from .gemm import execute_gemm
from .loops import LoopNest
from .memops import execute_load, execute_store
from .prepare import prepare
from .statics import ACTIVITY_KIND, DECODE_CACHE_LIMIT, TOKEN_COUNTERS
from .stream import Stream

__all__ = ["Launch"]


class Launch:
    """The state of one run: token counters, queues, counters, the cycle estimate."""

    def __init__(self, sim, dram, insn_addr, insn_count, python_context=contextlib.nullcontext):
        self.sim = sim
        # What the Python scheduler runs in (the machine's BLAS limit in bit-exact runs; a
        # compiled run needs none).
        self.python_context = python_context
        self.cfg = sim._cfg
        self.dram = dram
        self.insn_addr = insn_addr
        self.insn_count = insn_count
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        # Each counter is a queue of the estimated cycles at which its tokens were pushed; its
        # length is the counter's value.
        self.tokens = [collections.deque() for _ in TOKEN_COUNTERS]
        # The cycle at which each stage finished its last instruction: none before the first
        # instruction is fetched.
        self.stage_free = [costs.FETCH_LATENCY] * 3
        self.busy = [0, 0, 0]
        self.busy_until = [0, 0, 0]     # busy cycles are the union of the busy intervals
        # The compute stage's detached ALU instruction (timing.py): when it completes, the ACC
        # rows it may touch, and its activity record (a GEMM beside it takes a share).
        self.alu_free = 0
        # The compute stage's detached GEMM, which drains: when it retires (pushes), and when
        # the last GEMM completed (an ALU instruction behind it starts its steps no earlier
        # than timing.ALU_BEHIND_GEMM cycles before that).
        self.gemm_end = 0
        self.gemm_done = 0
        self.gemm_drain = timing.gemm_drain(self.cfg)
        # When the shared read engine has delivered the beats of every LOAD run so far: at
        # first, of fetch's first ring of instructions (timing.py).
        self.read_free = timing.read_start(self.cfg, insn_count)
        # When the load stage's last LOAD completed (read-ahead: timing.py).
        self.load_end = 0
        self.alu_bounds = None
        self.alu_record = None
        self.stall = [0, 0, 0]
        self.stream = None
        #: Whether the run was the compiled one (:mod:`.compiled`, :mod:`.compiled_exact`).
        self.ran_compiled = False

    @property
    def statics(self):
        """The stream's :class:`~.statics.Static` of each instruction, in order."""
        return self.stream.statics

    @property
    def insns(self):
        """The stream's instructions decoded, in order (none before it is fetched)."""
        return [] if self.stream is None else self.stream.insns

    # -- outcome ----------------------------------------------------------------------------------

    def _result(self, status, *, end=None, code=None, index=None, detail=""):
        cycles = max(self.stage_free) if end is None else end
        counters = self.counters
        for stage, name in enumerate(STAGE_CODES):
            counters[f"STALL_{name}"] = self.stall[stage]
            counters[f"IDLE_{name}"] = max(0, cycles - self.busy[stage] - self.stall[stage])
        return RunResult(status, cycles=cycles, counters=counters,
                         error_code=None if code is None else int(code), error_insn=index,
                         estimated=timing.ESTIMATED, detail=detail)

    def _error(self, code, index, message):
        where = f"instruction {index}"
        if self.stream is not None and index < len(self.stream):
            where += f" ({format_insn(self.stream.insn(index))})"
        return self._result("error", code=code, index=index,
                            detail=f"error {int(code)} ({ErrorCode(code).name}) at {where}: "
                                   f"{message}")

    # -- fetch and decode (docs/isa.md §3.5) -----------------------------------------------------------

    def _fetch(self):
        """Decode the stream; the error RunResult of its first illegal instruction, or None."""
        blob, first_outside = self.dram.fetch(self.insn_addr, self.insn_count, INSN_BYTES)
        self.stream = Stream(self.sim, blob)
        illegal = self.stream.first_violation()
        if illegal is not None:
            index, violation = illegal
            return self._error(violation.code, index, violation.reason)
        if first_outside is not None:
            address = self.insn_addr + first_outside * INSN_BYTES
            return self._error(ErrorCode.DRAM_OUT_OF_RANGE, first_outside,
                               f"fetching it reads bytes 0x{address:x}.."
                               f"0x{address + INSN_BYTES - 1:x}, outside the "
                               f"{self.dram.size}-byte DRAM")
        return None

    # -- scheduling -------------------------------------------------------------------------------

    def run(self):
        unaligned = unaligned_bases(self.cfg, self.dram.bases)
        if unaligned:
            # docs/isa.md §3.5: checked at launch, before any instruction.
            return self._error(ErrorCode.UNALIGNED_BASE, 0, ", ".join(
                f"{key}_BASE 0x{self.dram.bases[key]:x} is not a multiple of "
                f"{base_alignment(self.cfg, key)}" for key in unaligned))
        failed = self._fetch()
        if failed is not None:
            return failed
        if self.sim._compiled_ok():
            result = self._compiled_exact() if self.sim.data else self._compiled()
            if result is not None:
                self.ran_compiled = True
                return result
        elif not self.sim.data:
            compiled.scheduled_in_python(len(self.statics))
        with self.python_context():
            return self._run_python()

    def _run_python(self):
        """The Python scheduler (the reference): one instruction at a time to the end."""
        queues = [collections.deque() for _ in STAGE_NAMES]
        statics = self.statics
        for index, static in enumerate(statics):
            queues[static.stage].append(index)
        # The counters each instruction pops and pushes, by its index (looked up per step).
        self.pops = [static.pops for static in statics]
        # Which instructions read DRAM into a scratchpad (a LOAD of rows).
        reads = [static.opcode == Opcode.LOAD and insn.x_size > 0
                 for static, insn in zip(statics, self.insns)]
        tokens = self.tokens
        pick_random = self.sim._schedule == "random"
        rng = self.sim._rng
        execute, insns = self._execute, self.insns
        while True:
            # The runnable stages' next instructions: a queue's head whose pops all have
            # tokens. In order, the one that comes first in the stream runs.
            ready = [queue[0] for queue in queues
                     if queue and all(tokens[c] for c in statics[queue[0]].pops)]
            if not ready:
                return self._deadlock(queues)
            # In order, the one that comes first in the stream runs; but of two LOADs the one
            # that starts first, as the read engine serves them in the order they reach it
            # (timing.py).
            if pick_random:
                index = rng.choice(ready)
            else:
                index = min(ready)
                if len(ready) > 1 and reads[index]:
                    index = min((i for i in ready if reads[i]), key=self._start_key)
            static = statics[index]
            queues[static.stage].popleft()
            outcome = execute(static, index, insns[index])
            if outcome is not None:
                return outcome

    def _compiled(self):
        """The run by the compiled scheduler (:mod:`.compiled`), or None (nothing changed) when
        the Python scheduler must run it: :mod:`.prepare` refuses the stream (an instruction's
        checks fail, or an index would wrap), or it does not run whole to FINISH."""
        ready = prepare(self, stores_write=False)
        if ready is None:
            return None
        done = compiled.schedule(
            compiled.stream_arrays(self.stream.distinct, self.stream.inverse, ready.meets),
            costs.FETCH_LATENCY, self.sim._token_max, self.gemm_drain,
            timing.read_start(self.cfg, self.insn_count))
        if done is None:
            return None
        # The micro-op LOADs ran on a copy; a timing-only run keeps what they wrote.
        pads = self.sim._pads
        if not np.array_equal(ready.uop, pads.raw("uop")):
            pads.write_rows("uop", slice(None), ready.uop)
        return self._compiled_result(done)

    def _compiled_exact(self):
        """The bit-exact run by the compiled data interpreter (:mod:`.compiled_exact`), or
        None (nothing changed) when the Python machine must run it."""
        done = compiled_exact.run(self)
        return None if done is None else self._compiled_result(done)

    def _compiled_result(self, done):
        """The RunResult of a stream the compiled scheduler ran whole (``done``, its
        :class:`~.compiled.Schedule`): the counters are the sums of its instructions'."""
        counters = self.counters
        repeats = np.bincount(self.stream.inverse, minlength=len(self.stream.distinct))
        for static, times in zip(self.stream.distinct, repeats.tolist()):
            if static.counter is not None:
                counters[static.counter] += static.count * times
            counters["ACC_WR"] += static.acc_writes * times
        self.stall, self.busy = done.stall, done.busy
        return self._result("ok", end=done.cycles)

    def _start_key(self, index):
        """``(cycle, index)``: when ready instruction ``index`` could start (its stage free,
        the tokens it pops pushed), for running the stages' heads in time order."""
        static = self.statics[index]
        start = self.stage_free[static.stage]
        for c in static.pops:
            pushed = self.tokens[c][0]
            if pushed > start:
                start = pushed
        return start, index

    def _read(self, ready, cycles):
        """The end of a LOAD of rows ready at ``ready`` that alone would take ``cycles``: its
        beats follow those of the LOADs that reached the read engine before it."""
        begin = max(ready + timing.LOAD_LEAD, self.read_free)
        self.read_free = end = begin + cycles - timing.LOAD_LEAD
        return end

    def _load_times(self, static, insn, ready, cycles):
        """``(end, free)`` of a load-stage instruction whose tokens are there at ``ready``:
        when it completes (and pushes), and when the stage may start the next one (timing.py:
        read-ahead)."""
        load_end = self.load_end
        issue = ready if static.release else max(ready, load_end)
        done = self._read(issue, cycles) if insn.x_size else issue + cycles
        end = free = max(done, load_end)
        if static.release:
            free = min(end, max(ready + static.release, done - timing.LOAD_LEAD,
                                load_end + timing.RELEASE_AFTER))
        self.load_end = end
        return end, free

    def _empty_pops(self, index):
        return [c for c in self.pops[index] if not self.tokens[c]]

    def _deadlock(self, queues):
        waiting = []
        for stage, queue in enumerate(queues):
            if not queue:
                waiting.append(f"{STAGE_NAMES[stage]} stage: no instructions left")
                continue
            index = queue[0]
            insn = self.insns[index]
            empty = [TOKEN_COUNTERS[c] for c in self._empty_pops(index)]
            counters = " and ".join(empty) + (" counters" if len(empty) > 1 else " counter")
            waiting.append(f"{STAGE_NAMES[stage]} stage: instruction {index} "
                           f"({format_insn(insn)}) waits on the empty {counters}")
        if not any(queues):
            head = "deadlock: the stream ended without FINISH (every instruction ran)"
        else:
            head = "deadlock: no stage can start its next instruction and FINISH has not run"
        return self._result("deadlock", detail=f"{head}; " + "; ".join(waiting))

    # -- one instruction --------------------------------------------------------------------------

    def _execute(self, static, index, insn):
        """Run one instruction from start to completion; a RunResult when the run ends."""
        sim = self.sim
        tracer = sim._tracer
        stage = static.stage
        tokens = self.tokens
        start = self.stage_free[stage]
        ready = start
        for c in static.pops:
            pushed = tokens[c].popleft()
            if pushed > ready:
                ready = pushed
        opcode = static.opcode
        try:
            if opcode <= Opcode.STORE:                  # LOAD, STORE
                if insn.x_size:
                    self._memory(stage, index, insn, tracer)
            elif opcode != Opcode.FINISH:               # GEMM, ALU
                run = execute_gemm if opcode == Opcode.GEMM else execute_alu
                if sim.data:
                    run(self.cfg, insn, sim._pads, sim._codec, strict=sim._strict,
                        trace_rows=tracer and tracer.row_writer(stage, index))
                else:
                    self._check_once(run, insn, self._kernel(index, insn))
        except MachineError as error:
            return self._error(error.code, index, str(error))
        if static.counter is not None:
            self.counters[static.counter] += static.count

        cycles = static.cycles
        if stage == Stage.COMPUTE:
            start, ready, end, free = self._compute_times(index, insn, start, ready, cycles)
        elif stage == Stage.LOAD:
            end, free = self._load_times(static, insn, ready, cycles)
            # A LOAD that starts beside the one released before it (read-ahead) is busy, or
            # waits, only once that one ends: a cycle of the stage is one or the other.
            start = min(max(start, self.busy_until[stage]), max(ready, self.busy_until[stage]))
            if sim._record is not None:
                self._note_activity(index, stage, start, max(ready, start), end, static.kind)
        else:
            end = free = (self._read(ready, cycles) if opcode == Opcode.LOAD and insn.x_size
                          else ready + cycles)
            if sim._record is not None:
                self._note_activity(index, stage, start, ready, end, static.kind)
        self.stall[stage] += max(ready, start) - start
        busy_until = self.busy_until[stage]
        if end > busy_until:        # busy cycles are the union of the busy intervals
            self.busy[stage] += max(0, end - max(ready, busy_until))
            self.busy_until[stage] = end
        self.stage_free[stage] = free
        self.counters["ACC_WR"] += static.acc_writes

        for c in static.pushes:
            if len(tokens[c]) >= sim._token_max:
                return self._error(ErrorCode.TOKEN_OVERFLOW, index,
                                   f"it pushes the {TOKEN_COUNTERS[c]} counter, which is full "
                                   f"({sim._token_max} tokens, TOKEN_BITS "
                                   f"{self.cfg.token_bits})")
            tokens[c].append(end)
        if tracer is not None:
            tracer.retire(stage, index)
        if opcode == Opcode.FINISH:
            return self._result("ok", end=end)
        return None

    def _kernel(self, index, insn):
        """GEMM or ALU instruction ``index`` (``insn``) as its bytes with the words of the
        micro-ops it runs: what its checks and its ACC row bounds are functions of."""
        uop = self.sim._pads.uop
        begin, end = insn.uop_bgn, insn.uop_end
        words = uop[begin:end] if end <= uop.shape[0] else \
            uop[np.arange(begin, end) % uop.shape[0]]
        return self.stream.word_bytes(index), words.tobytes()

    def _check_once(self, run, insn, key):
        """Timing-only: make ``run``'s checks (``data=False``) of a kernel not checked before
        (a check that fails raises and is not remembered); ``key``: its :meth:`_kernel`."""
        if key in self.sim._checked:
            return
        run(self.cfg, insn, self.sim._pads, self.sim._codec, strict=self.sim._strict,
            data=False)
        if len(self.sim._checked) >= DECODE_CACHE_LIMIT:
            self.sim._checked.clear()
        self.sim._checked.add(key)

    def _acc_bounds(self, index, insn, key=None):
        """:func:`timing.acc_row_bounds` of GEMM or ALU instruction ``index`` (``None``: no
        steps); ``key``: its :meth:`_kernel` when known."""
        if not insn.steps:
            return None
        key = key or self._kernel(index, insn)
        bounds = self.sim._bounds.get(key, False)
        if bounds is False:
            nest = LoopNest(insn, self.sim._pads, self.sim._codec, strict=False)
            bounds = timing.acc_row_bounds(insn, nest, self.sim._pads.depth("acc"))
            if len(self.sim._bounds) >= DECODE_CACHE_LIMIT:
                self.sim._bounds.clear()
            self.sim._bounds[key] = bounds
        return bounds

    def _compute_times(self, index, insn, start, ready, cycles):
        """``(waits_from, ready, end, free)`` of a compute instruction that reaches the head at
        ``start`` and whose tokens are there at ``ready``: when it waits on a token from (the
        stage is busy while a detached instruction runs, as on tsim), executes, completes
        (and pushes), and frees the stage (timing.py: an ALU instruction detaches as it
        starts, a GEMM once it has issued its steps; a GEMM runs beside the ALU instruction
        before it, an ALU instruction behind a draining GEMM)."""
        stage = Stage.COMPUTE
        alu_free, gemm_end = self.alu_free, self.gemm_end
        opcode = insn.opcode
        # A draining GEMM's cycles are the GEMM's in the activity (as tsim's activity port
        # counts them): what runs beside its drain is shown from its completion on.
        floor = self.gemm_done
        if opcode == Opcode.ALU:
            ready = max(ready, alu_free)        # one ALU instruction detached at a time
            waits_from = min(max(start, alu_free), ready)
            go = max(ready + timing.ALU_LATCH, self.gemm_done - timing.ALU_BEHIND_GEMM)
            end = max(go + cycles, gemm_end + timing.BESIDE_RETIRE)
            self.alu_free, self.alu_bounds = end, self._acc_bounds(index, insn)
            shown = max(ready, floor)
            self.alu_record = self._note_activity(index, stage, min(max(waits_from, floor),
                                                                    shown),
                                                   shown, end, ACTIVITY_KIND[insn.opcode])
            return waits_from, ready, end, ready + timing.ALU_DISPATCH
        drains = opcode == Opcode.GEMM and insn.steps > 0
        # A GEMM's rows are bounded only when an ALU may run beside it (micro-ops never change
        # during a GEMM or ALU instruction, so after executing it is as good as before).
        alu_running = alu_free > ready and drains and not timing.banks_meet(
            self._acc_bounds(index, insn), self.alu_bounds, scratchpad(self.cfg, "acc"))
        if drains:
            if not alu_running:
                ready = max(ready, alu_free)
            waits_from = min(max(start, alu_free), ready)
        else:                   # anything else waits until nothing is detached
            ready = max(ready, alu_free, gemm_end)
            waits_from = min(max(start, alu_free, gemm_end), ready)
        done = (self._read(ready, cycles) if opcode == Opcode.LOAD and insn.x_size
                else ready + cycles)
        shown = max(ready, floor)
        self._note_activity(index, stage, min(max(waits_from, floor), shown), shown, done,
                            ACTIVITY_KIND.get(opcode, 2))
        if alu_running and self.alu_record is not None:
            # Cycles the ALU runs beside the GEMM count as GEMM (as tsim's activity port).
            alu_index, _, alu_start, alu_ready, alu_end, kind = self.sim._record[self.alu_record]
            self.sim._record[self.alu_record] = (alu_index, stage, alu_start, alu_ready,
                                                 max(alu_ready, min(alu_end, shown)), kind)
            if alu_end > done:
                self._note_activity(alu_index, stage, done, done, alu_end, kind)
        # Retirement in program order: the cycle after the detached ALU (hw/core/
        # stage_control.py: the next slot retires a cycle after the one before it) and the
        # detached GEMM, at the earliest.
        end = max(done, alu_free + timing.BESIDE_RETIRE) if alu_running else max(done, alu_free)
        if not drains:
            return waits_from, ready, end, end
        end = max(end, gemm_end + timing.BESIDE_RETIRE)
        self.gemm_done = done
        # It detaches once its last step is issued and no GEMM is detached (else it retires).
        free = max(done - self.gemm_drain, gemm_end + 1)
        if free >= end:
            return waits_from, ready, end, end
        self.gemm_end = end
        return waits_from, ready, end, free

    def _note_activity(self, index, stage, start, ready, end, kind):
        """Append an activity record (when recording); its position."""
        if self.sim._record is None:
            return None
        self.sim._record.append((index, stage, start, ready, end, kind))
        return len(self.sim._record) - 1

    def _memory(self, stage, index, insn, tracer):
        """Run a LOAD or STORE of ``x_size`` > 0 (its bytes are counted by the caller)."""
        pads, strict = self.sim._pads, self.sim._strict
        if insn.opcode == Opcode.STORE:
            execute_store(self.cfg, insn, pads, self.dram, strict=strict,
                          trace_dram=tracer and tracer.dram_writer(stage, index),
                          data=self.sim.data)
        else:
            # The cycle model reads the micro-ops: their LOADs run in every mode.
            execute_load(self.cfg, insn, pads, self.dram, strict=strict,
                         trace_rows=tracer and tracer.row_writer(stage, index),
                         data=self.sim.data or insn.memory_type == MemType.UOP)
