"""A register on the read beats between the read engine and its clients.

The beat path from the AXI R channel (the ID's tag-buffer lookup) through a client's row
arithmetic into a scratchpad write was the critical path on an ECP5 (docs/architecture.md,
timing on an FPGA). This stage starts the clients' half at a flip-flop: one cycle of latency,
a beat every cycle (``ready`` upstream is high while the register is empty or being emptied).
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["BeatRegister"]


class BeatRegister(wiring.Component):
    """``i`` in, ``o`` out one cycle later; ``layout`` is the beat's payload shape."""

    def __init__(self, layout):
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]
        return m
