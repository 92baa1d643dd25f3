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
    index width, the ISA's formula, where the RTL keeps running sums (adders only). Covers: an
    offset that moved on both loops, for each operand. Runs on z3 (yices stalls on the
    multiplications of the induction step).

Both are proven by k-induction: the loop's counters and outer offsets (read-only attributes of
:class:`LoopGen`) are stated equal to the reference's.
"""

from amaranth.hdl import Cat, Const, Signal

from avta.hw.core.loop_gen import LoopGen
from avta.hw.core.sram import geometry
from avta.isa import formats

from ..harness import Check, Harness
from ..reference import LoopNest, loop_empty, loop_offset

__all__ = ["checks"]

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
            want = loop_offset(ref.i_o, ref.i_i, fields[f"{op}_factor_out"],
                               fields[f"{op}_factor_in"], width)
            self.promise(m, ~ref.valid | (getattr(dut, op) == want))
            # Induction invariant: the outer offset the inner one restarts from.
            outer = loop_offset(ref.i_o, Const(0), fields[f"{op}_factor_out"], 0, width)
            self.promise(m, ~ref.valid | (dut.outer[op] == outer))
            # An offset that has moved on both loops (i_o, i_i ≥ 1, non-zero factors).
            self.cover(m, ref.valid & (ref.i_o == 2) & (ref.i_i == 2) & (want != 0) &
                       (fields[f"{op}_factor_out"] != 0) & (fields[f"{op}_factor_in"] != 0))


def checks(cfg, faults=frozenset()):
    return [
        Check("loop_gen", "steps", "the steps are docs/isa.md §3.3's nested loops in order "
              "(micro-op row, last, no step after the last or abort, empty), for every field "
              "value", lambda: LoopGenHarness(cfg, faults, "steps"), depth=2, cover_depth=12),
        Check("loop_gen", "offsets", "each step's dst/src/wgt offsets are i_o·f_out + i_i·f_in "
              "modulo the index width, for every field value",
              lambda: LoopGenHarness(cfg, faults, "offsets"), depth=6, cover_depth=12,
              solver="z3"),
    ]
