"""The pad-row walker of a 2-D LOAD (hw/core/pad_walker.py) against docs/isa.md §3.1.

Environment: ``start`` only when the walker is idle, the LOAD's geometry stays stable while it
walks, ``x_size`` is non-zero (a LOAD with ``x_size`` 0 moves nothing, and the load units do
not start the walker); ``hold`` (the data path has the write port) and ``cancel`` (the LOAD
ended early) are free in every cycle.

``rows``
    The rows written are exactly the padding rows of docs/isa.md §3.1, each once, in increasing
    order: the k-th write goes to ``sram_base + r·W + c`` (modulo 2^16) of the k-th (r, c)
    outside the data window (:class:`PadRows` of :mod:`avta.formal.reference`); no write
    after the last one or after ``cancel``; ``busy`` until the last is written. For every
    ``sram_base``, with ``x_size``, ``y_size`` below 2^:data:`SIZE_BOUND_BITS` and the pads
    below 2^:data:`PAD_BOUND_BITS` (a bound on the geometry, not on the addresses: the rows
    still wrap past 2^16; the geometry is one constant per trace). Bounded: the walker's
    segment counters are not tied to the reference by an invariant, so it is checked to a
    depth, not proven.

Covers: a walk with all four pads non-zero and two data rows ends; a walk with side pads only;
a pad row that wraps past row 2^16 − 1.
"""

from amaranth.hdl import Cat, Signal

from avta.hw.core.pad_walker import PadWalker
from avta.isa import formats

from ..harness import Check, Harness
from ..reference import PadRows

__all__ = ["checks", "SIZE_BOUND_BITS", "PAD_BOUND_BITS"]

#: x_size and y_size are checked below 2^SIZE_BOUND_BITS, the pads below 2^PAD_BOUND_BITS (the
#: base is unbounded). Wider bounds make the solver prove r·W + W = (r + 1)·W for wider values
#: at every step, which it does slowly.
SIZE_BOUND_BITS = 2
PAD_BOUND_BITS = 2
#: Row and column counters of the reference: H and W are at most 2·3 + 3 = 9.
_RC_BITS = 4


class PadWalkerHarness(Harness):
    def __init__(self, faults):
        super().__init__()
        self._faults = faults

    def properties(self, m):
        m.submodules.dut = dut = PadWalker(faults=self._faults)
        start, hold, cancel = self.input("start"), self.input("hold"), self.input("cancel")
        # One geometry per trace, picked by the solver (a constant: the walker sees the same
        # multiplications in every cycle, which the solver then shares); walks may repeat.
        fields = {"sram_base": self.constant(m, "sram_base", formats.SRAM_ADDR_BITS),
                  "x_size": self.constant(m, "x_size", formats.SIZE_BITS),
                  "y_size": self.constant(m, "y_size", formats.SIZE_BITS)}
        for pad in ("x_pad_0", "x_pad_1", "y_pad_0", "y_pad_1"):
            fields[pad] = self.constant(m, pad, formats.PAD_BITS)
        m.d.comb += [dut.start.eq(start), dut.hold.eq(hold), dut.cancel.eq(cancel)]
        m.d.comb += [getattr(dut, name).eq(value) for name, value in fields.items()]

        self.assume(m, (fields["x_size"] != 0) & (fields["x_size"] >> SIZE_BOUND_BITS == 0) &
                    (fields["y_size"] >> SIZE_BOUND_BITS == 0))
        for pad in ("x_pad_0", "x_pad_1", "y_pad_0", "y_pad_1"):
            self.assume(m, fields[pad] >> PAD_BOUND_BITS == 0)
        self.assume(m, ~start | ~dut.busy)

        write = dut.wr_valid & ~dut.hold
        ref = PadRows(m, start=start, take=write, cancel=cancel, fields=fields, bits=_RC_BITS,
                      name="ref")
        self.promise(m, ~write | ref.valid)
        self.promise(m, ~write | (dut.wr_addr == ref.addr))
        self.promise(m, ~ref.valid | dut.busy)

        ended = Signal()
        m.d.sync += ended.eq(dut.busy & ~cancel)
        done = ended & ~dut.busy
        all_pads = Cat(fields["x_pad_0"] != 0, fields["x_pad_1"] != 0, fields["y_pad_0"] != 0,
                       fields["y_pad_1"] != 0).all()
        self.cover(m, done & all_pads & (fields["y_size"] == 2))
        self.cover(m, done & (fields["y_pad_0"] == 0) & (fields["y_pad_1"] == 0) &
                   (fields["x_pad_0"] != 0) & (fields["x_pad_1"] != 0) & (fields["y_size"] == 2))
        self.cover(m, write & (dut.wr_addr < fields["sram_base"]))


def checks(cfg, faults=frozenset()):
    return [Check("pad_walker", "rows", "the pad rows written are docs/isa.md §3.1's, each "
                  "once, in order, busy until the last (x_size, y_size < "
                  f"{1 << SIZE_BOUND_BITS}, pads < {1 << PAD_BOUND_BITS})",
                  lambda: PadWalkerHarness(faults), depth=6,
                  prove=False, cover_depth=14)]
