"""The GEMM unit (docs/isa.md §3.3): one micro-op step per cycle (II = 1).

Pipeline, one step per stage per cycle; it stalls only on ``hold`` (the compute stage's hazard
check against a detached ALU instruction, :mod:`.compute`), which keeps the step in s1:

====  ===================================================================================
s0    :class:`LoopGen` offers the step; the micro-op buffer is read.
s1    the micro-op arrives; indices = micro-op fields + loop offsets; INP, WGT and ACC are read.
s2    rows arrive; the ``BATCH × BLOCK_OUT`` dot products are formed; ACC is forwarded.
s3    ``ACC[dst] += dot`` (or 0 with ``reset``) is written (the compute stage mirrors it to OUT).
====  ===================================================================================

Read-after-write on ACC (docs/isa.md §3.3: each step sees every earlier step): a step reads ACC in
s1, and the step two ahead of it writes in that same cycle, which the transparent read port
returns; the step just ahead writes while this one is in s2, so s2 takes the write data instead
of the read data when the indices match. Older steps wrote before the read. So II = 1 holds for
any sequence of indices.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from avta.isa.layout import layouts

from .faults import FAULT_UOP_ROW
from .loop_gen import LoopGen, instruction_control
from .sram import geometry, read_signature, row_layout, write_signature

__all__ = ["Gemm", "tree_sum"]


def tree_sum(values):
    """A balanced adder tree over ``values`` (at least one)."""
    values = list(values)
    while len(values) > 1:
        values = [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


class Gemm(wiring.Component):
    """Executes one GEMM instruction at a time.

    Ports
    -----
    start : In(1)
        Begin executing ``insn`` (stable until ``done``).
    abort : In(1)
        The run has failed (docs/isa.md §3.5): abandon the remaining steps; ``done`` follows as
        soon as the steps already issued have written.
    insn : In(layouts(cfg).gemm)
    done : Out(1)
        One-cycle pulse in the cycle of the last ACC write (or after ``start`` for a degenerate
        loop); a following instruction that reads ACC is issued later and sees it.
    step : Out(1)
        A micro-op step was issued (GEMM_STEPS counter).
    acc_index, probing : Out
        The ACC row of the step in s1, and whether s1 holds a step: what the compute stage
        checks for a hazard with a detached ALU instruction.
    hold : In(1)
        Keep the step in s1 this cycle (its ACC row is one a running ALU instruction uses); the
        steps ahead of it go on and the loop nest waits.
    uop_rd, inp_rd, wgt_rd, acc_rd : In(ReadPort.Signature)
        Synchronous read ports; ``acc_rd`` must be transparent to the ACC write port.
    acc_wr : In(WritePort.Signature)
        Full-row ACC writes (every enable set).
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        self._geo = {p: geometry(cfg, p) for p in ("uop", "inp", "wgt", "acc")}
        super().__init__({
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).gemm), "done": Out(1),
            "step": Out(1), "hold": In(1), "probing": Out(1),
            "acc_index": Out(self._geo["acc"].addr_bits),
            "uop_rd": In(read_signature(self._geo["uop"])),
            "inp_rd": In(read_signature(self._geo["inp"])),
            "wgt_rd": In(read_signature(self._geo["wgt"])),
            "acc_rd": In(read_signature(self._geo["acc"])),
            "acc_wr": In(write_signature(self._geo["acc"])),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, insn, geo = self._cfg, self.insn, self._geo

        # -- s0: loop nest ----------------------------------------------------------------------
        m.submodules.loop = loop = LoopGen(
            uop_bits=geo["uop"].addr_bits,
            offset_bits={"dst": geo["acc"].addr_bits, "src": geo["inp"].addr_bits,
                         "wgt": geo["wgt"].addr_bits}, faults=self._faults)
        for name in ("uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out",
                     "dst_factor_in", "src_factor_out", "src_factor_in", "wgt_factor_out",
                     "wgt_factor_in"):
            m.d.comb += getattr(loop, name).eq(getattr(insn, name))
        # A held step stays in s1: the loop waits, and the micro-op port keeps its data (a read
        # port without ``en`` holds its output).
        v1 = Signal()
        stall = v1 & self.hold
        m.d.comb += [loop.start.eq(self.start), loop.abort.eq(self.abort),
                     loop.advance.eq(~stall), self.step.eq(loop.valid & ~stall),
                     self.uop_rd.addr.eq(loop.uop), self.uop_rd.en.eq(loop.valid & ~stall)]

        # -- s1: indices, operand reads ---------------------------------------------------------
        last1 = Signal()
        off1 = {op: Signal.like(getattr(loop, op), name=f"{op}_off1")
                for op in ("dst", "src", "wgt")}
        with m.If(~stall):
            m.d.sync += [v1.eq(loop.valid), last1.eq(loop.last)]
            m.d.sync += [off1[op].eq(getattr(loop, op)) for op in off1]
        uop = data.View(layouts(cfg).uop, self.uop_rd.data)
        acc_idx1 = Signal(geo["acc"].addr_bits)
        acc_index = uop.dst_idx + off1["dst"]
        if "gemm-acc-index" in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            uop1 = Signal.like(loop.uop)
            with m.If(~stall):
                m.d.sync += uop1.eq(loop.uop)
            acc_index = acc_index + (uop1 == FAULT_UOP_ROW)
        m.d.comb += [
            acc_idx1.eq(acc_index), self.acc_index.eq(acc_idx1), self.probing.eq(v1),
            self.inp_rd.addr.eq(uop.src_idx + off1["src"]),
            self.wgt_rd.addr.eq(uop.wgt_idx + off1["wgt"]),
            self.acc_rd.addr.eq(acc_idx1),
            self.inp_rd.en.eq(v1), self.wgt_rd.en.eq(v1),
            # A held step does not read ACC: the detached ALU may be using the bank's port
            # (hw/core/banks.py); it reads in the cycle it leaves s1.
            self.acc_rd.en.eq(v1 & ~stall),
        ]

        # -- s2: dot products and ACC forwarding --------------------------------------------------
        v2, last2 = Signal(), Signal()
        acc_idx2 = Signal.like(acc_idx1)
        m.d.sync += [v2.eq(v1 & ~stall), last2.eq(last1), acc_idx2.eq(acc_idx1)]
        inp = data.View(row_layout(cfg, "inp"), self.inp_rd.data)
        wgt = data.View(row_layout(cfg, "wgt"), self.wgt_rd.data)
        acc_now = Signal(row_layout(cfg, "acc"))
        with m.If(self.acc_wr.en.any() & (self.acc_wr.addr == acc_idx2)):
            m.d.comb += acc_now.eq(self.acc_wr.data)
        with m.Else():
            m.d.comb += acc_now.eq(self.acc_rd.data)

        # -- s3: accumulate and write -----------------------------------------------------------
        v3, last3 = Signal(), Signal()
        acc_idx3 = Signal.like(acc_idx1)
        acc3 = Signal(row_layout(cfg, "acc"))
        dot3 = Signal(row_layout(cfg, "acc"))
        m.d.sync += [v3.eq(v2), last3.eq(last2), acc_idx3.eq(acc_idx2), acc3.eq(acc_now)]
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                products = [inp[b][k] * wgt[o][k] for k in range(cfg.block_in)]
                if "gemm-product-sign" in self._faults:
                    # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                    products[0] = -products[0]
                if ("gemm-lane-last" in self._faults and b == cfg.batch - 1
                        and o == cfg.block_out - 1):
                    # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                    products[-1] = -products[-1]
                m.d.sync += dot3[b][o].eq(tree_sum(products))
        result = Signal(row_layout(cfg, "acc"))
        reset = insn.reset
        if "gemm-reset-sticky" in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            sticky = Signal()
            with m.If(self.start & insn.reset):
                m.d.sync += sticky.eq(1)
            reset = insn.reset | sticky
        with m.If(~reset):
            for b in range(cfg.batch):
                for o in range(cfg.block_out):
                    m.d.comb += result[b][o].eq(acc3[b][o] + dot3[b][o])
        m.d.comb += [
            self.acc_wr.addr.eq(acc_idx3),
            self.acc_wr.data.eq(result),
            self.acc_wr.en.eq(v3.replicate(geo["acc"].en_bits)),
        ]

        # -- control ------------------------------------------------------------------------------
        instruction_control(m, name="gemm", start=self.start, empty=loop.empty,
                            retired=v3 & last3, done=self.done, abort=self.abort,
                            in_flight=loop.valid | v1 | v2 | v3)
        return m
