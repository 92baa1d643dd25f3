"""A one-cycle register on a stream: the memory engine's read commands and read beats.

Beats: the path from the AXI R channel (the ID's tag-buffer lookup) through a client's row
arithmetic into a scratchpad write was the critical path on an ECP5 (docs/architecture.md,
timing on an FPGA); a register on the beats starts the clients' half at a flip-flop. Its
``ready`` upstream is registered too (``registered_ready``): otherwise the clients' ``ready``,
which their row writers form from the beat, reached the read engine's RREADY and its
tag-buffer counters in the same cycle (the binding path once fetch's commands were cut).
Commands: the arbiter's grant depends on every client's ``valid``, and each client's
``ready`` on the grant, so a client's command logic (fetch's count of instructions left)
reached another client's beat counter through it; a register on each client's commands makes
every ``valid`` the arbiter sees a flip-flop.

One cycle of latency, a transfer every cycle. Plain, ``ready`` upstream is high while the
register is empty or being emptied. With ``registered_ready`` it is high while a second
register beside it (the *held* item) is empty: an item that arrives while the output waits
is held, and goes out as soon as the output is taken, before anything newer. Downstream sees
the same items in the same cycles as behind the plain register whenever upstream has one to
give; upstream only ever gives an item up earlier.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamRegister"]


class StreamRegister(wiring.Component):
    """``i`` in, ``o`` out one cycle later; ``layout`` is the payload's shape; with
    ``registered_ready`` ``i.ready`` is a flip-flop (the held item's register is empty)."""

    def __init__(self, layout, *, registered_ready=False):
        self._layout, self._registered_ready = layout, registered_ready
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        if not self._registered_ready:
            m.d.comb += i.ready.eq(~o.valid | o.ready)
            with m.If(i.ready):
                m.d.sync += [o.valid.eq(i.valid), o.payload.eq(i.payload)]
            return m
        held_valid = Signal()
        held = Signal(self._layout)
        m.d.comb += i.ready.eq(~held_valid)
        with m.If(~o.valid | o.ready):
            with m.If(held_valid):
                m.d.sync += [o.valid.eq(1), o.payload.eq(held), held_valid.eq(0)]
            with m.Else():
                m.d.sync += [o.valid.eq(i.valid), o.payload.eq(i.payload)]
        with m.Elif(i.valid & ~held_valid):
            m.d.sync += [held_valid.eq(1), held.eq(i.payload)]
        return m
