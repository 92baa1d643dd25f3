"""Reference semantics written once from the ISA (docs/isa.md §3.4 and §3.5), as Amaranth values.

The properties compare the hardware's lanes and its instruction decode with these. They are written differently from the
RTL on purpose (a case per constant shift amount, explicit sign handling), so a shared mistake
in a clever formulation does not cancel out; widths come from the configuration
(:class:`avta.isa.config.Config`) and the operations from :class:`avta.isa.enums.AluOp`.
"""

import functools
import operator

from amaranth.hdl import Module, Mux, Signal

from avta.isa.enums import AluOp, ErrorCode, MemType, Opcode, PadValue, Stage
from avta.isa.legality import LOADABLE_MEMORY_TYPES
from avta.isa.memories import stage_of

__all__ = ["alu_lane", "insn_stage", "insn_error", "SHIFT_BITS", "MUL_BITS"]

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



def _among(value, members):
    """``value`` equals one of ``members`` (a value no member names is outside)."""
    return functools.reduce(operator.or_, (value == int(member) for member in members))


def insn_stage(m: Module, insn, *, name):
    """The stage that runs ``insn`` (a :func:`avta.isa.layout.layouts` ``insn`` view), as a new
    signal (docs/isa.md §3): a LOAD goes to the stage of its memory type, a STORE to store,
    GEMM, ALU and FINISH to compute. Meaningful for a legal instruction only."""
    out = Signal(Stage, name=name)
    mem = insn.memory
    with m.Switch(insn.head.opcode):
        with m.Case(Opcode.LOAD):
            m.d.comb += out.eq(Stage.COMPUTE)
            for mtype in LOADABLE_MEMORY_TYPES:
                with m.If(mem.memory_type == mtype):
                    m.d.comb += out.eq(stage_of(mtype))
        with m.Case(Opcode.STORE):
            m.d.comb += out.eq(Stage.STORE)
        with m.Default():
            m.d.comb += out.eq(Stage.COMPUTE)
    return out


def insn_error(m: Module, insn, *, name):
    """The decode-time error of ``insn`` (docs/isa.md §3.5, codes 1–6 and 8: the lowest code of
    the rules it breaks) or NONE, as a new signal."""
    head, mem, alu = insn.head, insn.memory, insn.alu
    opcode = head.opcode
    stage = insn_stage(m, insn, name=f"{name}_stage")
    pads = [mem.y_pad_0, mem.y_pad_1, mem.x_pad_0, mem.x_pad_1]
    broken = {
        ErrorCode.ILLEGAL_OPCODE: ~_among(opcode, Opcode),
        ErrorCode.ILLEGAL_ALU_OPCODE: (opcode == Opcode.ALU) & ~_among(alu.alu_opcode, AluOp),
        ErrorCode.ILLEGAL_MEMORY_TYPE:
            (opcode == Opcode.LOAD) & ~_among(mem.memory_type, LOADABLE_MEMORY_TYPES),
        ErrorCode.ILLEGAL_PAD_VALUE: (opcode == Opcode.LOAD) & ~_among(mem.pad_value, PadValue),
        ErrorCode.ILLEGAL_STORE:
            (opcode == Opcode.STORE) & (mem.x_size > 0)
            & ((mem.memory_type != MemType.OUT) | functools.reduce(operator.or_,
                                                                   (p != 0 for p in pads))
               | (mem.pad_value != 0)),
        ErrorCode.TOKEN_WRONG_STAGE:
            ((opcode == Opcode.LOAD) & (stage == Stage.LOAD) & (head.pop_prev | head.push_prev))
            | ((opcode == Opcode.STORE) & (head.pop_next | head.push_next)),
        ErrorCode.FINISH_WITH_TOKEN:
            (opcode == Opcode.FINISH)
            & (head.pop_prev | head.pop_next | head.push_prev | head.push_next),
    }
    out = Signal(ErrorCode, name=name)
    result = ErrorCode.NONE.value
    for code in sorted(broken, reverse=True):       # the lowest code wins: it is applied last
        result = Mux(broken[code], code, result)
    m.d.comb += out.eq(result)
    return out
