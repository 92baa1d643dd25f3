"""The ALU unit (docs/isa.md §3.4): II = 1 with an immediate, two-operand II = 2 with one ACC read
port (``ACC_READ_PORTS: 1``) and II = 1 with two.

Pipeline:

====  ===================================================================================
s0    :class:`LoopGen` offers the step; the micro-op buffer is read.
s1    the micro-op arrives; indices = micro-op fields + offsets, registered.
s2    ACC[src] is read (port A), and ACC[dst] too when the operation needs it: on port B
      in the same cycle, or on port A one cycle later (the step then spends two cycles in
      s2, and the steps behind it wait in s1 and s0) unless the step reuses the src row of
      the step before (below): then only ACC[dst] is read, in one cycle.
s3    operands arrive, forwarded (from the write landing now, and from the result of the step
      in s4, which writes next), and are registered as the lanes' A and B.
s4    the registered operands go to :class:`AluLanes`; the result is registered.
s5    the result is written to ACC[dst] (the compute stage mirrors it to OUT).
====  ===================================================================================

The register between s3 and s4 keeps the ACC block RAM's read, the banks' forwarding and this
unit's forwarding out of the path through the lanes (on an ECP5 that path was the core's
longest); the index register between s1 and s2 keeps the micro-op block RAM's clock-to-out and
the index adders out of the ACC read address and the banks' forwarding match behind it. Each
costs every ALU instruction one cycle (:data:`avta.isa.costs.ALU_FILL`).

A reused src row (docs/isa.md §3.4, timing; one ACC read port only): with one micro-op
(``uop_end = uop_bgn + 1``), a two-operand step whose loop src offset equals the step before's
reads the same ACC[src] row, which the unit still holds (``src_hold``, kept current by every
write to its row); such a step reads only ACC[dst]. Whether a step reuses is decided as it
enters s1, by comparing the offset the loop offers with the one it offered last (both
registers), and travels with the step (``reuse1``, ``reuse2``): the issue path (``advance``)
gains one AND input from a register, no comparator. The rule is the loop's, not the rows': two
micro-ops that name one src row still read it at each step, so the cost model
(:func:`avta.isa.costs.alu_cycles`) needs nothing but the instruction.

Read-after-write at any distance, through dst and src (docs/isa.md §3.4): a read issued in the cycle
of a write returns the new data (transparent ports); every operand value that was read before a
write and is still waiting (in s3, in the s4 operand register, or ACC[src] held through the
second s2 cycle) is replaced by the write data when the indices match, and an operand entering
the s4 register by the result of the step in s4 (the next write) when its row is that step's. So each step sees all
earlier steps with no interlock.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from avta.isa.enums import AluOp
from avta.isa.formats import IMM_BITS
from avta.isa.layout import layouts

from .alu_lanes import AluLanes
from .faults import FaultName
from .loop_gen import LoopGen, instruction_control
from .sram import geometry, read_signature, row_layout, write_signature

__all__ = ["Alu"]


class Alu(wiring.Component):
    """Executes one ALU instruction at a time.

    Ports
    -----
    start : In(1)
        Begin executing ``insn`` (stable until ``done``).
    abort : In(1)
        The run has failed (docs/isa.md §3.5): abandon the remaining steps; ``done`` follows as
        soon as the steps already issued have written.
    insn : In(layouts(cfg).alu)
    done : Out(1)
        One-cycle pulse in the cycle of the last ACC write (or after ``start`` for a degenerate
        loop).
    step : Out(1)
        A micro-op step was issued (ALU_STEPS counter).
    uop_rd : In(ReadPort.Signature)
    acc_rd : In(ReadPort.Signature), one per ``cfg.acc_read_ports`` (``acc_rd``, ``acc_rd_b``)
        Synchronous ACC read ports, transparent to the ACC write port.
    acc_wr : In(WritePort.Signature)
        Full-row ACC writes.
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        self._geo = {p: geometry(cfg, p) for p in ("uop", "acc")}
        members = {
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).alu), "done": Out(1),
            "step": Out(1),
            "uop_rd": In(read_signature(self._geo["uop"])),
            "acc_rd": In(read_signature(self._geo["acc"])),
            "acc_wr": In(write_signature(self._geo["acc"])),
        }
        if cfg.acc_read_ports == 2:
            members["acc_rd_b"] = In(read_signature(self._geo["acc"]))
        super().__init__(members)
        # Created here so that the proofs (avta.formal.blocks.alu) can read the steps the loop
        # offers and the operands the lanes get; submodules, not ports, so the Verilog is
        # unchanged.
        acc_bits = self._geo["acc"].addr_bits
        self.loop = LoopGen(uop_bits=self._geo["uop"].addr_bits,
                            offset_bits={"dst": acc_bits, "src": acc_bits, "wgt": 1},
                            faults=faults)
        self.lanes = AluLanes(cfg=cfg, faults=faults)

    def elaborate(self, platform):
        m = Module()
        cfg, insn, geo = self._cfg, self.insn, self._geo
        two_ports = cfg.acc_read_ports == 2
        acc_bits = geo["acc"].addr_bits

        # A = ACC[dst] only for a two-operand op other than MOV (docs/isa.md §3.4).
        needs_dst = ~insn.use_imm & (insn.alu_opcode != AluOp.MOV)
        serial = needs_dst if not two_ports else Const(0, 1)    # read dst a cycle after src

        # -- s0 -----------------------------------------------------------------------------------
        m.submodules.loop = loop = self.loop
        for name in ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out",
                     "dst_factor_in", "src_factor_out", "src_factor_in"):
            m.d.comb += getattr(loop, name).eq(getattr(insn, name))
        if FaultName.ALU_UOP_BGN in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            m.d.comb += loop.uop_bgn.eq(insn.uop_bgn[:-1])
        m.d.comb += [loop.start.eq(self.start), loop.abort.eq(self.abort),
                     loop.wgt_factor_out.eq(0), loop.wgt_factor_in.eq(0)]

        # -- s1: the micro-op arrives; indices --------------------------------------------------
        # A step stays in s2 for a second cycle when it reads its operands one after the other;
        # the steps behind it wait in s1 and s0 (the micro-op port holds its data without en).
        v1, last1, v2, last2, phase = Signal(), Signal(), Signal(), Signal(), Signal()
        dst_off1, src_off1 = Signal(acc_bits), Signal(acc_bits)
        # reuse1/reuse2: the step in s1/s2 reuses the src row of the step before (held in
        # src_hold), so it reads only ACC[dst]; never with two ports, where nothing waits.
        reuse1, reuse2 = Signal(), Signal()
        s2_leaves = v2 & (~serial | reuse2 | phase)
        advance = ~v2 | s2_leaves
        m.d.comb += [loop.advance.eq(advance), self.step.eq(loop.valid & advance),
                     self.uop_rd.addr.eq(loop.uop), self.uop_rd.en.eq(loop.valid & advance)]
        uop = data.View(layouts(cfg).uop, self.uop_rd.data)
        dst2, src2 = Signal(acc_bits), Signal(acc_bits)
        with m.If(advance):
            m.d.sync += [v1.eq(loop.valid), last1.eq(loop.last), dst_off1.eq(loop.dst),
                         src_off1.eq(loop.src)]
            # -- s2: the registered indices ---------------------------------------------------
            m.d.sync += [v2.eq(v1), last2.eq(last1), dst2.eq(uop.dst_idx + dst_off1),
                         src2.eq(uop.src_idx + src_off1), reuse2.eq(reuse1), phase.eq(0)]
        with m.Else():
            m.d.sync += phase.eq(1)
        if not two_ports:
            self._reuse_decision(m, loop, advance, reuse1, serial)
        m.d.comb += [self.acc_rd.addr.eq(Mux(phase | reuse2, dst2, src2)),
                     self.acc_rd.en.eq(v2)]
        if two_ports:
            m.d.comb += [self.acc_rd_b.addr.eq(dst2), self.acc_rd_b.en.eq(v2)]

        wr = self.acc_wr

        def forward(value, index):
            """``value`` as read before this cycle's write to ``index`` (if any) lands."""
            if FaultName.ALU_NO_FORWARD in self._faults:
                # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                return value
            return Mux(wr.en.any() & (wr.addr == index), wr.data, value)

        # ACC[src], read in the first of two s2 cycles, waits here for ACC[dst]; and stays, for
        # the steps that reuse its row, taking every write to that row (hold_row) meanwhile.
        src_hold = Signal(row_layout(cfg, "acc"))
        hold_row = Signal(acc_bits)
        with m.If(v2 & serial & phase):
            m.d.sync += [src_hold.eq(forward(self.acc_rd.data, src2)), hold_row.eq(src2)]
        if FaultName.ALU_NO_FORWARD not in self._faults and not two_ports:
            with m.Elif(wr.en.any() & (wr.addr == hold_row)):
                m.d.sync += src_hold.eq(wr.data)

        # -- s3 -----------------------------------------------------------------------------------
        v3, last3, held3 = Signal(), Signal(), Signal()
        dst3, src3 = Signal(acc_bits), Signal(acc_bits)
        m.d.sync += [v3.eq(s2_leaves), last3.eq(last2), held3.eq(serial),
                     dst3.eq(dst2), src3.eq(src2)]
        src_val = Signal(row_layout(cfg, "acc"))
        dst_val = Signal(row_layout(cfg, "acc"))
        dst_read = self.acc_rd_b.data if two_ports else self.acc_rd.data
        m.d.comb += [src_val.eq(forward(Mux(held3, src_hold, self.acc_rd.data), src3)),
                     dst_val.eq(forward(dst_read, dst3))]

        imm_row = Signal(row_layout(cfg, "acc"))
        imm = insn.imm.as_signed()
        if FaultName.ALU_IMM_ZEXT in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            imm = insn.imm.as_unsigned()
        if cfg.scale_bits > IMM_BITS:
            # SCL's immediate is its multiplier's top 16 bits, sext(imm) · 2^(W−16) (§3.4).
            imm = Mux(insn.alu_opcode == AluOp.SCL, imm << (cfg.scale_bits - IMM_BITS), imm)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                m.d.comb += imm_row[b][o].eq(imm)

        # -- s4 -----------------------------------------------------------------------------------
        # While a step's operands wait for s4, the step ahead of it (in s4 now, in s5 then) writes
        # its row. Whether that row is an operand's is decided now, and the step ahead's result
        # (the lanes' output now, the write data then) is registered in the operand's place: the
        # lanes' operands are flip-flops, with no forwarding mux (and no select fanning out to
        # every operand bit) between them and the lanes.
        v4, last4 = Signal(), Signal()
        dst4 = Signal(acc_bits)
        src_hit = v4 & (dst4 == src3)
        dst_hit = v4 & (dst4 == dst3)
        if FaultName.ALU_NO_FORWARD in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            src_hit = dst_hit = Const(0, 1)
        a_hit = Mux(insn.use_imm, src_hit, dst_hit)
        b_hit = ~insn.use_imm & src_hit
        m.submodules.lanes = lanes = self.lanes
        m.d.comb += lanes.op.eq(insn.alu_opcode)
        m.d.sync += [v4.eq(v3), last4.eq(last3), dst4.eq(dst3),
                     lanes.a.eq(Mux(a_hit, lanes.out, Mux(insn.use_imm, src_val, dst_val))),
                     lanes.b.eq(Mux(b_hit, lanes.out, Mux(insn.use_imm, imm_row, src_val)))]

        # -- s5 -----------------------------------------------------------------------------------
        v5, last5 = Signal(), Signal()
        dst5 = Signal(acc_bits)
        result5 = Signal(row_layout(cfg, "acc"))
        m.d.sync += [v5.eq(v4), last5.eq(last4), dst5.eq(dst4), result5.eq(lanes.out)]
        m.d.comb += [wr.addr.eq(dst5), wr.data.eq(result5),
                     wr.en.eq(v5.replicate(geo["acc"].en_bits))]

        # -- control ------------------------------------------------------------------------------
        instruction_control(m, name="alu", start=self.start, empty=loop.empty,
                            retired=v5 & last5, done=self.done, abort=self.abort,
                            in_flight=loop.valid | v1 | v2 | v3 | v4 | v5)
        return m

    def _reuse_decision(self, m, loop, advance, reuse1, serial):
        """``reuse1``, registered as a step enters s1: a two-operand step (``serial``: it would
        read ACC[src] and ACC[dst] one after the other), one micro-op, and the loop's src offset
        equal to the last step's (``last_src``; none yet after ``start``)."""
        insn = self.insn
        last_src = Signal.like(loop.src)
        last_valid = Signal()
        with m.If(self.start):
            m.d.sync += last_valid.eq(0)
        with m.Elif(loop.valid & advance):
            m.d.sync += [last_src.eq(loop.src), last_valid.eq(1)]
        with m.If(advance):
            m.d.sync += reuse1.eq(serial & loop.valid & last_valid & (loop.src == last_src)
                                  & (insn.uop_end == insn.uop_bgn + 1))
