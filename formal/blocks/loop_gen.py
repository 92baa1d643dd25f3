"""The micro-op loop generator of GEMM and ALU (hw/core/loop_gen.py) against docs/isa.md §3.3.

Built as the GEMM unit builds it (micro-op index U bits, dst/src/wgt offsets of the ACC, INP
and WGT index widths). Environment: ``start`` only when no step is offered (a unit starts its next
instruction after the loop has ended), and the instruction's fields stay stable while the loop
runs (from ``start`` until the last step is taken or ``abort``); ``advance`` and ``abort`` are
free in every cycle.

``steps``
    For every field value (iteration counts 0..2^14 − 1, any micro-op range, any factors), the
    steps offered are exactly those of the ISA's nested loops (:class:`LoopNest` of
    :mod:`avta.formal.reference`), in order: the same micro-op row (wrapping modulo the depth
    when ``uop_end`` is past it), ``last`` on the last step only, no step after it or after
    ``abort``, and ``empty`` exactly for a degenerate nest. Covers: a 2 × 2 nest of two
    micro-ops runs to its last step; an abort mid-nest; an empty nest; a micro-op range that
    wraps past the last row.
``offsets``
    Each step's dst, src and wgt offsets are ``i_o·factor_out + i_i·factor_in`` modulo the
    index width, the ISA's formula (:func:`~avta.formal.reference.loop_offset`), where the RTL
    keeps running sums (adders only). Stated without a multiplier: for each operand the harness
    keeps two :class:`RunningProduct` trackers, one following the reference nest's ``i_o``
    (with ``factor_out``), one its ``i_i`` (with ``factor_in``), and promises the RTL's offset
    equals the sum of their values and its outer offset the first one's (induction
    invariants), each tracker's count equals its counter and it never counts past the top.
    Covers: an offset that moved on both loops, for each operand. With the multiplications in
    the induction step (offset = i_o·f_out + i_i·f_in directly) k-induction ran past 5 minutes
    on default's 11-bit offsets; this way it is adders only.
``offset_sums``
    Combinational, the lemma that makes ``offsets`` the ISA's formula, for each operand width:
    (1) every move of a :class:`RunningProduct` (reset to (0, 0, f), count + 1 with value + f,
    or none) from a state whose value is the reference's product of its count and factor
    leads to such a state again, and the power-on state (0, 0, 0) is one; so by induction
    over the cycles a tracker's value is always that product (1-induction, with the step
    checked on the tracker's own next-state expressions: :meth:`RunningProduct.moves`);
    (2) ``loop_offset(i_o, i_i, f_out, f_in)`` is the outer product of ``i_o`` plus the inner
    product of ``i_i``, for every value. With ``offsets``: each step's offsets are
    ``loop_offset`` of the reference's counters. (A sequential check of (1) by k-induction ran
    past 5 minutes on 11 bits: the solver must relate two multipliers across a state
    boundary; combinationally it takes seconds.)

``steps`` and ``offsets`` are proven by k-induction: the loop's counters and outer offsets
(read-only attributes of :class:`LoopGen`) are stated equal to the reference's.
"""

from amaranth.hdl import Cat, Const, Mux, Signal

from avta.hw.core.loop_gen import LoopGen
from avta.hw.core.sram import geometry
from avta.isa import formats

from ..harness import Check, Harness
from ..reference import LoopNest, loop_empty, loop_offset

__all__ = ["checks", "RunningProduct"]

#: The operands and the scratchpad each one indexes (as hw/core/gemm.py builds the loop).
OPERANDS = {"dst": "acc", "src": "inp", "wgt": "wgt"}


class LoopGenHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._faults, self._prop = cfg, faults, prop

    def properties(self, m):
        cfg = self._cfg
        uop_bits = geometry(cfg, "uop").addr_bits
        widths = {op: geometry(cfg, pad).addr_bits for op, pad in OPERANDS.items()}
        dut = LoopGen(uop_bits=uop_bits, offset_bits=widths, faults=self._faults)
        m.submodules.dut = dut

        start, advance, abort = self.input("start"), self.input("advance"), self.input("abort")
        self._start = start
        fields = {"uop_bgn": self.input("uop_bgn", uop_bits),
                  "uop_end": self.input("uop_end", uop_bits + 1),
                  "iter_out": self.input("iter_out", formats.ITER_BITS),
                  "iter_in": self.input("iter_in", formats.ITER_BITS)}
        for op, width in widths.items():
            for which in ("out", "in"):
                fields[f"{op}_factor_{which}"] = self.input(f"{op}_factor_{which}", width)
        m.d.comb += [dut.start.eq(start), dut.advance.eq(advance), dut.abort.eq(abort)]
        m.d.comb += [getattr(dut, name).eq(value) for name, value in fields.items()]

        # The fields hold while the loop runs (the unit's instruction is stable until done).
        packed = Cat(*fields.values())
        before, running = Signal.like(packed), Signal()
        m.d.sync += [before.eq(packed), running.eq(start | (dut.valid & ~abort))]
        self.assume(m, ~running | start | (packed == before))

        ref = LoopNest(m, start=start, take=advance, abort=abort, uop_bgn=fields["uop_bgn"],
                       uop_end=fields["uop_end"], iter_out=fields["iter_out"],
                       iter_in=fields["iter_in"], name="ref")
        # A unit starts its next instruction only once the loop has ended (instruction_control).
        self.assume(m, ~start | ~ref.valid)
        self.promise(m, dut.valid == ref.valid)
        self.promise(m, dut.empty == loop_empty(**{k: fields[k] for k in (
            "iter_out", "iter_in", "uop_bgn", "uop_end")}))
        self.promise(m, ~ref.valid | ((dut.uop == ref.u[:uop_bits]) & (dut.last == ref.last)))
        # Induction invariants: the counters are the reference's, inside their ranges.
        self.promise(m, ~ref.valid | ((dut.i_in == ref.i_i) & (dut.i_out == ref.i_o) &
                                      (dut.u == ref.u)))
        self.promise(m, ~ref.valid | ((ref.i_i < fields["iter_in"]) &
                                      (ref.i_o < fields["iter_out"]) &
                                      (ref.u >= fields["uop_bgn"]) &
                                      (ref.u < fields["uop_end"])))
        if self._prop == "offsets":
            self._offsets(m, dut, ref, fields, widths)
            return
        nest_2x2x2 = ((fields["iter_out"] == 2) & (fields["iter_in"] == 2) &
                      (fields["uop_end"] == fields["uop_bgn"] + 2))
        self.cover(m, nest_2x2x2 & dut.valid & dut.last & advance & ~start & ~abort)
        self.cover(m, abort & dut.valid & (dut.i_in != 0))
        self.cover(m, start & dut.empty & (fields["iter_out"] != 0) & (fields["iter_in"] != 0))
        self.cover(m, dut.valid & (fields["uop_end"] > 1 << uop_bits) & (dut.uop == 0) &
                   (fields["uop_bgn"] != 0))

    def _offsets(self, m, dut, ref, fields, widths):
        for op, width in widths.items():
            f_out, f_in = fields[f"{op}_factor_out"], fields[f"{op}_factor_in"]
            outer = RunningProduct(m, "outer", width, clear=self._start, inc=ref.outer_moves,
                                   new_factor=f_out, name=f"{op}_outer_product")
            inner = RunningProduct(m, "inner", width, clear=self._start | ref.outer_moves,
                                   inc=ref.inner_moves, new_factor=f_in,
                                   name=f"{op}_inner_product")
            for tracker, counter in ((outer, ref.i_o), (inner, ref.i_i)):
                self.promise(m, tracker.count == counter)
                # offset_sums' lemma holds for counts that do not wrap.
                self.promise(m, ~tracker.inc | (tracker.count != tracker.top))
            self.promise(m, ~ref.valid | ((outer.factor == f_out) & (inner.factor == f_in)))
            self.promise(m, ~ref.valid | (getattr(dut, op) == (outer.value + inner.value)[:width]))
            # Induction invariant: the outer offset the inner one restarts from.
            self.promise(m, ~ref.valid | (dut.outer[op] == outer.value))
            # An offset that has moved on both loops (i_o, i_i ≥ 1, non-zero factors).
            want = loop_offset(ref.i_o, ref.i_i, f_out, f_in, width)
            self.cover(m, ref.valid & (ref.i_o == 2) & (ref.i_i == 2) & (want != 0) &
                       (f_out != 0) & (f_in != 0))


class RunningProduct:
    """``count·factor`` modulo 2^``width`` kept by additions, as a loop keeps an offset: a
    count (as wide as an iteration count), a value and a factor, which move together.

    In a cycle with ``clear`` the tracker becomes (0, 0, ``new_factor``); with ``inc`` (and no
    ``clear``) (count + 1, value + factor, factor); otherwise it holds. ``kind`` says which
    reference product its value is (:meth:`product`): ``outer`` is ``loop_offset(count, 0,
    factor, 0)``, ``inner`` is ``loop_offset(0, count, 0, factor)`` (both count·factor modulo
    2^width); ``offset_sums`` proves the value is always that product (while the count does
    not wrap past :attr:`top`), ``offsets`` only ever adds.
    """

    def __init__(self, m, kind, width, *, clear, inc, new_factor, name):
        self.kind, self.width, self.inc = kind, width, inc
        self.count = Signal(formats.ITER_BITS, name=f"{name}_count")
        self.value = Signal(width, name=f"{name}_value")
        self.factor = Signal(width, name=f"{name}_factor")
        self.top = (1 << formats.ITER_BITS) - 1
        state = (self.count, self.value, self.factor)
        m.d.sync += [reg.eq(nxt) for reg, nxt in zip(state, self.moves(
            *state, clear=clear, inc=inc, new_factor=new_factor, width=width))]

    @staticmethod
    def moves(count, value, factor, *, clear, inc, new_factor, width):
        """The next (count, value, factor) of a tracker in state (count, value, factor)."""
        return (Mux(clear, 0, Mux(inc, count + 1, count))[:formats.ITER_BITS],
                Mux(clear, 0, Mux(inc, value + factor, value))[:width],
                Mux(clear, new_factor, factor))

    @staticmethod
    def product(kind, count, factor, width):
        """The reference's product of ``count`` and ``factor`` for a tracker of ``kind``."""
        if kind == "outer":
            return loop_offset(count, Const(0), factor, 0, width)
        return loop_offset(Const(0), count, 0, factor, width)


class OffsetSumsHarness(Harness):
    """``offset_sums``: the lemma (1) and (2) of the module's docstring, combinational, once
    per index width (the lemma depends on nothing else)."""

    def __init__(self, cfg):
        super().__init__()
        self._cfg = cfg

    def properties(self, m):
        bits = formats.ITER_BITS
        widths = sorted({geometry(self._cfg, pad).addr_bits for pad in OPERANDS.values()})
        for width in widths:
            for kind in ("outer", "inner"):
                def product(count, factor, kind=kind, width=width):
                    return RunningProduct.product(kind, count, factor, width)
                name = f"w{width}_{kind}"
                # A state whose value is the product of its count and factor: value is that
                # product (the states the lemma is about are exactly these).
                count, factor = self.input(f"{name}_count", bits), self.input(f"{name}_factor", width)
                value = product(count, factor)
                new_factor = self.input(f"{name}_new_factor", width)
                # Each of the four moves on its own (constant selects), so the solver sees
                # (count + 1)·f against count·f + f rather than a product of multiplexers.
                for clear, inc in ((1, 0), (1, 1), (0, 1), (0, 0)):
                    count2, value2, factor2 = RunningProduct.moves(
                        count, value, factor, clear=Const(clear), inc=Const(inc),
                        new_factor=new_factor, width=width)
                    wraps = Const(0) if clear or not inc else count == (1 << bits) - 1
                    self.promise(m, wraps | (value2 == product(count2, factor2)))
                # The power-on state (0, 0, 0) is such a state.
                self.promise(m, product(Const(0, bits), Const(0, width)) == 0)
                self.cover(m, (count != 0) & (factor != 0) & (value != 0))
            i_o, i_i = self.input(f"w{width}_i_o", bits), self.input(f"w{width}_i_i", bits)
            f_out, f_in = self.input(f"w{width}_f_out", width), self.input(f"w{width}_f_in", width)
            self.promise(m, loop_offset(i_o, i_i, f_out, f_in, width) == (
                RunningProduct.product("outer", i_o, f_out, width) +
                RunningProduct.product("inner", i_i, f_in, width))[:width])


def checks(cfg, faults=frozenset()):
    return [
        Check("loop_gen", "steps", "the steps are docs/isa.md §3.3's nested loops in order "
              "(micro-op row, last, no step after the last or abort, empty), for every field "
              "value", lambda: LoopGenHarness(cfg, faults, "steps"), depth=2, cover_depth=12),
        Check("loop_gen", "offsets", "each step's dst/src/wgt offsets are the sums of two "
              "running products following i_o and i_i (the RTL's adders against the "
              "reference's counters; with offset_sums: i_o·f_out + i_i·f_in modulo the index "
              "width), for every field value",
              lambda: LoopGenHarness(cfg, faults, "offsets"), depth=4, cover_depth=12),
        Check("loop_gen", "offset_sums", "a running product's every move keeps its value "
              "count·factor modulo the index width, and i_o·f_out + i_i·f_in is the sum of "
              "the two products (the lemma that makes offsets the ISA's formula)",
              lambda: OffsetSumsHarness(cfg), combinational=True, solver="z3"),
    ]
