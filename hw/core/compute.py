"""The compute stage's execution units behind one start/done interface (docs/isa.md §3).

The compute stage executes LOAD UOP/ACC/ACC_8BIT (:class:`TensorLoad`), GEMM (:class:`Gemm`),
ALU (:class:`Alu`) and FINISH; the instruction's opcode picks the unit. Every ACC row write also
writes the low 8 bits of each lane into the OUT row of the same index (docs/isa.md §3).

**GEMM beside ALU** (docs/architecture.md, "Compute stage"). An ALU instruction is *detached*: it
leaves the queue as it starts (its copy is latched here) and runs on its own ports while the
stage starts the next instruction, if that is a GEMM; anything else waits for the ALU
(:class:`~.stage_control.StageControl`). The result must be the one of running the two one after
the other (docs/isa.md §3.3, §3.4), and the ALU is the older, so the GEMM must not touch an ACC
row the ALU still reads or writes. When the ALU starts, its micro-op is read and the rows it uses
are bounded: with one micro-op ``u`` (the common case: a pass over a tile), dst rows lie in
``u.dst + [0, (iter_out − 1)·dst_factor_out + (iter_in − 1)·dst_factor_in]`` and src rows
likewise. A GEMM step whose ACC row lies in a bank either range reaches (ACC is two banks of
one write and one read port each, hw/core/banks.py), or any step while the ranges are not known
(several micro-ops, indices that wrap, the cycle after the ALU starts), is held in the GEMM's s1
until the ALU completes. So the GEMM runs at full speed in the other bank (a virtual thread's
next tile while the previous one is requantized) and waits otherwise.

Ports per unit: the GEMM and the loads share ``uop_rd``/``out_wr`` (a load runs only when no
unit does); the GEMM writes ACC on ``acc_wr``, the loads on ``load_acc_wr``; the ALU has its own
(``alu_*``): logical ports, which the scratchpads map onto their banks and copies (a UOP copy for
the ALU's micro-op reads, an ACC copy for its second operand when ``ACC_READ_PORTS`` is 2; ACC and
OUT banks for the two writers).

**A LOAD's ACC writes are not forwarded** (hw/core/banks.py): ACC's read ports return the GEMM's
and the ALU's writes in the cycle they land, not the loader's, so that the loader's beat and pad
logic stays out of the banks' forwarding match (it bound the core on an FPGA:
docs/architecture.md). No read meets a LOAD's write in its cycle: a LOAD starts only when no unit
runs (the stage control waits for a detached ALU; a GEMM's last write precedes its ``done``), its
writes reach ACC a cycle after its row writer and pad walker make them (a register), so in the
cycle of its ``done`` at the latest (the loader's DONE state follows its last write), and the next
instruction starts a cycle after that and reads ACC later still.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from avta.isa.enums import Opcode
from avta.isa.memories import scratchpad
from avta.isa.layout import layouts

from ..mem_client import ADDR_BITS
from .alu import Alu
from .faults import FaultName
from .gemm import Gemm
from .sram import SCRATCHPADS, geometry, read_signature, write_signature
from .tensor_load import COMPUTE_STAGE_TYPES, TensorLoad, count_layout

__all__ = ["Compute", "connect_scratchpads"]


def connect_scratchpads(m, unit, cfg, wr, rd):
    """Connect in ``m`` the scratchpad ports of ``unit`` (a :class:`Compute`, or a unit with its
    signature) to the ports of :func:`~.sram.scratchpad_ports` (``wr``, ``rd``): the core's
    wiring, which the compute stage's formal check (formal/blocks/compute.py) uses too."""
    for port in ("uop_wr", "acc_wr", "load_acc_wr", "out_wr", "alu_acc_wr", "alu_out_wr"):
        connect(m, getattr(unit, port), wr[port[:-3]])
    for port in ("uop_rd", "inp_rd", "wgt_rd", "acc_rd", "alu_uop_rd", "alu_acc_rd"):
        connect(m, getattr(unit, port), rd[port[:-3]])
    if cfg.acc_read_ports == 2:
        connect(m, unit.alu_acc_rd_b, rd["alu_acc_b"])


class Compute(wiring.Component):
    """LOAD (compute-stage memory types), GEMM, ALU and FINISH.

    Ports
    -----
    start : In(1)
        Begin ``insn`` (stable until ``done``; an ALU instruction only in the cycle of ``start``).
    detaching, joins : Out(1)
        ``insn`` is an ALU instruction (it runs detached) / may start while instructions are
        detached (an ALU instruction, or a GEMM the GEMM unit takes now).
    detach_late : Out(1)
        The executing GEMM has issued its last step: it may detach and drain.
    detached_done : Out(1)
        One-cycle pulse when the ALU instruction has completed.
    gemm_done : Out(1)
        One-cycle pulse when a GEMM instruction has completed (with ``done``).
    gemm_held : Out(1)
        The GEMM waits for the ALU this cycle (its next step's ACC bank is one the ALU uses).
    abort : In(1)
        The run has failed (docs/isa.md §3.5): abandon the remaining steps; ``done`` follows as
        soon as the steps already issued have written.
    insn : In(layouts(cfg).insn)
    done : Out(1)
        One-cycle pulse when the (not detached) instruction has completed.
    err : Out(1)
        With ``done``: a LOAD met a DRAM error.
    finish : Out(1)
        With ``done``: the instruction was FINISH.
    uop_base, acc_base : In(32)
    mem : Out(ReadClientSignature)
        The loads' memory-engine read client.
    uop_wr, uop_rd, inp_rd, wgt_rd, acc_rd, acc_wr, out_wr
        Scratchpad ports of the loads and the GEMM (``acc_wr`` the GEMM's).
    load_acc_wr
        The loads' ACC writes (LOAD ACC, ACC_8BIT), which ACC's reads do not forward.
    alu_uop_rd, alu_acc_rd, alu_acc_rd_b (ACC_READ_PORTS = 2), alu_acc_wr, alu_out_wr
        The ALU's. Every ACC read port returns the writes of the same cycle to its row (the
        scratchpad forwards them, hw/core/banks.py).
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
            "detaching": Out(1), "joins": Out(1), "detached_done": Out(1),
            "detach_late": Out(1), "gemm_done": Out(1),
            "gemm_held": Out(1),
            "uop_base": In(ADDR_BITS), "acc_base": In(ADDR_BITS),
            "mem": Out(self._loader.signature.members["mem"].signature),
            "uop_wr": In(write_signature(geo["uop"])), "uop_rd": In(read_signature(geo["uop"])),
            "inp_rd": In(read_signature(geo["inp"])), "wgt_rd": In(read_signature(geo["wgt"])),
            "acc_rd": In(read_signature(geo["acc"])), "acc_wr": In(write_signature(geo["acc"])),
            "load_acc_wr": In(write_signature(geo["acc"])),
            "out_wr": In(write_signature(geo["out"])),
            "alu_uop_rd": In(read_signature(geo["uop"])),
            "alu_acc_rd": In(read_signature(geo["acc"])),
            "alu_acc_wr": In(write_signature(geo["acc"])),
            "alu_out_wr": In(write_signature(geo["out"])),
            "gemm_step": Out(1), "alu_step": Out(1), "acc_write": Out(1),
            "count": Out(count_layout()), "count_valid": Out(1),
        }
        if cfg.acc_read_ports == 2:
            members["alu_acc_rd_b"] = In(read_signature(geo["acc"]))
        super().__init__(members)
        #: The dispatched ALU instruction waits for a draining GEMM's steps (not a port: the
        #: compute stage's formal check covers it).
        self.alu_waiting = Signal(name="alu_waiting")

    def elaborate(self, platform):
        m = Module()
        cfg, insn = self._cfg, self.insn
        opcode = insn.head.opcode
        m.submodules.loader = loader = self._loader
        m.submodules.gemm = gemm = Gemm(cfg=cfg, faults=self._faults)
        m.submodules.alu = alu = Alu(cfg=cfg, faults=self._faults)
        starting_alu = self.start & (opcode == Opcode.ALU)

        m.d.comb += [
            loader.insn.eq(insn.memory), gemm.insn.eq(insn.gemm),
            loader.start.eq(self.start & (opcode == Opcode.LOAD)),
            gemm.start.eq(self.start & (opcode == Opcode.GEMM)),
            gemm.abort.eq(self.abort), alu.abort.eq(self.abort), loader.abort.eq(self.abort),
            loader.uop_base.eq(self.uop_base), loader.acc_base.eq(self.acc_base),
            self.gemm_step.eq(gemm.step), self.alu_step.eq(alu.step),
            self.count.eq(loader.count), self.count_valid.eq(loader.count_valid),
            self.detaching.eq(opcode == Opcode.ALU),
            self.joins.eq((opcode == Opcode.ALU) | ((opcode == Opcode.GEMM) & gemm.accepts)),
            self.detached_done.eq(alu.done), self.gemm_done.eq(gemm.done),
        ]
        # The executing GEMM has issued its last step (registered: the pulse comes from the
        # hazard check's stall); cleared when the stage starts anything.
        issued = Signal()
        with m.If(self.start):
            m.d.sync += issued.eq(0)
        with m.Elif(gemm.issued):
            m.d.sync += issued.eq(1)
        m.d.comb += self.detach_late.eq(issued)
        connect(m, flipped(self.mem), loader.mem)
        connect(m, flipped(self.uop_wr), loader.uop_wr)

        finishing = Signal()
        m.d.sync += finishing.eq(self.start & (opcode == Opcode.FINISH))
        m.d.comb += [
            self.done.eq(loader.done | gemm.done | finishing),
            self.err.eq(loader.done & loader.err),
            self.finish.eq(finishing),
        ]

        # -- the detached ALU: its own copy of the instruction, started a cycle later -------------
        # or, behind a draining GEMM, once that GEMM's last ACC write comes no later than the
        # ALU's first ACC read (:meth:`_older_steps`).
        alu_insn = Signal.like(insn.alu)
        dispatched, waiting = Signal(), self.alu_waiting
        m.d.sync += dispatched.eq(starting_alu)
        with m.If(starting_alu):
            m.d.sync += alu_insn.eq(insn.alu)
        older = self._older_steps(m, gemm, starting_alu)
        clear = ~Cat(older[k] for k in range(2, 2 + cfg.gemm_stages)).any() \
            if cfg.gemm_stages else Const(1, 1)
        alu_go = Signal()
        m.d.comb += alu_go.eq((dispatched | waiting) & clear)
        with m.If(dispatched & ~clear):
            m.d.sync += waiting.eq(1)
        with m.Elif(clear):
            m.d.sync += waiting.eq(0)
        m.d.comb += [alu.insn.eq(alu_insn), alu.start.eq(alu_go)]
        connect(m, flipped(self.alu_acc_wr), alu.acc_wr)
        connect(m, flipped(self.alu_acc_rd), alu.acc_rd)
        if cfg.acc_read_ports == 2:
            connect(m, flipped(self.alu_acc_rd_b), alu.acc_rd_b)
        # The ALU's micro-op port reads the first micro-op in the cycle it starts (for the rows it
        # uses), when its loop nest does not read yet.
        uop_port = self.alu_uop_rd
        m.d.comb += alu.uop_rd.data.eq(uop_port.data)
        with m.If(starting_alu):
            m.d.comb += [uop_port.addr.eq(insn.alu.uop_bgn), uop_port.en.eq(1)]
        with m.Else():
            m.d.comb += [uop_port.addr.eq(alu.uop_rd.addr), uop_port.en.eq(alu.uop_rd.en)]

        # -- hazards: a GEMM step waits while its ACC row is one the ALU uses ---------------------
        alu_running = Signal()       # from the ALU's start until the cycle after its last write
        with m.If(starting_alu):
            m.d.sync += alu_running.eq(1)
        with m.Elif(alu.done):
            m.d.sync += alu_running.eq(0)
        bounded, known = Signal(), Signal()
        ranges = {op: (Signal(geometry(cfg, "acc").addr_bits, name=f"{op}_lo"),
                       Signal(geometry(cfg, "acc").addr_bits, name=f"{op}_hi"))
                  for op in ("dst", "src")}
        self._bound_rows(m, insn.alu, alu_insn, data.View(layouts(cfg).uop, uop_port.data),
                         dispatched, starting_alu, ranges, bounded, known)
        # The ACC banks (hw/core/banks.py) have one write and one read port each, so the GEMM
        # step waits while its row's bank is one the ALU's rows reach, not only its row.
        bank_bits = scratchpad(cfg, "acc").bank_row_bits
        bank = gemm.acc_index[bank_bits:]
        clash = ~known | ~bounded
        for op, (lo, hi) in ranges.items():
            if op == "dst" and FaultName.COMPUTE_HAZARD_DST in self._faults:
                # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                continue
            clash |= (bank >= lo[bank_bits:]) & (bank <= hi[bank_bits:])
        # A step older than the ALU instruction (in s2 the cycle after the ALU starts, from
        # a GEMM that drains) is never held: the ALU waits for it instead.
        m.d.comb += [gemm.hold.eq(alu_running & gemm.probing & clash & ~older[2]),
                     self.gemm_held.eq(gemm.hold)]

        # -- the GEMM's ports ---------------------------------------------------------------------
        connect(m, flipped(self.uop_rd), gemm.uop_rd)
        connect(m, flipped(self.acc_rd), gemm.acc_rd)
        connect(m, flipped(self.inp_rd), gemm.inp_rd)
        connect(m, flipped(self.wgt_rd), gemm.wgt_rd)

        # ACC: the GEMM's writes and a LOAD ACC's on ports of their own (the loader's are not
        # forwarded, module docstring). The loader's write is registered on its way to the banks:
        # its row writer's lane arithmetic (from the beat's skip) and the banks' write choice
        # were one cycle's path into the block RAMs (docs/architecture.md, timing on an FPGA).
        # It lands a cycle later, in the cycle of the loader's `done` at the latest, still
        # before any read of the next instruction.
        connect(m, flipped(self.acc_wr), gemm.acc_wr)
        load_acc = self.load_acc_wr
        m.d.sync += [load_acc.addr.eq(loader.acc_wr.addr), load_acc.data.eq(loader.acc_wr.data),
                     load_acc.en.eq(loader.acc_wr.en)]
        m.d.comb += self.acc_write.eq(self.acc_wr.en.any() | self.load_acc_wr.en.any()
                                      | self.alu_acc_wr.en.any())

        # OUT mirrors ACC: the low byte of each 32-bit lane, under the same enables; OUT has no
        # forwarding, so the GEMM and a LOAD ACC (never at once) share its port A.
        acc = write_signature(geometry(cfg, "acc")).create(path=("acc_port_a",))
        for port in (self.load_acc_wr, self.acc_wr):     # the GEMM's wins (the last If)
            with m.If(port.en.any()):
                m.d.comb += [acc.addr.eq(port.addr), acc.data.eq(port.data), acc.en.eq(port.en)]
        lanes = geometry(cfg, "acc").row_bits // cfg.acc_width
        for acc_port, out_port in ((acc, self.out_wr), (self.alu_acc_wr, self.alu_out_wr)):
            m.d.comb += [
                out_port.addr.eq(acc_port.addr),
                out_port.data.eq(Cat(acc_port.data.word_select(i, cfg.acc_width)[:cfg.out_width]
                                     for i in range(lanes))),
                out_port.en.eq(acc_port.en),
            ]
        return m

    def _older_steps(self, m, gemm, starting):
        """``{k: Signal}`` for k = 2 .. 2 + S (``S = cfg.gemm_stages``): a GEMM step older than
        the ALU instruction that started (``starting``) is in stage s``k``.

        The ALU may start while a GEMM drains (hw/core/stage_control.py): the GEMM's last
        steps are then in s1 and later, and the stage starts nothing else in that cycle, so
        every step in flight is older than the ALU. They move on a stage a cycle (the one in
        s2 the next cycle is not held, the ALU being younger; later stages never stall). A
        step in s``k`` writes ACC ``5 + S − k`` cycles later and the ALU reads ACC three
        cycles after its start (s2 of hw/core/alu.py), so the ALU starts when no older step
        is in s2 .. s(1 + S): it then reads after their writes (the banks forward a write to
        a read of its cycle), and its ports never meet theirs in a bank."""
        last = 5 + self._cfg.gemm_stages
        older = {k: Signal(name=f"older_s{k}") for k in range(2, last + 1)}
        previous = {k: gemm.stage_valid[k - 1] for k in range(3, last + 1)}
        previous[2] = gemm.stage_valid[1]
        for k, reg in older.items():
            moved = older[k - 1] if k > 2 else Const(0, 1)
            m.d.sync += reg.eq(Mux(starting, previous[k], moved))
        return older

    def _bound_rows(self, m, insn, alu_insn, uop, go, starting, ranges, bounded, known):
        """Bound the ACC rows of the ALU instruction ``alu_insn`` (latched from ``insn`` when
        ``starting``): ``ranges`` dst and src ``(lo, hi)``, ``bounded`` when they hold every row
        (one micro-op, no index wraps), ``known`` from the cycle after ``go`` (when ``uop``, its
        first micro-op, arrives).

        Each range's span, ``(iter_out − 1)·factor_out + (iter_in − 1)·factor_in``, is formed
        from ``insn`` and registered with the latched copy, so that only ``first + span`` (into
        ``hi``) and ``first < depth − span`` stand behind the micro-op block RAM's read (the
        span's multipliers after it were the core's longest path on an ECP5, then the sum and
        its comparison one behind the other: docs/architecture.md, timing on an FPGA)."""
        depth = geometry(self._cfg, "acc").depth
        with m.If(starting):
            m.d.sync += known.eq(0)
        with m.Elif(go):
            m.d.sync += known.eq(1)
        ok = (alu_insn.uop_end == alu_insn.uop_bgn + 1)
        spans = {}
        for op in ranges:
            span = ((insn.iter_out - 1) * getattr(insn, f"{op}_factor_out")
                    + (insn.iter_in - 1) * getattr(insn, f"{op}_factor_in"))
            spans[op] = Signal.like(span, name=f"{op}_span")
            with m.If(starting):
                m.d.sync += spans[op].eq(span)
        with m.If(go):
            for op, (lo, hi) in ranges.items():
                first = getattr(uop, f"{op}_idx")
                span = spans[op]
                # first + span < depth, asked as first < depth − span: the room is formed from
                # the registered span while the micro-op is read, so one short comparison, not
                # an adder as wide as the span and a comparison behind it, follows the block
                # RAM (that chain bound `fpga` on an ECP5: docs/architecture.md).
                fits = Signal(name=f"{op}_fits")
                room = Signal(range(depth + 1), name=f"{op}_room")
                m.d.comb += [fits.eq(span < depth), room.eq(depth - span)]
                ok &= fits & (first < room)
                m.d.sync += [lo.eq(first), hi.eq(first + span)]
            m.d.sync += bounded.eq(ok & (alu_insn.iter_out != 0) & (alu_insn.iter_in != 0))
