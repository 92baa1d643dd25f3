"""The control every stage shares: tokens, one instruction at a time, errors (docs/isa.md §3).

An instruction at the head of the stage's queue starts when every token counter it pops is
non-zero; it pops them as it starts and the stage's unit executes it (``start`` … ``done``);
when it completes it pushes its counters and leaves the queue. Pushing a full counter is error 7;
a unit that reports a DRAM error makes it error 9, and then nothing is pushed (the instruction did
not complete). ``halt`` stops new starts; an instruction already running finishes.

The compute stage may *detach* an instruction (``detaching``: an ALU instruction, see
hw/core/compute.py): it leaves the queue as it starts and runs on while the stage starts the
next one, if that one may run beside it (``joins``, a GEMM); any other waits. A detached
instruction pushes its tokens (and retires) when it completes, and an instruction started beside
it retires only after it, so tokens are pushed in program order (docs/isa.md §3 rule (c)). One
instruction is detached at a time.

With ``late_detach`` (the load stage, hw/core/tensor_load.py) the unit may also detach the head
instruction while it runs (``release``): it leaves the queue then, and the same rules hold; its
completion may report a DRAM error (``detached_err``, error 9 with its index).
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from avta.isa.enums import ErrorCode

from .faults import FaultName
from .queue import INDEX_BITS, entry_layout

__all__ = ["StageControl"]


class StageControl(wiring.Component):
    """Starts and retires the instructions of one stage.

    Ports
    -----
    insn : In(stream.Signature(entry_layout(cfg)))
        The head of the stage's queue; it is taken (``ready``) when the instruction retires, so
        its fields are stable while the unit runs.
    halt : In(1)
        Start nothing more (the run is ending).
    start : Out(1)
        One-cycle pulse: the unit begins the head instruction.
    done, err : In(1)
        The unit completed it; ``err`` with ``done``: it met a DRAM error (error 9).
    prev_nonzero, next_nonzero : In(1)
        The counters this stage pops with ``pop_prev`` / ``pop_next`` hold a token.
    pop_prev, pop_next, push_prev, push_next : Out(1)
        One-cycle token pulses to the counters.
    prev_overflow, next_overflow : In(1)
        The counter being pushed is full (error 7).
    error : Out(1)
        One-cycle pulse with ``error_code`` and ``error_index``.
    busy : Out(1)
        An instruction is executing (the head, or a detached one).
    executing : Out(1)
        The head instruction's unit is running it (it has not completed; once it has, it may
        still wait for the detached one before it retires).
    detaching, joins : In(1)
        The head instruction runs detached; it may start while a detached one runs.
    detached_done : In(1)
        The detached instruction completed.
    detached, detached_index : Out
        A detached instruction runs, and its index.
    retire, retire_index : Out
        One-cycle pulse: an instruction completed without error, and its index.
    idle_event, stall_event : Out(1)
        This cycle the stage had no instruction / held one but waited on a token
        (IDLE_x, STALL_x counters).

    release, detached_err : In(1)
        With ``late_detach`` only: the running head instruction detaches now (the unit needs
        its fields no more); the detached instruction completed with a DRAM error (with
        ``detached_done``).

    ``faults``: a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).
    """

    def __init__(self, *, cfg, faults=frozenset(), late_detach=False):
        self._faults = faults
        self._late_detach = late_detach
        late = {"release": In(1), "detached_err": In(1)} if late_detach else {}
        super().__init__({
            "insn": In(stream.Signature(entry_layout(cfg))), "halt": In(1),
            "start": Out(1), "done": In(1), "err": In(1),
            "prev_nonzero": In(1), "next_nonzero": In(1),
            "pop_prev": Out(1), "pop_next": Out(1), "push_prev": Out(1), "push_next": Out(1),
            "prev_overflow": In(1), "next_overflow": In(1),
            "error": Out(1), "error_code": Out(ErrorCode), "error_index": Out(INDEX_BITS),
            "busy": Out(1), "executing": Out(1), "idle_event": Out(1), "stall_event": Out(1),
            "detaching": In(1), "joins": In(1), "detached_done": In(1), "detached": Out(1),
            "detached_index": Out(INDEX_BITS),
            "retire": Out(1), "retire_index": Out(INDEX_BITS),
            **late,
        })

    def elaborate(self, platform):
        m = Module()
        head = self.insn.payload.insn.head
        index = self.insn.payload.index
        tokens_ready = ((~head.pop_prev | self.prev_nonzero)
                        & (~head.pop_next | self.next_nonzero))

        # The detached instruction: its pushes and index wait here until it completes.
        detached = self.detached
        late_push_prev, late_push_next = Signal(), Signal()
        late_index = self.detached_index
        done_seen = Signal()        # the head completed while a detached one still ran
        m.d.comb += self.error_index.eq(Mux(self.detached_done, late_index, index))

        def complete(push_prev, push_next, err):
            """Push (or report the DRAM error of) an instruction completing this cycle."""
            with m.If(err):
                m.d.comb += [self.error.eq(1), self.error_code.eq(ErrorCode.DRAM_OUT_OF_RANGE)]
            with m.Else():
                m.d.comb += [self.push_prev.eq(push_prev), self.push_next.eq(push_next),
                             self.retire.eq(1)]
                with m.If((push_prev & self.prev_overflow) | (push_next & self.next_overflow)):
                    m.d.comb += [self.error.eq(1), self.retire.eq(0),
                                 self.error_code.eq(ErrorCode.TOKEN_OVERFLOW)]

        with m.If(self.detached_done):
            m.d.sync += detached.eq(0)
            m.d.comb += self.retire_index.eq(late_index)
            complete(late_push_prev, late_push_next,
                     self.detached_err if self._late_detach else 0)
        with m.Else():
            m.d.comb += self.retire_index.eq(index)

        halt = self.halt
        if FaultName.STAGE_IGNORE_HALT in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            halt = Const(0, 1)
        with m.FSM(name="stage"):
            with m.State("WAIT"):
                m.d.comb += self.busy.eq(detached)
                with m.If(~self.insn.valid):
                    m.d.comb += self.idle_event.eq(~detached)
                with m.Elif(~halt & (~detached | self.joins)):
                    with m.If(tokens_ready):
                        m.d.comb += [self.start.eq(1), self.pop_prev.eq(head.pop_prev),
                                     self.pop_next.eq(head.pop_next)]
                        with m.If(self.detaching):
                            m.d.comb += self.insn.ready.eq(1)
                            m.d.sync += [detached.eq(1), late_index.eq(index),
                                         late_push_prev.eq(head.push_prev),
                                         late_push_next.eq(head.push_next)]
                        with m.Else():
                            m.d.sync += done_seen.eq(0)
                            m.next = "EXEC"
                    with m.Else():
                        m.d.comb += self.stall_event.eq(~detached)
            with m.State("EXEC"):
                m.d.comb += [self.busy.eq(1), self.executing.eq(~done_seen)]
                with m.If((self.done | done_seen) & (~detached | self.err)):
                    m.d.comb += self.insn.ready.eq(1)
                    complete(head.push_prev, head.push_next, self.err)
                    m.next = "WAIT"
                with m.Elif(self.done):
                    m.d.sync += done_seen.eq(1)
                if self._late_detach:
                    # The unit releases the head only while nothing is detached, before it
                    # completes, and completes it (``detached_done``) before the next one.
                    with m.Elif(self.release):
                        m.d.comb += self.insn.ready.eq(1)
                        m.d.sync += [detached.eq(1), late_index.eq(index),
                                     late_push_prev.eq(head.push_prev),
                                     late_push_next.eq(head.push_next)]
                        m.next = "WAIT"
        return m
