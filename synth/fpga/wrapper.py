"""The out-of-context wrapper: a design with far more port bits than any ECP5 has pins, behind
a top whose only I/O is ``clk``, ``rst``, ``din`` and ``dout``.

* every input bit of the design is a flip-flop of one shift register fed from ``din`` (the
  register shifts one bit per cycle), so no input is a constant Yosys could propagate;
* every output bit is registered, and the registers are XOR-reduced four bits per LUT,
  pipelined, one register per level, down to ``dout``, so no output is unused logic Yosys could
  remove and the reduction never becomes the critical path.

Every path through a port is therefore register to register with no logic of the wrapper's in
it: an input path starts at a flip-flop one routing hop from the design's first gate, an output
path ends at a flip-flop right after the design's last one. Fmax is then the design's own,
plus the routing to the wrapper's flip-flops, which the placer puts next to their logic; a
combinational path from an input port to an output port of the design counts as one path.
The wrapper costs ``in_bits + out_bits`` flip-flops and about ``out_bits / 3`` LUT4s, reported
separately (:func:`wrapper_cost`).
"""

from amaranth import ClockDomain, Elaboratable, Module, Signal, Cat
from amaranth.lib import wiring

__all__ = ["OocWrapper", "port_bits", "wrapper_cost"]

#: Bits XORed by one LUT4 of the output reduction.
XOR_FAN_IN = 4


def port_bits(design):
    """``(inputs, outputs)``: lists of the design's port values (its signature, flattened)."""
    inputs, outputs = [], []
    for _path, member, value in design.signature.flatten(design):
        (inputs if member.flow == wiring.In else outputs).append(value)
    return inputs, outputs


def wrapper_cost(in_bits, out_bits):
    """``(flip-flops, LUT4s)`` the wrapper adds around a design with these port widths."""
    ffs, luts, n = in_bits + out_bits, 0, out_bits
    while n > 1:
        n = -(-n // XOR_FAN_IN)
        ffs, luts = ffs + n, luts + n
    return ffs, luts


class OocWrapper(Elaboratable):
    """``design`` (a :class:`wiring.Component` clocked by the ``sync`` domain) under ports
    ``clk``, ``rst`` (synchronous, active high, the design's reset), ``din`` (the serial input
    every input bit is shifted in from) and ``dout`` (the XOR of every output bit, registered).
    ``name`` is the design's submodule name (its hierarchy path below the wrapper)."""

    def __init__(self, design, *, name="vta_top"):
        self._design = design
        self._name = name
        self._sync = ClockDomain("sync")
        self.clk = self._sync.clk
        self.rst = self._sync.rst
        self.din = Signal()
        self.dout = Signal()

    @property
    def ports(self):
        return [self.clk, self.rst, self.din, self.dout]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self._sync
        m.submodules[self._name] = design = self._design
        inputs, outputs = port_bits(design)

        in_bits = sum(len(v) for v in inputs)
        if in_bits:
            shift = Signal(in_bits, name="in_shift")
            m.d.sync += shift.eq(Cat(self.din, shift[:-1]))
            offset = 0
            for value in inputs:
                m.d.comb += value.eq(shift[offset:offset + len(value)])
                offset += len(value)

        level = Signal(sum(len(v) for v in outputs), name="out_reg")
        m.d.sync += level.eq(Cat(*outputs))
        depth = 0
        while len(level) > 1:
            depth += 1
            groups = [level[i:i + XOR_FAN_IN] for i in range(0, len(level), XOR_FAN_IN)]
            nxt = Signal(len(groups), name=f"out_xor{depth}")
            m.d.sync += nxt.eq(Cat(*(g.xor() for g in groups)))
            level = nxt
        m.d.comb += self.dout.eq(level[0] if len(level) else self.din)
        return m
