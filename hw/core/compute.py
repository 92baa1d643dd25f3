"""The compute stage's execution units behind one start/done interface (docs/isa.md §3).

The compute stage executes LOAD UOP/ACC/ACC_8BIT (:class:`TensorLoad`), GEMM (:class:`Gemm`),
ALU (:class:`Alu`) and FINISH, one at a time; the instruction's opcode picks the unit. They share
the scratchpad ports: one micro-op read port, the ACC read port(s) and the ACC write port, whose
writes are mirrored into OUT (docs/isa.md §3: every ACC row write also writes the low 8 bits of each
lane into the OUT row of the same index).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from avta.isa.enums import Opcode
from avta.isa.layout import layouts

from ..mem_client import ADDR_BITS
from .alu import Alu
from .gemm import Gemm
from .sram import SCRATCHPADS, geometry, read_signature, write_signature
from .tensor_load import COMPUTE_STAGE_TYPES, TensorLoad, count_layout

__all__ = ["Compute"]


class Compute(wiring.Component):
    """LOAD (compute-stage memory types), GEMM, ALU and FINISH.

    Ports
    -----
    start : In(1)
        Begin ``insn`` (stable until ``done``).
    abort : In(1)
        The run has failed (docs/isa.md §3.5): abandon the remaining steps; ``done`` follows as
        soon as the steps already issued have written.
    insn : In(layouts(cfg).insn)
    done : Out(1)
        One-cycle pulse when the instruction has completed.
    err : Out(1)
        With ``done``: a LOAD met a DRAM error.
    finish : Out(1)
        With ``done``: the instruction was FINISH.
    uop_base, acc_base : In(32)
    mem : Out(ReadClientSignature)
        The loads' memory-engine read client.
    uop_wr, uop_rd, inp_rd, wgt_rd, acc_rd, acc_rd_b (ACC_READ_PORTS = 2), acc_wr, out_wr
        Scratchpad ports; ACC read ports are transparent to ``acc_wr``.
    gemm_step, alu_step, acc_write : Out(1)
        Counter events: a GEMM / ALU micro-op step issued, an ACC row written this cycle.
    count, count_valid : Out
        Bytes loaded per row command (UOP_LD, ACC_LD).
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        self._loader = TensorLoad(cfg=cfg, types=COMPUTE_STAGE_TYPES, faults=faults)
        geo = {p: geometry(cfg, p) for p in SCRATCHPADS}
        members = {
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).insn),
            "done": Out(1), "err": Out(1), "finish": Out(1),
            "uop_base": In(ADDR_BITS), "acc_base": In(ADDR_BITS),
            "mem": Out(self._loader.signature.members["mem"].signature),
            "uop_wr": In(write_signature(geo["uop"])), "uop_rd": In(read_signature(geo["uop"])),
            "inp_rd": In(read_signature(geo["inp"])), "wgt_rd": In(read_signature(geo["wgt"])),
            "acc_rd": In(read_signature(geo["acc"])), "acc_wr": In(write_signature(geo["acc"])),
            "out_wr": In(write_signature(geo["out"])),
            "gemm_step": Out(1), "alu_step": Out(1), "acc_write": Out(1),
            "count": Out(count_layout()), "count_valid": Out(1),
        }
        if cfg.acc_read_ports == 2:
            members["acc_rd_b"] = In(read_signature(geo["acc"]))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cfg, insn = self._cfg, self.insn
        opcode = insn.head.opcode
        m.submodules.loader = loader = self._loader
        m.submodules.gemm = gemm = Gemm(cfg=cfg, faults=self._faults)
        m.submodules.alu = alu = Alu(cfg=cfg, faults=self._faults)

        m.d.comb += [
            loader.insn.eq(insn.memory), gemm.insn.eq(insn.gemm), alu.insn.eq(insn.alu),
            loader.start.eq(self.start & (opcode == Opcode.LOAD)),
            gemm.start.eq(self.start & (opcode == Opcode.GEMM)),
            alu.start.eq(self.start & (opcode == Opcode.ALU)),
            gemm.abort.eq(self.abort), alu.abort.eq(self.abort), loader.abort.eq(self.abort),
            loader.uop_base.eq(self.uop_base), loader.acc_base.eq(self.acc_base),
            self.gemm_step.eq(gemm.step), self.alu_step.eq(alu.step),
            self.count.eq(loader.count), self.count_valid.eq(loader.count_valid),
        ]
        connect(m, flipped(self.mem), loader.mem)
        connect(m, flipped(self.uop_wr), loader.uop_wr)

        finishing = Signal()
        m.d.sync += finishing.eq(self.start & (opcode == Opcode.FINISH))
        m.d.comb += [
            self.done.eq(loader.done | gemm.done | alu.done | finishing),
            self.err.eq(loader.done & loader.err),
            self.finish.eq(finishing),
        ]

        # Shared read ports: GEMM and ALU never run at once; the opcode says whose they are.
        is_gemm = opcode == Opcode.GEMM
        for port in ("uop_rd", "acc_rd"):
            ours, g, a = getattr(self, port), getattr(gemm, port), getattr(alu, port)
            with m.If(is_gemm):
                m.d.comb += [ours.addr.eq(g.addr), ours.en.eq(g.en)]
            with m.Else():
                m.d.comb += [ours.addr.eq(a.addr), ours.en.eq(a.en)]
            m.d.comb += [g.data.eq(ours.data), a.data.eq(ours.data)]
        connect(m, flipped(self.inp_rd), gemm.inp_rd)
        connect(m, flipped(self.wgt_rd), gemm.wgt_rd)
        if cfg.acc_read_ports == 2:
            connect(m, flipped(self.acc_rd_b), alu.acc_rd_b)

        # One ACC write port; each unit drives its enables only while it writes.
        acc = self.acc_wr
        for unit in (gemm, alu):
            with m.If(unit.acc_wr.en.any()):
                m.d.comb += [acc.addr.eq(unit.acc_wr.addr), acc.data.eq(unit.acc_wr.data),
                             acc.en.eq(unit.acc_wr.en)]
        with m.If(~gemm.acc_wr.en.any() & ~alu.acc_wr.en.any()):
            m.d.comb += [acc.addr.eq(loader.acc_wr.addr), acc.data.eq(loader.acc_wr.data),
                         acc.en.eq(loader.acc_wr.en)]
        m.d.comb += self.acc_write.eq(acc.en.any())

        # OUT mirrors ACC: the low byte of each 32-bit lane, under the same enables.
        lanes = geometry(cfg, "acc").row_bits // cfg.acc_width
        m.d.comb += [
            self.out_wr.addr.eq(acc.addr),
            self.out_wr.data.eq(Cat(acc.data.word_select(i, cfg.acc_width)[:cfg.out_width]
                                    for i in range(lanes))),
            self.out_wr.en.eq(acc.en),
        ]
        return m
