"""The control every stage shares: tokens, one instruction at a time, errors (docs/isa.md §3).

An instruction at the head of the stage's queue starts when every token counter it pops is
non-zero; it pops them as it starts and the stage's unit executes it (``start`` … ``done``);
when it completes it pushes its counters and leaves the queue. Pushing a full counter is error 7;
a unit that reports a DRAM error makes it error 9, and then nothing is pushed (the instruction did
not complete). ``halt`` stops new starts; an instruction already running finishes.

The compute stage may *detach* an instruction: an ALU instruction as it starts (``detaching``),
a GEMM once it has issued its last step (``detach_late``, hw/core/compute.py). A detached
instruction leaves the queue and runs on while the stage starts the next one, if that one may
run beside it (``joins``: a GEMM the unit takes, or an ALU instruction when no ALU one is
detached); any other waits until nothing is detached. At most two are detached, an ALU
instruction and a draining GEMM, kept oldest first: each pushes its tokens (and retires) when
it has completed and everything older has retired, and the head retires only after every
detached one, so tokens are pushed in program order (docs/isa.md §3 rule (c)). A GEMM
completion (``late_done``) is the detached GEMM's while one is detached (the unit completes
its instructions in order), else the head's.

The load stage detaches late too (``late_in_done`` False): a LOAD whose rows are all requested
(read-ahead, hw/core/tensor_load.py); the next LOAD starts beside it (``joins``), and the
released one completes on ``late_done``, apart from the head's ``done``, with its DRAM error
(``late_err``, error 9 with its index).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
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
        The head instruction detaches as it starts (an ALU instruction); it may start while
        instructions are detached (a GEMM the unit takes, or an ALU instruction, which starts
        only when no ALU instruction is detached).
    detach_late : In(1)
        The executing head (a GEMM) may detach now: its unit has issued its last step.
    detached_done, late_done : In(1)
        The detached ALU instruction completed / the late-detached instruction completed. With
        ``late_in_done`` (the compute stage) ``late_done`` is the oldest GEMM in flight's
        completion, which ``done`` also shows: the detached GEMM's if one is detached, else
        the head's.
    late_err : In(1)
        With ``late_done``: the late-detached instruction met a DRAM error (error 9).
    detached, detached_index : Out
        A detached ALU instruction has not retired, and its index.
    draining, late_index : Out
        A late-detached instruction (a draining GEMM, a released LOAD) has not retired, and
        its index.
    owner_index : Out
        The instruction the GEMM's ACC writes belong to this cycle: the detached GEMM until it
        completes, else the head.
    retire, retire_index : Out
        One-cycle pulse: an instruction completed without error, and its index.
    idle_event, stall_event : Out(1)
        This cycle the stage had no instruction / held one but waited on a token
        (IDLE_x, STALL_x counters).

    ``faults``: a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).
    """

    def __init__(self, *, cfg, faults=frozenset(), late_in_done=True):
        self._faults = faults
        self._late_in_done = late_in_done
        super().__init__({
            "insn": In(stream.Signature(entry_layout(cfg))), "halt": In(1),
            "start": Out(1), "done": In(1), "err": In(1),
            "prev_nonzero": In(1), "next_nonzero": In(1),
            "pop_prev": Out(1), "pop_next": Out(1), "push_prev": Out(1), "push_next": Out(1),
            "prev_overflow": In(1), "next_overflow": In(1),
            "error": Out(1), "error_code": Out(ErrorCode), "error_index": Out(INDEX_BITS),
            "busy": Out(1), "executing": Out(1), "idle_event": Out(1), "stall_event": Out(1),
            "detaching": In(1), "joins": In(1), "detach_late": In(1),
            "detached_done": In(1), "late_done": In(1), "late_err": In(1), "detached": Out(1),
            "detached_index": Out(INDEX_BITS), "owner_index": Out(INDEX_BITS),
            "draining": Out(1), "late_index": Out(INDEX_BITS),
            "retire": Out(1), "retire_index": Out(INDEX_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        head = self.insn.payload.insn.head
        index = self.insn.payload.index
        tokens_ready = ((~head.pop_prev | self.prev_nonzero)
                        & (~head.pop_next | self.next_nonzero))

        # The detached instructions, oldest first in slots 0 and 1: at most an ALU instruction
        # and a late-detached one (a GEMM, a LOAD). Each waits here, with its pushes, index and
        # DRAM error, until it has completed and everything older has retired.
        slots = [_Slot(k) for k in range(2)]
        late_detached = Cat(e.valid & ~e.alu for e in slots).any()
        alu_detached = Cat(e.valid & e.alu for e in slots).any()
        anything_detached = slots[0].valid       # slot 1 is used only behind slot 0
        # A late completion is the late-detached instruction's if it has not completed yet
        # (once it has, it may wait to retire behind the ALU one while the unit completes the
        # head).
        late = self.late_done & Cat(e.valid & ~e.alu & ~e.done for e in slots).any()
        finishing = [e.valid & (e.done | Mux(e.alu, self.detached_done, late))
                     for e in slots]
        errs = [e.err | (~e.alu & late & self.late_err) for e in slots]
        retiring = Signal()
        m.d.comb += retiring.eq(finishing[0])
        done_seen = Signal()        # the head completed while something detached still ran
        head_done = self.done & ~late if self._late_in_done else self.done
        m.d.comb += [self.owner_index.eq(index), self.late_index.eq(index)]
        for e in slots:
            with m.If(e.valid & ~e.alu):
                m.d.comb += self.late_index.eq(e.index)
            with m.If(e.valid & ~e.alu & ~e.done):
                m.d.comb += self.owner_index.eq(e.index)
            with m.If(e.valid & e.alu):
                m.d.comb += self.detached_index.eq(e.index)
        m.d.comb += [self.detached.eq(alu_detached), self.draining.eq(late_detached)]

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

        # Slot 0 retires when it completes; slot 1 moves up behind it.
        with m.If(retiring):
            m.d.comb += [self.retire_index.eq(slots[0].index), self.error_index.eq(slots[0].index)]
            complete(slots[0].push_prev, slots[0].push_next, errs[0])
        with m.Else():
            m.d.comb += [self.retire_index.eq(index), self.error_index.eq(index)]
        # What the slots hold after this cycle's retirement, before this cycle's detach.
        after = [_Slot.after(m, slots, finishing, errs, retiring, k) for k in range(2)]
        count_after = Mux(after[0]["valid"], Mux(after[1]["valid"], 2, 1), 0)
        # A late-detached instruction is left after this cycle (one may retire in the cycle the
        # next detaches: a LOAD released as the one before it completes).
        late_after = Cat(a["valid"] & ~a["alu"] for a in after).any()

        def detach(alu):
            """The head leaves the queue and waits in the first free slot."""
            m.d.comb += self.insn.ready.eq(1)
            for k, e in enumerate(slots):
                with m.If(count_after == k):
                    m.d.sync += [e.valid.eq(1), e.index.eq(index), e.alu.eq(alu), e.done.eq(0),
                                 e.err.eq(0), e.push_prev.eq(head.push_prev),
                                 e.push_next.eq(head.push_next)]

        for k, e in enumerate(slots):
            m.d.sync += [e.valid.eq(after[k]["valid"]), e.index.eq(after[k]["index"]),
                         e.alu.eq(after[k]["alu"]), e.done.eq(after[k]["done"]),
                         e.err.eq(after[k]["err"]),
                         e.push_prev.eq(after[k]["push_prev"]),
                         e.push_next.eq(after[k]["push_next"])]

        halt = self.halt
        if FaultName.STAGE_IGNORE_HALT in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            halt = Const(0, 1)
        may_start = ~anything_detached | (self.joins & ~(self.detaching & alu_detached))
        with m.FSM(name="stage"):
            with m.State("WAIT"):
                m.d.comb += self.busy.eq(anything_detached)
                with m.If(~self.insn.valid):
                    m.d.comb += self.idle_event.eq(~anything_detached)
                with m.Elif(~halt & may_start):
                    with m.If(tokens_ready):
                        m.d.comb += [self.start.eq(1), self.pop_prev.eq(head.pop_prev),
                                     self.pop_next.eq(head.pop_next)]
                        with m.If(self.detaching):
                            detach(alu=1)
                        with m.Else():
                            m.d.sync += done_seen.eq(0)
                            m.next = "EXEC"
                    with m.Else():
                        m.d.comb += self.stall_event.eq(~anything_detached)
            with m.State("EXEC"):
                m.d.comb += [self.busy.eq(1), self.executing.eq(~done_seen)]
                with m.If((head_done | done_seen) & (~anything_detached | self.err)):
                    m.d.comb += self.insn.ready.eq(1)
                    complete(head.push_prev, head.push_next, self.err)
                    m.next = "WAIT"
                with m.Elif(head_done):
                    m.d.sync += done_seen.eq(1)
                with m.Elif(self.detach_late & ~late_after & ~done_seen):
                    detach(alu=0)
                    m.next = "WAIT"
        return m


class _Slot:
    """A detached instruction's registers (:class:`StageControl`)."""

    def __init__(self, k):
        self.valid = Signal(name=f"slot{k}_valid")
        self.index = Signal(INDEX_BITS, name=f"slot{k}_index")
        self.alu = Signal(name=f"slot{k}_alu")          # an ALU instruction, else late
        self.done = Signal(name=f"slot{k}_done")        # it completed; it waits to retire
        self.err = Signal(name=f"slot{k}_err")          # it completed with a DRAM error
        self.push_prev = Signal(name=f"slot{k}_push_prev")
        self.push_next = Signal(name=f"slot{k}_push_next")

    FIELDS = ("valid", "index", "alu", "done", "err", "push_prev", "push_next")

    @staticmethod
    def after(m, slots, finishing, errs, retiring, k):
        """Slot ``k``'s fields after this cycle's completions and retirement (slot 1 moves to
        slot 0 when slot 0 retires)."""
        values = {}
        for name in _Slot.FIELDS:
            here, behind = getattr(slots[k], name), (getattr(slots[k + 1], name)
                                                     if k + 1 < len(slots) else None)
            sig = Signal.like(here, name=f"after{k}_{name}")
            if name in ("done", "err"):
                now = finishing if name == "done" else errs
                here_v = here | now[k]
                behind_v = (behind | now[k + 1]) if behind is not None else 0
            else:
                here_v, behind_v = here, (behind if behind is not None else 0)
            m.d.comb += sig.eq(Mux(retiring, behind_v, here_v))
            values[name] = sig
        return values
