"""The micro-op loop nest of GEMM and ALU (docs/isa.md §3.3), one step per cycle, adders only.

For i_o < iter_out, i_i < iter_in, u in [uop_bgn, uop_end) (u innermost) a step is micro-op
row ``u`` modulo the micro-op depth (``uop_end`` has one bit more than a row index, and a range
past the last row wraps, docs/isa.md §3 "Index wrapping") with offsets ``i_o·f_out + i_i·f_in`` for each of dst, src and wgt. The offsets are kept as
running sums (an outer base plus the inner offset), so no multiplier is needed; they wrap modulo
2^width, which is the scratchpad depth (docs/isa.md §3: indices wrap).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from avta.isa import formats

from .faults import FAULT_LOOP_BITS, FaultName

__all__ = ["LoopGen", "instruction_control"]

_OPERANDS = ("dst", "src", "wgt")


class LoopGen(wiring.Component):
    """Generates the steps of one GEMM or ALU instruction.

    Parameters
    ----------
    uop_bits : int
        ``log2`` of the micro-op buffer depth (U of docs/isa.md §2).
    offset_bits : dict
        Width of the dst, src and wgt offsets (the log2 depth each one indexes).
    faults : set of :data:`avta.hw.core.faults.FAULTS` names (tests only)

    Ports
    -----
    start : In(1)
        Load the loop fields below (stable while the unit runs) and begin.
    uop_bgn, uop_end, iter_out, iter_in : In
    <op>_factor_out, <op>_factor_in : In, for op in dst, src, wgt
    advance : In(1)
        The consumer takes the current step.
    valid : Out(1)
        A step is offered: micro-op ``uop`` with offsets ``dst``, ``src``, ``wgt``.
    last : Out(1)
        The offered step is the instruction's last.
    empty : Out(1)
        With ``start``: the loop is degenerate (``iter_out``, ``iter_in`` or the micro-op range
        empty, docs/isa.md §3.3) and no step will come.
    """

    def __init__(self, *, uop_bits, offset_bits, faults=frozenset()):
        self._uop_bits = uop_bits
        self._faults = faults
        self._offset_bits = dict(offset_bits)
        members = {
            "start": In(1), "advance": In(1), "abort": In(1),
            "uop_bgn": In(uop_bits), "uop_end": In(uop_bits + 1),
            "iter_out": In(formats.ITER_BITS), "iter_in": In(formats.ITER_BITS),
            "valid": Out(1), "last": Out(1), "empty": Out(1), "uop": Out(uop_bits),
        }
        for op in _OPERANDS:
            width = self._offset_bits[op]
            members[f"{op}_factor_out"] = In(width)
            members[f"{op}_factor_in"] = In(width)
            members[op] = Out(width)
        super().__init__(members)
        # The loop state, created here so that the proofs (avta.formal.blocks.loop_gen) can
        # read it and state their induction invariants over it; not ports, so the generated
        # Verilog is unchanged. ``i_in``/``i_out`` are the iteration counters, ``outer[op]``
        # the offset ``i_out·op_factor_out`` the inner offset restarts from.
        self.i_in = Signal(formats.ITER_BITS, name="i_in")
        self.i_out = Signal(formats.ITER_BITS, name="i_out")
        # ``u`` counts the micro-ops as ``uop_end`` does, one bit wider than the row ``uop``.
        self.u = Signal(uop_bits + 1, name="u")
        self.outer = {op: Signal(self._offset_bits[op], name=f"{op}_outer") for op in _OPERANDS}

    def elaborate(self, platform):
        m = Module()
        i_in, i_out, outer, u = self.i_in, self.i_out, self.outer, self.u
        m.d.comb += self.uop.eq(u[:self._uop_bits])

        m.d.comb += self.empty.eq((self.iter_out == 0) | (self.iter_in == 0)
                                  | (self.uop_end <= self.uop_bgn))
        end_uop = u + 1 == self.uop_end
        end_in = i_in + 1 == self.iter_in
        end_out = i_out + 1 == self.iter_out
        if FaultName.LOOP_ITER in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            end_in = (i_in + 1)[:FAULT_LOOP_BITS] == self.iter_in[:FAULT_LOOP_BITS]
            end_out = (i_out + 1)[:FAULT_LOOP_BITS] == self.iter_out[:FAULT_LOOP_BITS]
        m.d.comb += self.last.eq(end_uop & end_in & end_out)

        with m.If(self.start):
            m.d.sync += [self.valid.eq(~self.empty), u.eq(self.uop_bgn),
                         i_in.eq(0), i_out.eq(0)]
            m.d.sync += [getattr(self, op).eq(0) for op in _OPERANDS]
            m.d.sync += [outer[op].eq(0) for op in _OPERANDS]
        with m.Elif(self.abort):
            m.d.sync += self.valid.eq(0)
        with m.Elif(self.valid & self.advance):
            with m.If(~end_uop):
                m.d.sync += u.eq(u + 1)
            with m.Elif(~end_in):
                m.d.sync += [u.eq(self.uop_bgn), i_in.eq(i_in + 1)]
                for op in _OPERANDS:
                    cur = getattr(self, op)
                    m.d.sync += cur.eq(cur + getattr(self, f"{op}_factor_in"))
            with m.Elif(~end_out):
                m.d.sync += [u.eq(self.uop_bgn), i_in.eq(0), i_out.eq(i_out + 1)]
                for op in _OPERANDS:
                    step = getattr(self, f"{op}_factor_out")
                    restart = outer[op]
                    if FaultName.LOOP_OFFSET in self._faults:
                        # Planted bug (avta.hw.core.faults), for testing the verification
                        # tools only.
                        restart = getattr(self, op)
                    m.d.sync += [outer[op].eq(outer[op] + step),
                                 getattr(self, op).eq(restart + step)]
            with m.Else():
                m.d.sync += self.valid.eq(0)
        return m


def instruction_control(m, *, name, start, empty, retired, done, abort, in_flight):
    """The control of a unit that runs one loop-nest instruction (GEMM, ALU).

    After ``start`` the unit runs until ``retired`` (its last step has written ACC), then pulses
    ``done``; an instruction whose loop nest is ``empty`` (a degenerate loop, docs/isa.md §3.3) is a
    no-op that pulses ``done`` one cycle after ``start``. ``abort`` (the run has failed,
    docs/isa.md §3.5: the machine stops at once) stops the loop (the unit connects it to its
    :class:`LoopGen`); the unit pulses ``done`` as soon as no step is ``in_flight``.
    """
    with m.FSM(name=name):
        with m.State("IDLE"):
            with m.If(start):
                with m.If(empty):
                    m.next = "EMPTY"
                with m.Else():
                    m.next = "RUN"
        with m.State("RUN"):
            with m.If(retired):
                m.d.comb += done.eq(1)
                m.next = "IDLE"
            with m.Elif(abort):
                m.next = "DRAIN"
        with m.State("DRAIN"):
            with m.If(~in_flight):
                m.d.comb += done.eq(1)
                m.next = "IDLE"
        with m.State("EMPTY"):
            m.d.comb += done.eq(1)
            m.next = "IDLE"
