"""Instruction queues between fetch and the three stages (docs/architecture.md, Hardware).

An entry is the raw instruction plus its index in the stream (for the error registers); the
stages view it through the :mod:`avta.isa.layout` layouts.
"""

from amaranth.hdl import Module
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from avta.isa.layout import layouts

from .faults import FaultName

__all__ = ["INDEX_BITS", "entry_layout", "InsnQueue"]

#: Instruction indices are 32 bits, like INSN_COUNT and ERR_INSN (docs/architecture.md registers).
INDEX_BITS = 32


def entry_layout(cfg):
    """A queued instruction: ``insn`` (the union of ISA formats) and ``index``."""
    return data.StructLayout({"insn": layouts(cfg).insn, "index": INDEX_BITS})


class InsnQueue(wiring.Component):
    """A first-word-fall-through queue of :func:`entry_layout` entries: ``depth − 1`` in block
    RAM and the head in a register.

    The head is read by the stage every cycle (its token flags, and the unit's fields in the
    cycle it starts); a block RAM's output is slow on an FPGA (5.6 ns clock-to-out on an ECP5,
    docs/architecture.md, timing on an FPGA), so the head comes from flip-flops. An entry
    written into an empty queue reaches the head a cycle later than from the block RAM alone;
    entries behind the head follow it with no gap.

    ``faults``: a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).

    Ports
    -----
    w : In(stream.Signature(entry_layout(cfg)))
        Entries from fetch, in program order.
    r : Out(stream.Signature(entry_layout(cfg)))
        The oldest entry; a stage keeps it (``ready`` low) while it executes, so its fields stay
        stable until the stage retires it.
    """

    def __init__(self, *, cfg, depth, faults=frozenset()):
        if not isinstance(depth, int) or depth < 2:
            raise ValueError(f"queue depth must be an integer >= 2, not {depth!r}")
        self._cfg = cfg
        self._faults = faults
        self._depth = depth
        layout = entry_layout(cfg)
        super().__init__({"w": In(stream.Signature(layout)), "r": Out(stream.Signature(layout))})
        # Created here so that the proofs (avta.formal.blocks.queue) can read its ``level`` for
        # their induction invariant; a submodule, not a port, so the Verilog is unchanged.
        # Its ``depth − 1`` entries and the head register hold ``depth`` in all.
        self.fifo = fifo.SyncFIFOBuffered(width=layout.size, depth=depth - 1)

    @property
    def depth(self):
        return self._depth

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = q = self.fifo
        m.d.comb += [q.w_data.eq(self.w.payload), q.w_en.eq(self.w.valid),
                     self.w.ready.eq(q.w_rdy)]
        # The head register takes the FIFO's oldest entry when it is empty or being taken.
        refill = ~self.r.valid | self.r.ready
        m.d.comb += q.r_en.eq(refill)
        with m.If(refill):
            m.d.sync += [self.r.valid.eq(q.r_rdy), self.r.payload.eq(q.r_data)]
        if FaultName.QUEUE_ACCEPT_FULL in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            m.d.comb += self.w.ready.eq(1)
        return m
