"""Reference semantics written once from the ISA (docs/isa.md §3.1, §3.3, §3.4 and §3.5), as
Amaranth values.

The properties compare the hardware with these. They are written differently from the
RTL on purpose (a case per constant shift amount, explicit sign handling), so a shared mistake
in a clever formulation does not cancel out; widths come from the configuration
(:class:`avta.isa.config.Config`) and the operations from :class:`avta.isa.enums.AluOp`.
"""

import functools
import operator

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

from avta.isa import formats
from avta.isa.enums import AluOp, ErrorCode, MemType, Opcode, PadValue, Stage
from avta.isa.legality import LOADABLE_MEMORY_TYPES, alu_ops
from avta.isa.memories import stage_of

__all__ = ["alu_lane", "alu_imm", "insn_stage", "insn_error", "SHIFT_BITS", "MUL_BITS",
           "sign_extend",
           "loop_empty", "loop_offset", "LoopNest", "PadRows", "dot_lane"]

#: SHR reads B[5:0] as a signed shift amount (docs/isa.md §3.4).
SHIFT_BITS = 6
#: MUL multiplies the sign-extended low bytes (docs/isa.md §3.4).
MUL_BITS = 8
# SCL multiplies by sext(B[W−1:0]) / 2^(W−1), rounding down, W = cfg.scale_bits (16 or 24), and
# its immediate stands for sext(imm) · 2^(W−16) (docs/isa.md §3.4).


def alu_imm(cfg, opcode, imm):
    """Operand B of an ALU instruction with an immediate (docs/isa.md §3.4), ``cfg.acc_width``
    bits: sext(imm), or for SCL sext(imm) · 2^(W−16), the multiplier's top bits."""
    width = cfg.acc_width
    value = sign_extend(imm, width)
    if cfg.alu_scale and cfg.scale_bits > formats.IMM_BITS:
        scaled = Cat(Const(0, cfg.scale_bits - formats.IMM_BITS), value)[:width]
        value = Mux(opcode == AluOp.SCL, scaled, value)
    return value


def dot_lane(inp, wgt, width):
    """One GEMM lane (docs/isa.md §3.3): Σ_k inp[k]·wgt[k] of int8 elements (bit fields read
    as two's complement), accumulated one product at a time in ``width`` bits, wrapping."""
    total = Const(0, width)
    for i, w in zip(inp, wgt, strict=True):
        product = sign_extend(i, width) * sign_extend(w, width)
        total = (total + product)[:width]
    return total


def sign_extend(value, width):
    """``value`` (a two's complement field) widened to ``width`` bits by repeating its top bit:
    sext of docs/isa.md §3.4."""
    return Cat(value, value[-1].replicate(width - len(value)))


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
        if cfg.alu_scale:
            with m.Case(AluOp.SCL):
                # floor(A·m / 2^15) as a signed division by a power of two: the arithmetic
                # shift of the exact product, kept to the low ``width`` bits (wrapping).
                m_value = b[:cfg.scale_bits].as_signed()
                product = Signal(signed(width + cfg.scale_bits), name=f"{name}_scl_product")
                m.d.comb += product.eq(a * m_value)
                m.d.comb += out.eq((product >> cfg.scale_fraction)[:width])
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


def insn_error(m: Module, insn, *, name, cfg):
    """The decode-time error of ``insn`` at ``cfg`` (docs/isa.md §3.5, codes 1–6 and 8: the
    lowest code of the rules it breaks; SCL is legal only with ``ALU_SCALE`` 1 or 2) or NONE, as a
    new signal."""
    head, mem, alu = insn.head, insn.memory, insn.alu
    opcode = head.opcode
    stage = insn_stage(m, insn, name=f"{name}_stage")
    pads = [mem.y_pad_0, mem.y_pad_1, mem.x_pad_0, mem.x_pad_1]
    broken = {
        ErrorCode.ILLEGAL_OPCODE: ~_among(opcode, Opcode),
        ErrorCode.ILLEGAL_ALU_OPCODE: (opcode == Opcode.ALU) & ~_among(alu.alu_opcode,
                                                                      alu_ops(cfg)),
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
def loop_empty(*, iter_out, iter_in, uop_bgn, uop_end):
    """The loop nest of docs/isa.md §3.3 runs no step: an empty iteration or micro-op range."""
    return (iter_out == 0) | (iter_in == 0) | (uop_end <= uop_bgn)


def loop_offset(i_o, i_i, factor_out, factor_in, width):
    """``i_o·factor_out + i_i·factor_in`` (docs/isa.md §3.3), modulo 2^``width`` (the index
    width: scratchpad indices wrap, docs/isa.md §3). Modulo 2^width only the low ``width``
    bits of a counter matter, so the products are formed at that width (smaller multipliers
    for the solver, the same value)."""
    return (i_o[:width] * factor_out + i_i[:width] * factor_in)[:width]


class LoopNest:
    """The loop nest of docs/isa.md §3.3 as the ISA writes it: ``i_o``, ``i_i`` and ``u``
    counted by nested ``for`` loops (u innermost), one step per ``take``.

    Built into module ``m``: ``start`` loads the nest (the fields stay stable while it runs),
    ``take`` consumes the current step, ``abort`` abandons the rest. The attributes ``valid``,
    ``u``, ``i_o``, ``i_i`` and ``last`` are the step the nest is at (``u`` before it wraps to
    a micro-op row); ``inner_moves`` is 1 in a cycle that moves ``i_i`` on by one,
    ``outer_moves`` in one that moves ``i_o`` on by one (and ``i_i`` back to 0).
    """

    def __init__(self, m, *, start, take, abort, uop_bgn, uop_end, iter_out, iter_in, name):
        self.valid = Signal(name=f"{name}_valid")
        # u runs over [uop_bgn, uop_end), as wide as uop_end; the micro-op row is u modulo the
        # depth (docs/isa.md §3, "Index wrapping").
        self.u = Signal.like(uop_end, name=f"{name}_u")
        self.i_o = Signal(formats.ITER_BITS, name=f"{name}_i_o")
        self.i_i = Signal(formats.ITER_BITS, name=f"{name}_i_i")
        self.last = Signal(name=f"{name}_last")
        self.inner_moves = Signal(name=f"{name}_inner_moves")
        self.outer_moves = Signal(name=f"{name}_outer_moves")
        u_last, i_last, o_last = (self.u + 1 == uop_end, self.i_i + 1 == iter_in,
                                  self.i_o + 1 == iter_out)
        m.d.comb += self.last.eq(u_last & i_last & o_last)
        with m.If(start):
            m.d.sync += [self.valid.eq(~loop_empty(iter_out=iter_out, iter_in=iter_in,
                                                   uop_bgn=uop_bgn, uop_end=uop_end)),
                         self.u.eq(uop_bgn), self.i_i.eq(0), self.i_o.eq(0)]
        with m.Elif(abort):
            m.d.sync += self.valid.eq(0)
        with m.Elif(self.valid & take):
            m.d.sync += self.u.eq(Mux(u_last, uop_bgn, self.u + 1))
            with m.If(u_last):
                m.d.sync += self.i_i.eq(Mux(i_last, 0, self.i_i + 1))
                m.d.comb += self.inner_moves.eq(~i_last)
                with m.If(i_last):
                    m.d.sync += self.i_o.eq(self.i_o + 1)
                    m.d.comb += self.outer_moves.eq(1)
                    with m.If(o_last):
                        m.d.sync += self.valid.eq(0)


class PadRows:
    """The padding rows of a LOAD (docs/isa.md §3.1) one at a time, in increasing row order:
    every (r, c), 0 ≤ r < H, 0 ≤ c < W, outside the data window, at scratchpad row
    ``sram_base + r·W + c`` (modulo 2^16, the ``sram_base`` width).

    Built into module ``m`` for the geometry ``fields`` (the LOAD's ``sram_base``, ``x_size``,
    ``y_size`` and four pads, stable while the walk runs): ``start`` begins at the first pad
    row, ``take`` moves to the next one, ``cancel`` abandons the rest. ``bits`` is the width of
    the row and column counters (enough for H and W). Attributes: ``valid`` (a pad row
    remains), ``r``, ``c`` and its ``addr``.
    """

    def __init__(self, m, *, start, take, cancel, fields, bits, name):
        f = fields
        width = Signal(bits, name=f"{name}_W")
        height = Signal(bits, name=f"{name}_H")
        m.d.comb += [width.eq(f["x_pad_0"] + f["x_size"] + f["x_pad_1"]),
                     height.eq(f["y_pad_0"] + f["y_size"] + f["y_pad_1"])]
        self.r, self.c = Signal(bits, name=f"{name}_r"), Signal(bits, name=f"{name}_c")
        self.valid = Signal(name=f"{name}_valid")
        self.addr = Signal(formats.SRAM_ADDR_BITS, name=f"{name}_addr")
        m.d.comb += [self.addr.eq(f["sram_base"] + self.r * width + self.c)]

        def data_row(row):
            return (row >= f["y_pad_0"]) & (row < f["y_pad_0"] + f["y_size"])

        def row_start(row, name_):
            """The first pad row at or after column 0 of row ``row``, as (r, c) signals."""
            r, c = Signal(bits, name=f"{name}_{name_}_r"), Signal(bits, name=f"{name}_{name_}_c")
            m.d.comb += [r.eq(row), c.eq(0)]
            with m.If(data_row(row) & (f["x_pad_0"] == 0)):
                with m.If(f["x_pad_1"] != 0):
                    m.d.comb += c.eq(f["x_size"])           # the right pad of this data row
                with m.Else():                              # no side pads: past the data rows
                    m.d.comb += r.eq(f["y_pad_0"] + f["y_size"])
            return r, c

        first_r, first_c = row_start(0, "first")
        below_r, below_c = row_start(self.r + 1, "below")
        next_r, next_c = Signal(bits, name=f"{name}_next_r"), Signal(bits, name=f"{name}_next_c")
        with m.If(self.c + 1 == width):
            m.d.comb += [next_r.eq(below_r), next_c.eq(below_c)]
        with m.Elif(data_row(self.r) & (self.c + 1 == f["x_pad_0"])):
            with m.If(f["x_pad_1"] != 0):                   # jump over the data window
                m.d.comb += [next_r.eq(self.r), next_c.eq(f["x_pad_0"] + f["x_size"])]
            with m.Else():
                m.d.comb += [next_r.eq(below_r), next_c.eq(below_c)]
        with m.Else():
            m.d.comb += [next_r.eq(self.r), next_c.eq(self.c + 1)]

        with m.If(start):
            m.d.sync += [self.r.eq(first_r), self.c.eq(first_c), self.valid.eq(first_r < height)]
        with m.Elif(cancel):
            m.d.sync += self.valid.eq(0)
        with m.Elif(take & self.valid):
            m.d.sync += [self.r.eq(next_r), self.c.eq(next_c), self.valid.eq(next_r < height)]
