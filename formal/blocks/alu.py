"""ALU lanes (hw/core/alu_lanes.py) and the ALU unit's operands (hw/core/alu.py) against
docs/isa.md §3.4.

``ops``
    For every operand value and every legal ALU op (MIN, MAX, ADD, SHR both ways, MUL, CLP,
    MOV, and SCL where ``ALU_SCALE`` is 1), each lane of every batch row equals :func:`avta.formal.reference.alu_lane` at the
    configured widths. The lanes are combinational, so this is proven at once (k = 1).
``operands``
    The whole ALU unit (loop, micro-op read, ACC reads, operand selection, write) runs one
    single-step instruction with arbitrary fields, micro-op and ACC rows, immediate or
    two-operand: in the cycle before its one ACC write the lanes (read-only: ``Alu.lanes``)
    get the instruction's op and, lane by lane, A = ACC[src] and B = sext(imm), for SCL
    sext(imm) · 2^(W−16) (:func:`avta.formal.reference.alu_imm`) in the immediate form, A =
    ACC[dst] (any A for MOV, which reads only ACC[src]) and B = ACC[src] in the two-operand
    form (docs/isa.md §3.4); the row written,
    at ACC[dst], is the lanes' result. With ``ops`` (the lanes equal the reference for every
    operand) the write is f(A, B) of docs/isa.md §3.4. (One harness comparing the write with
    the reference directly took over 6 minutes per step on z3.) The instruction starts at
    power-on and its one write comes within a few cycles (a cover), so the depth checks it
    completely; it is reported as bounded because the check is BMC. Forwarding between steps
    is not part of it (that is ``pipe``).
``pipe``
    Forwarding between the steps of one instruction: the whole ALU unit runs one instruction
    with arbitrary fields (any iteration counts and factors, any micro-op range, immediate or
    two-operand) from power-on; every micro-op read returns free data (held until the next
    read, as a synchronous port does), and ACC is modelled for two rows the solver picks,
    ``row_dst`` and ``row_src``, which start free and follow every write (a read in the cycle
    of a write returns the new row: the transparent ports the unit requires); other rows read
    free. The solver picks a step k (one of the first 2^:data:`STEP_BITS`) whose indices, its
    micro-op's ``dst_idx``/``src_idx`` plus the loop's offsets (``Alu.loop``, read-only;
    ``loop_gen.offsets`` proves them), are those two rows. In the cycle before the k-th ACC
    write the lanes (``Alu.lanes``) get the op and the operands an unpipelined unit would read
    after steps 0 .. k−1 have all written (every earlier step's write included, back to back
    or at any distance); the k-th write is the whole row ``row_dst`` with the lanes' result.
    Every write is a whole row, there are never more writes than steps, and ``done`` comes
    with one write per step. The lanes are replaced by :class:`AnyLanes` (any result in every
    cycle): the promise is relative to their inputs and result, and ``ops`` proves their
    function, so together each step writes f(A, B) of docs/isa.md §3.4 of the operands an
    unpipelined unit reads. Bounded (BMC, :data:`PIPE_DEPTH`).
"""

import functools
import operator

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from avta.hw.core.alu import Alu
from avta.hw.core.alu_lanes import AluLanes
from avta.hw.core.sram import geometry, row_layout
from avta.isa import formats
from avta.isa.enums import AluOp
from avta.isa.layout import layouts
from avta.isa.legality import alu_ops

from ..harness import Check, Harness
from ..reference import alu_imm, alu_lane

__all__ = ["checks", "STEP_BITS"]

#: Width of the step count ``pipe`` tracks a step by (one of the first 2^STEP_BITS steps).
STEP_BITS = 3
#: ``pipe``'s BMC depth (cycles from power-on).
PIPE_DEPTH = 12


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
        self.assume(m, _legal_op(cfg, op))
        m.d.comb += [dut.op.eq(op), dut.a.eq(a), dut.b.eq(b)]
        out = Signal(row.size)
        m.d.comb += out.eq(dut.out.as_value())
        width = cfg.acc_width
        for lane in range(cfg.batch * cfg.block_out):
            bits = slice(lane * width, (lane + 1) * width)
            want = alu_lane(m, cfg, op, a[bits], b[bits], name=f"want{lane}")
            self.promise(m, out[bits] == want)
        for value in alu_ops(cfg):
            self.cover(m, (op == value) & (out != 0))


def _legal_op(cfg, op):
    """``op`` is an ALU operation of ``cfg`` (SCL only with ``ALU_SCALE`` 1 or 2)."""
    return functools.reduce(operator.or_, (op == int(value) for value in alu_ops(cfg)))


def _operands_ok(cfg, lanes, alu, row_dst, row_src):
    """The lanes get ``alu``'s op and, lane by lane, A = ``row_src``, B = sext(imm) (for SCL
    sext(imm) · 2^(W−16); immediate form) or A = ``row_dst``, B = ``row_src`` (two-operand; any A for MOV, which
    reads only ACC[src]): docs/isa.md §3.4."""
    width = cfg.acc_width
    imm = alu_imm(cfg, alu.alu_opcode, alu.imm)
    assert len(alu.imm) == formats.IMM_BITS
    ok = lanes.op == alu.alu_opcode
    for lane in range(cfg.batch * cfg.block_out):
        bits = slice(lane * width, (lane + 1) * width)
        a = Mux(alu.use_imm, row_src[bits], row_dst[bits])
        b = Mux(alu.use_imm, imm, row_src[bits])
        # MOV's result is B: with two operands it reads only ACC[src], A is free.
        a_ok = (lanes.a.as_value()[bits] == a) | (alu.alu_opcode == AluOp.MOV)
        ok &= a_ok & (lanes.b.as_value()[bits] == b)
    return ok


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
                    (alu.uop_end == alu.uop_bgn + 1) & _legal_op(cfg, alu.alu_opcode))
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

        # The operands the lanes get (read-only: Alu.lanes) in the step's s3 cycle, and the
        # row written a cycle later: the lanes' own result (alu.ops proves the lanes equal
        # docs/isa.md §3.4 for every operand, so together the write is f(A, B)).
        lanes = dut.lanes
        operands_ok = _operands_ok(cfg, lanes, alu, row_dst, row_src)
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


class AnyLanes(wiring.Component):
    """Stands in for the ALU lanes (``Alu.lanes``) in ``pipe``: the same ports, and any result
    (the harness's free input ``value``) in every cycle. ``pipe`` promises operands and a
    write relative to the lanes' inputs and result, so proving it for every result proves it
    for the real lanes, whose function ``ops`` proves; and the solver never meets their
    multiplier and shifter (with them, default's 16 lanes took 7.5 minutes to cycle 8)."""

    def __init__(self, signature, value):
        self._value = value
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.out.eq(self._value)
        return m


class AluPipeHarness(Harness):
    """One ALU instruction from power-on; step k's operands against an unpipelined unit's."""

    def __init__(self, cfg, faults):
        super().__init__()
        self._cfg, self._faults = cfg, faults

    def properties(self, m):
        cfg = self._cfg
        lay = layouts(cfg)
        row = row_layout(cfg, "acc")
        dut = Alu(cfg=cfg, faults=self._faults)
        dut.lanes._MustUse__silence = True      # replaced before the unit is elaborated
        dut.lanes = AnyLanes(dut.lanes.signature, self.input("lanes_out", row.size))
        m.submodules.dut = dut
        acc_bits = geometry(cfg, "acc").addr_bits
        insn = self.constant(m, "insn", lay.alu.size)
        alu = lay.alu(insn)
        self.assume(m, _legal_op(cfg, alu.alu_opcode))
        started = self.started(m)
        m.d.comb += [dut.start.eq(~started), dut.abort.eq(0), dut.insn.eq(insn)]

        # The micro-op buffer: every read returns free data, held until the next read; but a
        # read of the row the read before it read returns that row again (nothing writes the
        # buffer while the unit runs): the unit relies on it where one micro-op's steps reuse
        # their src row (hw/core/alu.py).
        uop_free = self.input("uop_data", len(dut.uop_rd.data))
        uop_read, uop_held = Signal(), Signal(len(dut.uop_rd.data))
        read_addr, last_addr = Signal.like(dut.uop_rd.addr), Signal.like(dut.uop_rd.addr)
        read_before = Signal()
        m.d.sync += uop_read.eq(dut.uop_rd.en)
        with m.If(dut.uop_rd.en):
            m.d.sync += [read_addr.eq(dut.uop_rd.addr), last_addr.eq(read_addr)]
        with m.If(uop_read):
            m.d.sync += read_before.eq(1)
        self.assume(m, ~(uop_read & read_before & (read_addr == last_addr))
                    | (uop_free == uop_held))
        m.d.comb += dut.uop_rd.data.eq(Mux(uop_read, uop_free, uop_held))
        m.d.sync += uop_held.eq(dut.uop_rd.data)

        # ACC: rows row_dst and row_src hold what an unpipelined unit would see (free at
        # power-on, then every write to them); ``after`` includes this cycle's write.
        wr = dut.acc_wr
        writing = wr.en.any()
        self.promise(m, ~writing | wr.en.all())         # whole rows only
        rows, inits, after = {}, {}, {}
        for op in ("dst", "src"):
            rows[op] = self.constant(m, f"row_{op}", acc_bits)
            init = inits[op] = self.input(f"acc_{op}_init", row.size)
            held, now = Signal(row.size, name=f"acc_{op}"), Signal(row.size, name=f"acc_{op}_now")
            m.d.comb += now.eq(Mux(started, held, init))
            after[op] = Signal(row.size, name=f"acc_{op}_after")
            m.d.comb += after[op].eq(Mux(writing & (wr.addr == rows[op]), wr.data, now))
            m.d.sync += held.eq(after[op])
        same = rows["dst"] == rows["src"]
        self.assume(m, started | ~same | (inits["dst"] == inits["src"]))
        ports = [dut.acc_rd] + ([dut.acc_rd_b] if cfg.acc_read_ports == 2 else [])
        for index, port in enumerate(ports):
            other = self.input(f"acc_other{index}", row.size)
            returned = Signal(row.size, name=f"acc_returned{index}")
            with m.If(port.en):
                m.d.sync += returned.eq(Mux(port.addr == rows["dst"], after["dst"],
                                            Mux(port.addr == rows["src"], after["src"], other)))
            m.d.comb += port.data.eq(returned)

        # Step k (the solver picks k): its indices are the two rows. The loop offers the step
        # with its offsets; its micro-op arrives the cycle after.
        k = self.constant(m, "k", STEP_BITS)
        issued, writes = Signal(STEP_BITS + 1), Signal(STEP_BITS + 1)
        with m.If(dut.step & ~issued[-1]):
            m.d.sync += issued.eq(issued + 1)
        with m.If(writing & ~writes[-1]):
            m.d.sync += writes.eq(writes + 1)
        t1 = Signal()
        offsets = {op: Signal(acc_bits, name=f"k_{op}_offset") for op in rows}
        m.d.sync += t1.eq(dut.step & (issued == k))
        with m.If(dut.step):
            m.d.sync += [offsets[op].eq(getattr(dut.loop, op)) for op in rows]
        uop = lay.uop(dut.uop_rd.data)
        for op in rows:
            index = (getattr(uop, f"{op}_idx") + offsets[op])[:acc_bits]
            self.assume(m, ~t1 | (index == rows[op]))

        # The k-th write (the steps write in order): in the cycle before it the lanes got the
        # operands of the rows as they are after every earlier step's write; it writes the
        # lanes' result to row_dst.
        ok = _operands_ok(cfg, dut.lanes, alu, after["dst"], after["src"])
        was_ok, was_out = Signal(), Signal(row.size)
        m.d.sync += [was_ok.eq(ok), was_out.eq(dut.lanes.out.as_value())]
        kth = writing & (writes == k)
        self.promise(m, ~kth | ((wr.addr == rows["dst"]) & was_ok & (wr.data == was_out)))
        self.promise(m, writes <= issued)
        self.promise(m, ~dut.done | issued[-1] | (writes + writing == issued))

        # Covers: step k reads a row the step before it wrote in one of the two cycles before
        # (a write that had not landed when the read was issued: II = 1, or 2 for two operands
        # on one ACC read port), immediate and two-operand.
        wrote = Signal(2)
        m.d.sync += wrote.eq(Cat(writing & ((wr.addr == rows["src"]) | (wr.addr == rows["dst"])),
                                 wrote[0]))
        self.cover(m, kth & wrote.any() & alu.use_imm & (alu.alu_opcode == AluOp.ADD))
        self.cover(m, kth & wrote.any() & ~alu.use_imm & (alu.alu_opcode == AluOp.MAX) & ~same)
        self.cover(m, dut.done & kth & (k != 0))
        # ... and a step that reuses the held src row (one micro-op, src still in the inner
        # loop, not the first step) after an earlier step wrote that row.
        src_written = Signal()
        with m.If(writing & (wr.addr == rows["src"])):
            m.d.sync += src_written.eq(1)
        self.cover(m, kth & (k != 0) & (k < alu.iter_in) & (alu.uop_end == alu.uop_bgn + 1)
                   & (alu.src_factor_in == 0) & ~alu.use_imm & (alu.alu_opcode == AluOp.ADD)
                   & src_written)


def checks(cfg, faults=frozenset()):
    return [Check("alu", "ops", "every lane equals docs/isa.md §3.4 for every op and operand",
                  lambda: AluHarness(cfg, faults), depth=1, solver="z3"),
            Check("alu", "operands", "one ALU step writes f(ACC[src], sext(imm)) or "
                  "f(ACC[dst], ACC[src]) to ACC[dst], lane by lane (docs/isa.md §3.4)",
                  lambda: AluUnitHarness(cfg, faults), depth=8, prove=False),
            Check("alu", "pipe", "every step's operands are the rows as an unpipelined unit "
                  "reads them (every earlier step's write included) and its write is the "
                  "lanes' result at its dst row",
                  lambda: AluPipeHarness(cfg, faults), depth=PIPE_DEPTH, prove=False)]
