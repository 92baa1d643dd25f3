"""Walks the padding rows of a 2-D LOAD (docs/isa.md §3.1), one row address per cycle.

A LOAD writes ``W·H`` rows from ``sram_base`` (``W = x_pad_0 + x_size + x_pad_1``,
``H = y_pad_0 + y_size + y_pad_1``); the rows outside the data window hold the pad value. They
are visited as segments: the top ``y_pad_0·W`` rows, then for each data row its left
``x_pad_0`` and right ``x_pad_1`` rows, then the bottom ``y_pad_1·W`` rows. Empty per-row
segments are never entered, so padding costs exactly one cycle per pad row (plus one for each of
top and bottom), and it only uses cycles in which the data path does not write (``hold``).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from avta.isa import formats

__all__ = ["PadWalker"]


class PadWalker(wiring.Component):
    """Row addresses of every pad row of a LOAD.

    ``faults``: a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).

    Ports
    -----
    start : In(1)
        Begin with the geometry on the inputs (they stay stable until ``done``).
    sram_base, x_size, y_size, x_pad_0, x_pad_1, y_pad_0, y_pad_1 : In
        The LOAD's fields (docs/isa.md §2). ``x_size`` is non-zero.
    hold : In(1)
        The write port is taken this cycle; ``wr_valid`` then does not advance.
    cancel : In(1)
        The LOAD has ended early (an error, docs/isa.md §3.5): write no more and go idle.
    wr_valid : Out(1)
        Write the pad value to row ``wr_addr`` this cycle (when ``hold`` is low).
    wr_addr : Out(16)
        Row index, not yet reduced modulo the depth.
    busy : Out(1)
        Pad rows remain.
    """

    sram_base: In(formats.SRAM_ADDR_BITS)
    x_size: In(formats.SIZE_BITS)
    y_size: In(formats.SIZE_BITS)
    x_pad_0: In(formats.PAD_BITS)
    x_pad_1: In(formats.PAD_BITS)
    y_pad_0: In(formats.PAD_BITS)
    y_pad_1: In(formats.PAD_BITS)
    start: In(1)
    hold: In(1)
    cancel: In(1)
    wr_valid: Out(1)
    wr_addr: Out(formats.SRAM_ADDR_BITS)
    busy: Out(1)

    def __init__(self, *, faults=frozenset()):
        self._faults = faults
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        width = Signal(formats.SIZE_BITS + 1)            # W
        m.d.comb += width.eq(self.x_pad_0 + self.x_size + self.x_pad_1)
        row_step = width
        if "pad-row-width" in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            row_step = self.x_pad_0 + self.x_size

        left = Signal(formats.SIZE_BITS + formats.PAD_BITS + 1)   # rows left in the segment
        addr = Signal(formats.SRAM_ADDR_BITS)
        row_start = Signal(formats.SRAM_ADDR_BITS)       # row 0 of the current data row
        y = Signal(formats.SIZE_BITS)                    # current data row
        side_pads = (self.x_pad_0 != 0) | (self.x_pad_1 != 0)

        write = self.wr_valid & ~self.hold
        m.d.comb += self.wr_addr.eq(addr)
        seg_end = left == 1

        def enter_row(row, start_addr):
            """First segment of data row ``row`` starting at ``start_addr``, or the bottom."""
            with m.If(row < self.y_size):
                m.d.sync += [y.eq(row), row_start.eq(start_addr)]
                with m.If(self.x_pad_0 != 0):
                    m.d.sync += [addr.eq(start_addr), left.eq(self.x_pad_0)]
                    m.next = "LEFT"
                with m.Else():
                    m.d.sync += [addr.eq(start_addr + self.x_pad_0 + self.x_size),
                                 left.eq(self.x_pad_1)]
                    m.next = "RIGHT"
            with m.Else():
                enter_bottom()

        def enter_bottom():
            m.d.sync += [addr.eq(self.sram_base + (self.y_pad_0 + self.y_size) * width),
                         left.eq(self.y_pad_1 * width)]
            m.next = "BOTTOM"

        def cancelled():
            """An aborted LOAD ends with pad rows left, which must not be written in the next
            instruction's (or run's) time. Called last in a state, so it overrides the rest."""
            with m.If(self.cancel):
                m.next = "IDLE"

        with m.FSM(name="pad"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [addr.eq(self.sram_base), left.eq(self.y_pad_0 * width)]
                    m.next = "TOP"
            with m.State("TOP"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(left != 0)]
                with m.If(write):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                with m.If((left == 0) | (write & seg_end)):
                    with m.If(side_pads):
                        enter_row(0, self.sram_base + self.y_pad_0 * width)
                    with m.Else():
                        enter_bottom()
                cancelled()
            with m.State("LEFT"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(1)]
                with m.If(write):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    with m.If(seg_end):
                        with m.If(self.x_pad_1 != 0):
                            m.d.sync += [addr.eq(row_start + self.x_pad_0 + self.x_size),
                                         left.eq(self.x_pad_1)]
                            m.next = "RIGHT"
                        with m.Else():
                            enter_row(y + 1, row_start + row_step)
                cancelled()
            with m.State("RIGHT"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(1)]
                with m.If(write):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    with m.If(seg_end):
                        enter_row(y + 1, row_start + row_step)
                cancelled()
            with m.State("BOTTOM"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(left != 0)]
                with m.If(write):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                with m.If((left == 0) | (write & seg_end)):
                    m.next = "IDLE"
                cancelled()
        return m
