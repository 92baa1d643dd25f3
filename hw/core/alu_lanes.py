"""The ALU operations of docs/isa.md §3.4 on every lane of an ACC row (combinational)."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from avta.isa.enums import AluOp

from .faults import FaultName
from .sram import row_layout

__all__ = ["AluLanes"]

# SHR takes B[5:0] as a signed shift amount (docs/isa.md §3.4); MUL takes the low byte of each operand;
# SCL multiplies by sext(B[W−1:0]) / 2^(W−1), rounding down, W = cfg.scale_bits.
_SHIFT_BITS = 6
_MUL_BITS = 8


class AluLanes(wiring.Component):
    """``out = f(a, b)`` lane by lane (int32, wrapping), for every batch row. SCL's multipliers
    (32×W bits per lane, W = ``cfg.scale_bits``, 16 or 24) exist only where ``cfg.alu_scale``
    is 1 or 2; elsewhere opcode 7 never reaches the lanes (decode error 2).

    Ports
    -----
    op : In(AluOp)
    faults : set of :data:`avta.hw.core.faults.FAULTS` names (tests only)
    a, b : In(row_layout(cfg, "acc"))
        Operands A and B of docs/isa.md §3.4 (with an immediate, A = ACC[src] and B = sext(imm)).
    out : Out(row_layout(cfg, "acc"))
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        row = row_layout(cfg, "acc")
        super().__init__({"op": In(AluOp), "a": In(row), "b": In(row), "out": Out(row)})

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        lanes = [(self.a[r][o], self.b[r][o], self.out[r][o])
                 for r in range(cfg.batch) for o in range(cfg.block_out)]
        with m.Switch(self.op):
            with m.Case(AluOp.MIN):
                if FaultName.ALU_OP in self._faults:
                    # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                    m.d.comb += [y.eq(Mux(a.as_unsigned() < b.as_unsigned(), a, b))
                                 for a, b, y in lanes]
                else:
                    m.d.comb += [y.eq(Mux(a < b, a, b)) for a, b, y in lanes]
            with m.Case(AluOp.MAX):
                m.d.comb += [y.eq(Mux(a > b, a, b)) for a, b, y in lanes]
            with m.Case(AluOp.ADD):
                m.d.comb += [y.eq(a + b) for a, b, y in lanes]
                if FaultName.ALU_LANE in self._faults and cfg.block_out > 1:
                    # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                    for r in range(cfg.batch):
                        m.d.comb += self.out[r][1].eq(self.a[r][1] + self.b[r][0])
            with m.Case(AluOp.SHR):
                for i, (a, b, y) in enumerate(lanes):
                    s = b[:_SHIFT_BITS].as_signed()
                    left = Signal(_SHIFT_BITS, name=f"shl_{i}")
                    m.d.comb += left.eq(-s)
                    # s in [-32, 31]: right shifts are arithmetic; a left shift by 32 gives 0.
                    m.d.comb += y.eq(Mux(s >= 0, a >> s[:_SHIFT_BITS - 1],
                                         (a << left)[:cfg.acc_width]))
            with m.Case(AluOp.MUL):
                m.d.comb += [y.eq(a[:_MUL_BITS].as_signed() * b[:_MUL_BITS].as_signed())
                             for a, b, y in lanes]
            with m.Case(AluOp.CLP):
                for i, (a, b, y) in enumerate(lanes):
                    self._clip(m, i, a, b, y)
            with m.Case(AluOp.MOV):
                m.d.comb += [y.eq(b) for a, b, y in lanes]
            if cfg.alu_scale:
                with m.Case(AluOp.SCL):
                    # A 32×W signed product (exact); its bits [W+30:W−1] are the floor.
                    width = cfg.scale_bits
                    for i, (a, b, y) in enumerate(lanes):
                        product = Signal(cfg.acc_width + width, name=f"scl_{i}")
                        m.d.comb += product.eq(a * b[:width].as_signed())
                        m.d.comb += y.eq(product[width - 1:])
        return m

    def _clip(self, m, i, a, b, y):
        """CLP, max(min(A, B), −B) with −B wrapping as an int32 (−(−2^31) = −2^31), as one
        carry chain deep: each comparison is made on the operands in parallel (min then max
        was two chains in series, the core's longest path on an ECP5: docs/architecture.md,
        timing on an FPGA). min(A, B) is A when A < B, else B; each against −B:
        A > −B is A + B > 0 (exact in 33 bits) unless B = −2^31, where it is A ≠ −2^31;
        B > −B is B > 0 (also for B = −2^31, where −B = B)."""
        width = self._cfg.acc_width
        neg = Signal.like(b, name=f"clp_neg_{i}")
        total = Signal(signed(width + 1), name=f"clp_sum_{i}")
        m.d.comb += [neg.eq(-b), total.eq(a + b)]
        b_min = b.as_unsigned() == 1 << (width - 1)
        # "> 0" as a sign bit and a wide OR, not another carry chain.
        a_over = Mux(b_min, a.as_unsigned() != 1 << (width - 1),
                     ~total[-1] & total.as_unsigned().any())
        b_over = ~b[-1] & b.as_unsigned().any()
        m.d.comb += y.eq(Mux(a < b, Mux(a_over, a, neg), Mux(b_over, b, neg)))
