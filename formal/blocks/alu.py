"""ALU lanes (hw/core/alu_lanes.py) and the ALU unit's operands (hw/core/alu.py) against
docs/isa.md §3.4.

``ops``
    For every operand value and every legal ALU op (MIN, MAX, ADD, SHR both ways, MUL, CLP,
    MOV), each lane of every batch row equals :func:`avta.formal.reference.alu_lane` at the
    configured widths. The lanes are combinational, so this is proven at once (k = 1).
``operands``
    The whole ALU unit (loop, micro-op read, ACC reads, operand selection, write) runs one
    single-step instruction with arbitrary fields, micro-op and ACC rows, immediate or
    two-operand: in the cycle before its one ACC write the lanes (read-only: ``Alu.lanes``)
    get the instruction's op and, lane by lane, A = ACC[src] and B = sext(imm)
    (:func:`avta.formal.reference.sign_extend` to the ACC width) in the immediate form, A =
    ACC[dst] (any A for MOV, which reads only ACC[src]) and B = ACC[src] in the two-operand
    form (docs/isa.md §3.4); the row written,
    at ACC[dst], is the lanes' result. With ``ops`` (the lanes equal the reference for every
    operand) the write is f(A, B) of docs/isa.md §3.4. (One harness comparing the write with
    the reference directly took over 6 minutes per step on z3.) The instruction starts at
    power-on and its one write comes within a few cycles (a cover), so the depth checks it
    completely; it is reported as bounded because the check is BMC. Forwarding between steps
    is not part of it.
"""

from amaranth.hdl import Mux, Signal

from avta.hw.core.alu import Alu
from avta.hw.core.alu_lanes import AluLanes
from avta.hw.core.sram import row_layout
from avta.isa import formats
from avta.isa.enums import AluOp
from avta.isa.layout import layouts

from ..harness import Check, Harness
from ..reference import alu_lane, sign_extend

__all__ = ["checks"]


class AluHarness(Harness):
    def __init__(self, cfg, faults):
        super().__init__()
        self._cfg, self._faults = cfg, faults

    def properties(self, m):
        cfg = self._cfg
        m.submodules.dut = dut = AluLanes(cfg=cfg, faults=self._faults)
        row = row_layout(cfg, "acc")
        op = self.input("op", 3)
        a, b = self.input("a", row.size), self.input("b", row.size)
        self.assume(m, op <= max(AluOp))
        m.d.comb += [dut.op.eq(op), dut.a.eq(a), dut.b.eq(b)]
        out = Signal(row.size)
        m.d.comb += out.eq(dut.out.as_value())
        width = cfg.acc_width
        for lane in range(cfg.batch * cfg.block_out):
            bits = slice(lane * width, (lane + 1) * width)
            want = alu_lane(m, cfg, op, a[bits], b[bits], name=f"want{lane}")
            self.promise(m, out[bits] == want)
        for value in AluOp:
            self.cover(m, (op == value) & (out != 0))


class AluUnitHarness(Harness):
    """One single-step ALU instruction from power-on, on rows the solver picks."""

    def __init__(self, cfg, faults):
        super().__init__()
        self._cfg, self._faults = cfg, faults

    def properties(self, m):
        cfg = self._cfg
        m.submodules.dut = dut = Alu(cfg=cfg, faults=self._faults)
        lay = layouts(cfg)
        row = row_layout(cfg, "acc")
        insn = self.constant(m, "insn", lay.alu.size)
        uop_word = self.constant(m, "uop", lay.uop.size)
        row_src, row_dst = self.constant(m, "acc_src", row.size), self.constant(m, "acc_dst",
                                                                              row.size)
        alu, uop = lay.alu(insn), lay.uop(uop_word)
        # One step: the first micro-op of a 1 × 1 nest, so the offsets are 0.
        self.assume(m, (alu.iter_out == 1) & (alu.iter_in == 1) &
                    (alu.uop_end == alu.uop_bgn + 1) & (alu.alu_opcode <= max(AluOp)))
        m.d.comb += [dut.start.eq(~self.started(m)), dut.abort.eq(0), dut.insn.eq(insn)]

        # The memories: synchronous reads; the micro-op buffer holds the micro-op, ACC holds
        # row_src at src_idx and row_dst at dst_idx (one row when they are the same index).
        src_idx, dst_idx = uop.src_idx, uop.dst_idx
        self.assume(m, (src_idx != dst_idx) | (row_src == row_dst))
        acc_addr = Signal.like(dut.acc_rd.addr)
        m.d.sync += acc_addr.eq(dut.acc_rd.addr)
        m.d.comb += [dut.uop_rd.data.eq(uop_word),
                     dut.acc_rd.data.eq(Mux(acc_addr == src_idx, row_src, row_dst))]
        if cfg.acc_read_ports == 2:
            acc_addr_b = Signal.like(dut.acc_rd_b.addr)
            m.d.sync += acc_addr_b.eq(dut.acc_rd_b.addr)
            m.d.comb += dut.acc_rd_b.data.eq(Mux(acc_addr_b == src_idx, row_src, row_dst))

        # The operands the lanes get (read-only: Alu.lanes) in the step's s2 cycle, and the
        # row written a cycle later: the lanes' own result (alu.ops proves the lanes equal
        # docs/isa.md §3.4 for every operand, so together the write is f(A, B)).
        width = cfg.acc_width
        imm = sign_extend(alu.imm, width)
        assert len(alu.imm) == formats.IMM_BITS
        lanes = dut.lanes
        operands_ok = lanes.op == alu.alu_opcode
        for lane in range(cfg.batch * cfg.block_out):
            bits = slice(lane * width, (lane + 1) * width)
            a = Mux(alu.use_imm, row_src[bits], row_dst[bits])
            b = Mux(alu.use_imm, imm, row_src[bits])
            # MOV's result is B: with two operands it reads only ACC[src], A is free.
            a_ok = (lanes.a.as_value()[bits] == a) | (alu.alu_opcode == AluOp.MOV)
            operands_ok &= a_ok & (lanes.b.as_value()[bits] == b)
        was_ok, was_out = Signal(), Signal(row.size)
        m.d.sync += [was_ok.eq(operands_ok), was_out.eq(lanes.out.as_value())]
        write = dut.acc_wr.en.any()
        self.promise(m, ~write | ((dut.acc_wr.addr == dst_idx) & was_ok &
                                  (dut.acc_wr.data == was_out)))
        wrote = Signal()
        with m.If(write):
            m.d.sync += wrote.eq(1)
        self.promise(m, ~(wrote & write))           # one step: one write
        self.cover(m, write & alu.use_imm & alu.imm[-1] & (alu.alu_opcode == AluOp.ADD))
        self.cover(m, write & ~alu.use_imm & (src_idx != dst_idx) &
                   (alu.alu_opcode == AluOp.MAX))
        self.cover(m, dut.done & write)     # done with the last write


def checks(cfg, faults=frozenset()):
    return [Check("alu", "ops", "every lane equals docs/isa.md §3.4 for every op and operand",
                  lambda: AluHarness(cfg, faults), depth=1, solver="z3"),
            Check("alu", "operands", "one ALU step writes f(ACC[src], sext(imm)) or "
                  "f(ACC[dst], ACC[src]) to ACC[dst], lane by lane (docs/isa.md §3.4)",
                  lambda: AluUnitHarness(cfg, faults), depth=8, prove=False)]
