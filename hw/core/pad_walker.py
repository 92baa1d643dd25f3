"""Walks the padding rows of a 2-D LOAD (docs/isa.md §3.1), one row address per cycle.

A LOAD writes ``W·H`` rows from ``sram_base`` (``W = x_pad_0 + x_size + x_pad_1``,
``H = y_pad_0 + y_size + y_pad_1``); the rows outside the data window hold the pad value. They
are visited as segments: the top ``y_pad_0·W`` rows, then for each data row its left
``x_pad_0`` and right ``x_pad_1`` rows, then the bottom ``y_pad_1·W`` rows. Empty per-row
segments are never entered, so padding costs one cycle per pad row (plus one for each of top
and bottom), and it only uses cycles in which the data path does not write (``hold``).

Adders only, no multiplier (docs/architecture.md, timing on an FPGA): the geometry is latched
at ``start`` (the fields come from the instruction queue's block RAM, slow to read), the top and
bottom segments count rows of ``W`` and columns, and the bottom's first row
``sram_base + (y_pad_0 + y_size)·W`` is a running sum stepped by ``W`` once a cycle from
``start``; the bottom waits for it, ``y_pad_0 + y_size`` cycles after ``start`` at the latest,
which the data rows' writes outlast. Data row 0's first row and right pad are running sums too
(``y_pad_0`` steps, which the top's ``y_pad_0·W`` rows outlast), and each data row sets up the
next one's in registers, one adder each: a written row leads to the next address through no
chain of adders.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from avta.isa import formats

from .faults import FaultName

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
        size_bits = formats.SIZE_BITS + 1
        # The geometry, latched at start: W, the data rows, the pads.
        width = Signal(size_bits)                        # W
        row_step = Signal(size_bits)                     # from one data row to the next
        x_pad_0, x_pad_1 = Signal(formats.PAD_BITS), Signal(formats.PAD_BITS)
        y_pad_1 = Signal(formats.PAD_BITS)
        y_size = Signal(formats.SIZE_BITS)
        step = self.x_pad_0 + self.x_size + self.x_pad_1
        if FaultName.PAD_ROW_WIDTH in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            step = self.x_pad_0 + self.x_size
        with m.If(self.start):
            m.d.sync += [width.eq(self.x_pad_0 + self.x_size + self.x_pad_1), row_step.eq(step),
                         x_pad_0.eq(self.x_pad_0), x_pad_1.eq(self.x_pad_1),
                         y_pad_1.eq(self.y_pad_1), y_size.eq(self.y_size)]

        left = Signal(size_bits)                         # rows left in the segment's row
        rows = Signal(formats.PAD_BITS)                  # rows of W left (top and bottom)
        addr = Signal(formats.SRAM_ADDR_BITS)
        side_pads = (x_pad_0 != 0) | (x_pad_1 != 0)

        # The running sums: sram_base stepped by W once a cycle from start, for each of the rows
        # above the bottom (its first row) and above the data (data row 0 and its right pad).
        bottom = Signal(formats.SRAM_ADDR_BITS)
        above = Signal(size_bits)                        # steps still to take
        with m.If(above != 0):
            m.d.sync += [bottom.eq(bottom + width), above.eq(above - 1)]
        first_row = Signal(formats.SRAM_ADDR_BITS)       # data row 0's first row
        first_right = Signal(formats.SRAM_ADDR_BITS)     # and its right pad's
        top_steps = Signal(formats.PAD_BITS)
        with m.If(top_steps != 0):
            m.d.sync += [first_row.eq(first_row + width), first_right.eq(first_right + width),
                         top_steps.eq(top_steps - 1)]

        # The data row being walked: where its right pad starts, and the next row's first and
        # right pad rows, each a register stepped by one adder, so that no chain of adders
        # stands between a written row and the next address.
        right_addr = Signal(formats.SRAM_ADDR_BITS)
        next_row = Signal(formats.SRAM_ADDR_BITS)
        next_right = Signal(formats.SRAM_ADDR_BITS)
        rows_after = Signal(formats.SIZE_BITS)           # data rows after the current one

        write = self.wr_valid & ~self.hold
        m.d.comb += self.wr_addr.eq(addr)
        seg_end = left == 1

        def walk_rows():
            """One pad row of a top or bottom segment (``rows`` rows of ``W``) written."""
            m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
            with m.If(seg_end):
                m.d.sync += [left.eq(width), rows.eq(rows - 1)]

        def enter_row(more, start, start_right, after):
            """The first segment of the data row whose first row is ``start`` (its right pad
            at ``start_right``, ``after`` data rows after it) if ``more``, else the bottom."""
            with m.If(more):
                m.d.sync += [right_addr.eq(start_right), next_row.eq(start + row_step),
                             next_right.eq(start_right + row_step), rows_after.eq(after)]
                with m.If(x_pad_0 != 0):
                    m.d.sync += [addr.eq(start), left.eq(x_pad_0)]
                    m.next = "LEFT"
                with m.Else():
                    m.d.sync += [addr.eq(start_right), left.eq(x_pad_1)]
                    m.next = "RIGHT"
            with m.Else():
                enter_bottom()

        def enter_next_row():
            enter_row(rows_after != 0, next_row, next_right, rows_after - 1)

        def enter_bottom():
            m.d.sync += [left.eq(width), rows.eq(y_pad_1)]
            m.next = "BOTTOM"

        def cancelled():
            """An aborted LOAD ends with pad rows left, which must not be written in the next
            instruction's (or run's) time. Called last in a state, so it overrides the rest."""
            with m.If(self.cancel):
                m.next = "IDLE"

        with m.FSM(name="pad"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [addr.eq(self.sram_base), rows.eq(self.y_pad_0),
                                 left.eq(self.x_pad_0 + self.x_size + self.x_pad_1),
                                 bottom.eq(self.sram_base),
                                 above.eq(self.y_pad_0 + self.y_size),
                                 first_row.eq(self.sram_base),
                                 first_right.eq(self.sram_base + self.x_pad_0 + self.x_size),
                                 top_steps.eq(self.y_pad_0)]
                    m.next = "TOP"
            with m.State("TOP"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(rows != 0)]
                with m.If(write):
                    walk_rows()
                with m.If((rows == 0) | (write & seg_end & (rows == 1))):
                    with m.If(side_pads):
                        # The top ends where data row 0 starts: its running sums have taken
                        # their y_pad_0 steps by now, since the top's y_pad_0·W rows took a
                        # cycle each and W ≥ 2 with side pads.
                        enter_row(y_size != 0, first_row, first_right, y_size - 1)
                    with m.Else():
                        enter_bottom()
                cancelled()
            with m.State("LEFT"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(1)]
                with m.If(write):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    with m.If(seg_end):
                        with m.If(x_pad_1 != 0):
                            m.d.sync += [addr.eq(right_addr), left.eq(x_pad_1)]
                            m.next = "RIGHT"
                        with m.Else():
                            enter_next_row()
                cancelled()
            with m.State("RIGHT"):
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(1)]
                with m.If(write):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    with m.If(seg_end):
                        enter_next_row()
                cancelled()
            with m.State("BOTTOM"):
                # The bottom's first row is known once the running sum has taken every step.
                ready = above == 0
                m.d.comb += [self.busy.eq(1), self.wr_valid.eq(ready & (rows != 0))]
                m.d.comb += self.wr_addr.eq(bottom)
                with m.If(write):
                    walk_rows()
                    m.d.sync += bottom.eq(bottom + 1)
                with m.If((rows == 0) | (write & seg_end & (rows == 1))):
                    m.next = "IDLE"
                cancelled()
        return m
