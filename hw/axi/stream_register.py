"""A one-cycle register on a stream: the memory engine's read commands and read beats.

Beats: the path from the AXI R channel (the ID's tag-buffer lookup) through a client's row
arithmetic into a scratchpad write was the critical path on an ECP5 (docs/architecture.md,
timing on an FPGA); a register on the beats starts the clients' half at a flip-flop.
Commands: the arbiter's grant depends on every client's ``valid``, and each client's
``ready`` on the grant, so a client's command logic (fetch's count of instructions left)
reached another client's beat counter through it; a register on each client's commands makes
every ``valid`` the arbiter sees a flip-flop.

One cycle of latency, a transfer every cycle (``ready`` upstream is high while the register is
empty or being emptied).
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamRegister"]


class StreamRegister(wiring.Component):
    """``i`` in, ``o`` out one cycle later; ``layout`` is the payload's shape."""

    def __init__(self, layout):
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]
        return m
