"""The GEMM unit (docs/isa.md §3.3): one micro-op step per cycle (II = 1).

Pipeline, one step per stage per cycle, with ``S = cfg.gemm_stages`` registers in the dot
products (``GEMM_PIPE_STAGES``; when absent ``ceil(LOG_BLOCK_IN / 2)``, see :func:`pipe_cuts`);
it stalls only on ``hold`` (the compute stage's hazard check against a detached ALU instruction,
:mod:`.compute`), which keeps the step in s2 and the steps behind it in s1 and s0:

============  ==============================================================================
s0            :class:`LoopGen` offers the step; the micro-op buffer is read.
s1            the micro-op arrives; indices = micro-op fields + loop offsets, registered.
s2            the hazard check sees the registered ACC index; INP and WGT are read.
s3            the rows arrive and are registered (the row register).
s4 … s(4+S)   the ``BATCH × BLOCK_OUT × BLOCK_IN`` products and the adder trees, in S + 1
              parts (:func:`dot_pipeline`): with S > 0 the products alone in s4, then about
              ``LOG_BLOCK_IN / S`` adder levels per stage.
s(3+S)        ACC is read.
s(4+S)        the dot products complete (the last adder levels); ACC is forwarded.
s(5+S)        ``ACC[dst] += dot`` (or 0 with ``reset``) is written (the compute stage mirrors it
              to OUT).
============  ==============================================================================

For example BLOCK_IN 16, S = 2: s3 rows | s4 products | s5 levels 1-2, ACC read | s6 levels
3-4, ACC forwarded | s7 write. A GEMM instruction costs S cycles more than with S = 0
(:func:`avta.isa.costs.gemm_fill`).

The row register (s3) keeps the INP and WGT block RAMs' clock-to-out (5.6 ns on an ECP5) and
the route from a wide row of block RAMs (the ``fpga`` configuration's WGT row is 32 of them side
by side) out of the cycle of the multipliers: on an ECP5 that was the path that bound ``fpga``
and, once fetch's and the ALU's paths were cut, ``tiny`` (docs/architecture.md, timing on an
FPGA). It costs every GEMM instruction one cycle (:data:`avta.isa.costs.ROW_REGISTER`).

The index register (s1 to s2) keeps the micro-op block RAM's clock-to-out and the index adders
out of the hazard check and of the stall that fans out from it to the loop nest, the micro-op
read enable and the GEMM_STEPS counter (on an ECP5 that was the core's longest path:
docs/architecture.md, timing on an FPGA), and out of the INP and WGT read addresses; it costs
every GEMM instruction one cycle (:data:`avta.isa.costs.INDEX_REGISTER`).

Read-after-write on ACC (docs/isa.md §3.3: each step sees every earlier step): a step reads ACC
two stages before it writes, whatever S is, and the step two ahead of it writes in that same
cycle, which the transparent read port returns; the step just ahead writes while this one is in
s(3+S), so s(3+S) takes the write data instead of the read data when the indices match. Older
steps wrote before the read. Stages after s2 never stall (a held step leaves a bubble behind the
steps ahead), so the distances only grow, and II = 1 holds for any sequence of indices.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from avta.isa.layout import layouts

from .faults import FAULT_UOP_ROW, FaultName
from .loop_gen import LoopGen
from .sram import geometry, read_signature, row_layout, write_signature

__all__ = ["Gemm", "tree_sum", "tree_levels", "pipe_cuts", "dot_pipeline"]


def _tree_level(values):
    """One level of the adder tree: neighbours summed in pairs (an odd last one passes)."""
    return [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
            for i in range(0, len(values), 2)]


def tree_levels(n):
    """Adder levels of :func:`tree_sum` over ``n`` values."""
    return (n - 1).bit_length()


def tree_sum(values):
    """A balanced adder tree over ``values`` (at least one)."""
    values = list(values)
    while len(values) > 1:
        values = _tree_level(values)
    return values[0]


def pipe_cuts(levels, stages):
    """Where :func:`dot_pipeline` puts its ``stages`` registers in a dot product of ``levels``
    adder levels: a set of positions, 0 after the multipliers and ``j`` after adder level ``j``
    (the register after the last level is the GEMM's own). The first goes after the
    multipliers (an 8×8 multiplier is about as slow as two adder levels), the others split the
    levels into ``stages`` groups as even as can be, the larger first; ``stages`` is 0 to
    ``levels``. With ``cfg.gemm_stages`` derived (``ceil(levels / 2)``) each group has two
    levels, the last one one when ``levels`` is odd."""
    if not 0 <= stages <= max(levels, 0):
        raise ValueError(f"a dot product of {levels} adder levels takes 0..{levels} pipeline "
                         f"stages, not {stages}")
    if stages == 0:
        return set()
    size, extra = divmod(levels, stages)
    cuts, at = {0}, 0
    for group in range(stages - 1):
        at += size + (group < extra)
        cuts.add(at)
    return cuts


def dot_pipeline(m, products, stages, *, name="dot"):
    """:func:`tree_sum` of ``products`` with ``stages`` registers (``m.d.sync``) at
    :func:`pipe_cuts`: the same sums, ``stages`` cycles later. The registers have no enable
    (the stages after s2 never stall)."""
    values = list(products)
    cuts = pipe_cuts(tree_levels(len(values)), stages)
    level = 0
    while True:
        if level in cuts:
            held = [Signal(v.shape(), name=f"{name}_p{level}_{i}") for i, v in enumerate(values)]
            m.d.sync += [h.eq(v) for h, v in zip(held, values)]
            values = held
        if len(values) == 1:
            return values[0]
        values = _tree_level(values)
        level += 1


class Gemm(wiring.Component):
    """Executes one GEMM instruction at a time.

    Ports
    -----
    start, abort, done : In(1), In(1), Out(1)
        As :class:`~avta.hw.core.alu.Alu`'s: the instruction's handshake, its abandonment when
        the run fails, and the pulse of its last ACC write. An instruction may start while the
        one before it drains (``issued`` has pulsed, ``accepts``); each completes in order,
        with a ``done`` of its own.
    insn : In(layouts(cfg).gemm)
        Read while the loop nest issues the instruction's steps (until ``issued``); what a step
        needs later travels with it.
    issued : Out(1)
        One-cycle pulse: the instruction's last step left s0; the rest of it is in flight.
    accepts : Out(1)
        A ``start`` is taken now: no step is being issued, and at most one instruction is in
        flight (an empty one, which issues no step, only when none is: its ``done`` must not
        pass an older one's).
    pending : Out(1)
        An instruction has started and not completed.
    step : Out(1)
        A micro-op step was issued (GEMM_STEPS counter).
    acc_index, probing : Out
        The ACC row of the step in s2 (registered), and whether s2 holds a step: what the
        compute stage checks for a hazard with a detached ALU instruction.
    hold : In(1)
        Keep the step in s2 this cycle (its ACC row is one a running ALU instruction uses); the
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
        # Whether a step is in s1 .. s(5+S), for the compute stage's hazard checks: made here
        # so that the compute stage can read them before this unit is elaborated.
        self.stage_valid = {k: Signal(name=f"v{k}") for k in range(1, 6 + cfg.gemm_stages)}
        super().__init__({
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).gemm), "done": Out(1),
            "issued": Out(1), "accepts": Out(1), "pending": Out(1),
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
        # A held step stays in s2, the steps behind it in s1 and s0: the loop waits, s1's
        # registers hold, and the micro-op port keeps its data (a read port without ``en``
        # holds its output).
        v2 = self.stage_valid[2]
        stall = v2 & self.hold
        m.d.comb += [loop.start.eq(self.start), loop.abort.eq(self.abort),
                     loop.advance.eq(~stall), self.step.eq(loop.valid & ~stall),
                     self.uop_rd.addr.eq(loop.uop), self.uop_rd.en.eq(loop.valid & ~stall)]

        # The reset flag travels with each step (the next instruction may start while this
        # one's steps are in flight); the sum it replaces is formed in s(5+S), from s(4+S).
        reset = insn.reset
        if FaultName.GEMM_RESET_STICKY in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            sticky = Signal()
            with m.If(self.start & insn.reset):
                m.d.sync += sticky.eq(1)
            reset = insn.reset | sticky

        # -- s1: the micro-op arrives; indices ------------------------------------------------------
        v1, last1, reset1 = self.stage_valid[1], Signal(), Signal()
        off1 = {op: Signal.like(getattr(loop, op), name=f"{op}_off1")
                for op in ("dst", "src", "wgt")}
        with m.If(~stall):
            m.d.sync += [v1.eq(loop.valid), last1.eq(loop.last), reset1.eq(reset)]
            m.d.sync += [off1[op].eq(getattr(loop, op)) for op in off1]
        uop = data.View(layouts(cfg).uop, self.uop_rd.data)
        acc_index = uop.dst_idx + off1["dst"]
        if FaultName.GEMM_ACC_INDEX in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            uop1 = Signal.like(loop.uop)
            with m.If(~stall):
                m.d.sync += uop1.eq(loop.uop)
            acc_index = acc_index + (uop1 == FAULT_UOP_ROW)

        # -- s2: registered indices; hazard check; INP and WGT reads ----------------------------
        last2, reset2 = Signal(), Signal()
        acc_idx2 = Signal(geo["acc"].addr_bits)
        inp_idx2 = Signal(geo["inp"].addr_bits)
        wgt_idx2 = Signal(geo["wgt"].addr_bits)
        with m.If(~stall):
            m.d.sync += [v2.eq(v1), last2.eq(last1), reset2.eq(reset1), acc_idx2.eq(acc_index),
                         inp_idx2.eq(uop.src_idx + off1["src"]),
                         wgt_idx2.eq(uop.wgt_idx + off1["wgt"])]
        m.d.comb += [
            self.acc_index.eq(acc_idx2), self.probing.eq(v2),
            self.inp_rd.addr.eq(inp_idx2), self.wgt_rd.addr.eq(wgt_idx2),
            self.inp_rd.en.eq(v2), self.wgt_rd.en.eq(v2),
        ]

        # -- s3 .. s(5+S): valid, last and the ACC row travel with the step ---------------------
        stages = cfg.gemm_stages
        last_stage = 5 + stages
        valid, last, resets, acc_idx = {2: v2}, {2: last2}, {2: reset2}, {2: acc_idx2}
        for k in range(3, last_stage + 1):
            valid[k], last[k] = self.stage_valid[k], Signal(name=f"last{k}")
            resets[k] = Signal(name=f"reset{k}")
            acc_idx[k] = Signal.like(acc_idx2, name=f"acc_idx{k}")
            m.d.sync += [valid[k].eq(valid[k - 1] & ~stall if k == 3 else valid[k - 1]),
                         last[k].eq(last[k - 1]), resets[k].eq(resets[k - 1]),
                         acc_idx[k].eq(acc_idx[k - 1])]
        # ACC is read two stages before the write, as without the pipeline (the module), in s3
        # or later: a held step (in s2) never reads it.
        read = last_stage - 2
        m.d.comb += [self.acc_rd.addr.eq(acc_idx[read]), self.acc_rd.en.eq(valid[read])]

        # -- s(4+S): ACC forwarding ---------------------------------------------------------------
        acc_now = Signal(row_layout(cfg, "acc"))
        with m.If(self.acc_wr.en.any() & (self.acc_wr.addr == acc_idx[last_stage - 1])):
            m.d.comb += acc_now.eq(self.acc_wr.data)
        with m.Else():
            m.d.comb += acc_now.eq(self.acc_rd.data)

        # -- s3: the row register; s4 .. s(4+S): dot products; s(5+S): accumulate and write -------
        inp = Signal(row_layout(cfg, "inp"))
        wgt = Signal(row_layout(cfg, "wgt"))
        m.d.sync += [inp.eq(self.inp_rd.data), wgt.eq(self.wgt_rd.data)]
        acc_w = Signal(row_layout(cfg, "acc"))
        dot_w = Signal(row_layout(cfg, "acc"))
        m.d.sync += acc_w.eq(acc_now)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                products = [inp[b][k] * wgt[o][k] for k in range(cfg.block_in)]
                if FaultName.GEMM_PRODUCT_SIGN in self._faults:
                    # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                    products[0] = -products[0]
                if (FaultName.GEMM_LANE_LAST in self._faults and b == cfg.batch - 1
                        and o == cfg.block_out - 1):
                    # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                    products[-1] = -products[-1]
                m.d.sync += dot_w[b][o].eq(dot_pipeline(m, products, stages, name=f"dot{b}_{o}"))
        result = Signal(row_layout(cfg, "acc"))
        with m.If(~resets[last_stage]):
            for b in range(cfg.batch):
                for o in range(cfg.block_out):
                    m.d.comb += result[b][o].eq(acc_w[b][o] + dot_w[b][o])
        m.d.comb += [
            self.acc_wr.addr.eq(acc_idx[last_stage]),
            self.acc_wr.data.eq(result),
            self.acc_wr.en.eq(valid[last_stage].replicate(geo["acc"].en_bits)),
        ]

        # -- control ------------------------------------------------------------------------------
        self._control(m, loop, stall, retired=valid[last_stage] & last[last_stage],
                      in_flight=loop.valid | v1 | Cat(valid.values()).any())
        return m

    def _control(self, m, loop, stall, *, retired, in_flight):
        """Instructions in flight, in order: each ``done`` is the write of an instruction's last
        step (``retired``), or the cycle after ``start`` for an empty one (which starts only
        when none is in flight, ``accepts``). After ``abort`` the loop stops and, once no step
        is in flight, every instruction still counted completes, one a cycle."""
        pending = Signal(range(3))
        empty_done, aborting = Signal(), Signal()
        begins = self.start & ~loop.empty
        m.d.sync += empty_done.eq(self.start & loop.empty)
        with m.If(self.abort & (pending != 0)):
            m.d.sync += aborting.eq(1)
        with m.Elif(pending == 0):
            m.d.sync += aborting.eq(0)
        flushed = aborting & ~in_flight & (pending != 0)
        finished = retired | flushed
        m.d.comb += [
            self.done.eq(finished | empty_done),
            self.issued.eq(loop.valid & loop.last & ~stall & ~self.abort),
            self.accepts.eq(~loop.valid & ~empty_done
                            & Mux(loop.empty, pending == 0, pending < 2)),
            self.pending.eq((pending != 0) | empty_done),
        ]
        with m.If(begins & ~finished):
            m.d.sync += pending.eq(pending + 1)
        with m.Elif(~begins & finished):
            m.d.sync += pending.eq(pending - 1)
