"""Reference semantics written once from the ISA (docs/isa.md §3.4), as Amaranth values.

The properties compare the hardware's lanes with these. They are written differently from the
RTL on purpose (a case per constant shift amount, explicit sign handling), so a shared mistake
in a clever formulation does not cancel out; widths come from the configuration
(:class:`avta.isa.config.Config`) and the operations from :class:`avta.isa.enums.AluOp`.
"""

from amaranth.hdl import Module, Mux, Signal

from avta.isa.enums import AluOp

__all__ = ["alu_lane", "SHIFT_BITS", "MUL_BITS"]

#: SHR reads B[5:0] as a signed shift amount (docs/isa.md §3.4).
SHIFT_BITS = 6
#: MUL multiplies the sign-extended low bytes (docs/isa.md §3.4).
MUL_BITS = 8


def alu_lane(m: Module, cfg, op, a, b, *, name):
    """f(A, B) of docs/isa.md §3.4 for one lane of ``cfg.acc_width`` bits, as a new signal."""
    width = cfg.acc_width
    a, b = a.as_signed(), b.as_signed()
    out = Signal(width, name=name)
    with m.Switch(op):
        with m.Case(AluOp.MIN):
            m.d.comb += out.eq(Mux(a <= b, a, b))
        with m.Case(AluOp.MAX):
            m.d.comb += out.eq(Mux(a >= b, a, b))
        with m.Case(AluOp.ADD):
            m.d.comb += out.eq((a + b)[:width])
        with m.Case(AluOp.SHR):
            amount = b[:SHIFT_BITS].as_signed()
            with m.Switch(amount):
                for s in range(-(1 << (SHIFT_BITS - 1)), 1 << (SHIFT_BITS - 1)):
                    with m.Case(s):
                        if s >= 0:      # arithmetic: the sign fills from the left
                            m.d.comb += out.eq(a >> s if s < width else a >> (width - 1))
                        else:           # wrapping: only the low bits remain
                            m.d.comb += out.eq((a << -s)[:width] if -s < width else 0)
        with m.Case(AluOp.MUL):
            m.d.comb += out.eq(a[:MUL_BITS].as_signed() * b[:MUL_BITS].as_signed())
        with m.Case(AluOp.CLP):
            low = Mux(a <= b, a, b)
            neg_b = Signal(width, name=f"{name}_neg_b")     # −B wraps: −(−2^31) = −2^31
            m.d.comb += neg_b.eq(-b)
            m.d.comb += out.eq(Mux(low >= neg_b.as_signed(), low, neg_b))
        with m.Case(AluOp.MOV):
            m.d.comb += out.eq(b)
    return out

