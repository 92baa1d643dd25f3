"""Self-consistency of the compute stage (A-QED: Singh et al., DAC 2020; A-QED², FMCAD 2021).

A-QED checks an accelerator without a specification of its results: the same instruction on
the same data must give the same result, whatever ran before it. Here the "accelerator" is the
compute stage as the core builds it: the real :class:`~avta.hw.core.stage_control.StageControl`
and :class:`~avta.hw.core.compute.Compute` (GEMM unit, detached ALU, the hazard hold between
them) on the core's own scratchpads and ports (:func:`avta.hw.core.sram.scratchpad_ports`).
Two copies run side by side from power-on; their scratchpads start with the same arbitrary
contents (written in the first cycle through extra write ports), they execute GEMM and ALU
instructions that the solver picks (any legal fields within the bounds below), and once both
are idle their ACC and OUT rows are equal.

``overlap``
    An ALU instruction, then a GEMM (:data:`OVERLAP_PAIRS`). Copy A executes them one at a time: the GEMM starts only when the ALU has completed.
    Copy B executes them as the core does: the GEMM starts beside the detached ALU, and the
    hazard hold decides when each of its steps may go. Same final scratchpads: a GEMM run
    beside the ALU before it gives the result of running it after.
``drain``
    A GEMM, then an ALU instruction: copy A starts the ALU once the GEMM has retired, copy B
    as the core does, while the GEMM drains (the ALU waits for the GEMM's steps that would
    write after its first read). Same final scratchpads.
``fresh``
    Copy A executes one instruction ``I`` (GEMM or ALU) first, from power-on. Copy B executes
    another one first (any GEMM or ALU), then ``I`` once the stage has drained, in the same
    cycle as A's,
    and the solver picks A's initial contents equal to what B's instructions left (an
    assumption at that cycle). Same final scratchpads: nothing an earlier instruction left in
    the stage's registers (forwarding state, row bounds, loop counters) changes a later one's
    result.

Together: an instruction's result depends only on the instruction and the scratchpad contents
it starts on, whether it runs first, after others, or overlapped with the one before it.

Both copies also promise that no two units use one port of a scratchpad's memories in one
cycle (hw/core/banks.py: a bank has one write and one read port): the hold makes a GEMM step
wait while its ACC bank is one the ALU uses, so nothing is lost to a conflict.

Only one element is compared, ACC[row] lane ``lane`` and its OUT mirror, with ``row`` and
``lane`` picked by the solver (so every element is, one at a time). The check is bounded: it
holds for every pair of instructions that both copies complete within the depth (the covers
show pairs that do: an overlapped pair, one whose GEMM was held on the ALU's rows).

Bounds and abstractions, stated (docs/formal.md): the configuration's datapath with scratchpads
of :data:`FORMAL_ROWS` rows (:func:`formal_config`: the stage's logic is the same at any depth,
and few rows make instructions meet on them, which is where hazards live); :data:`INSNS`
instructions of at most :data:`MAX_STEPS` steps (``iter_out``, ``iter_in`` and the micro-op
count each at most :data:`MAX_LOOP`), no LOAD or FINISH (they never run beside another, and
the loads are other proofs' part); tokens always available. The *values* are small, because a
solver cannot merge the arithmetic of two copies that runs at different cycles, and each value
it must follow through both makes every step slower (free 32-bit ACC values made the check
about 20 times slower by step 9). A hazard changes which rows meet when, and small values tell
the rows apart as well as large ones; the arithmetic itself is ``alu.ops`` and ``gemm.lane``'s
part. So: ACC lanes start in :data:`ACC_RANGE`, the ALU's immediate in :data:`IMM_RANGE`; the
ALU's op is ADD or MOV (the ALU's control depends on the op only through "reads ACC[dst]", true
for ADD and false for MOV: hw/core/alu.py, ``needs_dst``); INP and WGT are zero (constant rows in a
flattened design, so Yosys folds the GEMM's products away), so a GEMM step
writes its ACC row back unchanged (ACC[dst] + 0), or 0 with ``reset``: a read-modify-write of
its row, which is all a hazard with the ALU can disturb.
"""

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import data
from amaranth.utils import exact_log2

from avta.hw.core.compute import Compute, connect_scratchpads
from avta.hw.core.decode import InsnDecode
from avta.hw.core.sram import geometry, row_layout, scratchpad_ports
from avta.hw.core.stage_control import StageControl
from avta.isa import costs
from avta.isa.enums import AluOp, ErrorCode, Opcode, Stage
from avta.isa.layout import layouts
from avta.isa.memories import SCRATCHPADS, scratchpad

from ..harness import Check, Harness

__all__ = ["checks", "formal_config", "INSNS", "MAX_STEPS", "FORMAL_ROWS"]

#: Instructions in a check: ``overlap`` runs all of them on both copies, ``fresh`` the last one
#: on copy A and all of them on copy B.
INSNS = 2
#: The pairs the stage runs at once, by check: ``overlap``, a GEMM beside the detached ALU
#: before it; ``drain``, an ALU instruction that starts while the GEMM before it drains
#: (detached once its last step is issued). A GEMM after a draining GEMM shares its pipeline
#: (gemm.py's forwarding holds for any sequence of steps); anything else runs one after the
#: other in both copies.
OVERLAP_PAIRS = {"overlap": (Opcode.ALU, Opcode.GEMM), "drain": (Opcode.GEMM, Opcode.ALU)}
#: Loop bounds of each instruction: ``iter_out``, ``iter_in`` and ``uop_end − uop_bgn`` each at
#: most :data:`MAX_LOOP`, and their product (the steps) at most :data:`MAX_STEPS`.
MAX_LOOP = 2
MAX_STEPS = 4
#: INP and WGT elements lie in this range (inclusive); micro-ops are free.
ELEMENT_RANGE = (0, 0)
#: ACC lanes of the initial contents lie in this range (``None``: any value).
ACC_RANGE = (0, 3)
#: The ALU's immediate (signed) lies in this range (``None``: any value).
IMM_RANGE = (0, 3)
#: Rows of each scratchpad in the check (OUT has ACC's).
FORMAL_ROWS = {"uop": 4, "inp": 4, "wgt": 4, "acc": 4}


def formal_config(cfg):
    """``cfg`` with scratchpads of :data:`FORMAL_ROWS` rows."""
    return cfg.replace(**{
        f"log_{name}_buff_size": exact_log2(rows * scratchpad(cfg, name).row_bits // 8)
        for name, rows in FORMAL_ROWS.items()})


class ComputeStage:
    """One copy: stage control, compute unit and scratchpads, wired as in
    :class:`~avta.hw.core.core.Core`, with the scratchpads' rows visible (``rows``) and written
    from ``preload`` in the power-on cycle."""

    def __init__(self, m, name, cfg, faults, preload, power_on):
        self.name = name
        self.module = stage = Module()
        m.submodules[name] = stage
        pads, wr, rd = scratchpad_ports(stage, cfg)
        stage.submodules.ctrl = self.ctrl = ctrl = StageControl(cfg=cfg, faults=faults)
        stage.submodules.unit = self.unit = unit = Compute(cfg=cfg, faults=faults)
        stage.d.comb += [
            unit.start.eq(ctrl.start), ctrl.done.eq(unit.done), ctrl.err.eq(unit.err),
            ctrl.detaching.eq(unit.detaching), ctrl.joins.eq(unit.joins),
            ctrl.detach_late.eq(unit.detach_late),
            ctrl.detached_done.eq(unit.detached_done), ctrl.late_done.eq(unit.gemm_done),
            unit.insn.eq(ctrl.insn.payload.insn),
            # Tokens are always there and never overflow; the run never fails.
            ctrl.prev_nonzero.eq(1), ctrl.next_nonzero.eq(1), ctrl.halt.eq(0),
            ctrl.prev_overflow.eq(0), ctrl.next_overflow.eq(0), unit.abort.eq(0),
        ]
        connect_scratchpads(stage, unit, cfg, wr, rd)
        #: Two units on one port of a scratchpad's memories (hw/core/banks.py) this cycle.
        self.conflict = Cat(banked.conflict for banked in pads.values()).any()
        self.rows = {}
        for pad in SCRATCHPADS:
            banked = pads[pad]
            self.rows[pad] = []
            for row in range(geometry(cfg, pad).depth):
                # A row lives in one bank, in every copy of it (hw/core/banks.py).
                bank, local = banked.locate(row)
                for copy in range(banked.copies):
                    port = banked.memories[(bank, copy)].write_port()
                    stage.d.comb += [port.addr.eq(local), port.data.eq(preload[pad][row]),
                                     port.en.eq(~power_on)]
                now = banked.memories[(bank, 0)].read_port(domain="comb")
                stage.d.comb += now.addr.eq(local)
                self.rows[pad].append(now.data)



def same_rows(rows, others, pads=("acc", "out")):
    """Every row of ``pads`` equal in ``rows`` and ``others`` (dicts: scratchpad → rows)."""
    same = 1
    for pad in pads:
        for mine, theirs in zip(rows[pad], others[pad]):
            same &= mine == theirs
    return same


class ComputeConsistencyHarness(Harness):
    def __init__(self, cfg, faults, mode):
        super().__init__()
        self._cfg, self._faults, self._mode = formal_config(cfg), faults, mode

    def _instructions(self, m, opcodes=None):
        """:data:`INSNS` arbitrary constant instructions, each one fetch would dispatch to
        compute (decode without error) as a GEMM or ALU (``opcodes[i]`` if given) within the
        loop bounds."""
        cfg = self._cfg
        lay = layouts(cfg)
        insns = []
        for i in range(INSNS):
            raw = self.constant(m, f"insn{i}", lay.insn.size)
            insn = lay.insn(raw)
            m.submodules[f"decode{i}"] = decode = InsnDecode(cfg=cfg)
            m.d.comb += decode.insn.eq(raw)
            loop = insn.gemm        # GEMM and ALU share the loop fields' places
            uops = Signal(range(MAX_LOOP + 1), name=f"uops{i}")
            m.d.comb += uops.eq(loop.uop_end - loop.uop_bgn)
            opcode = insn.head.opcode
            allowed = (opcode == Opcode.GEMM) | (opcode == Opcode.ALU)
            if opcodes:
                allowed = opcode == opcodes[i]
            self.assume(m, (decode.error == ErrorCode.NONE) & (decode.stage == Stage.COMPUTE)
                        & allowed
                        & (loop.uop_end >= loop.uop_bgn) & (loop.uop_end - loop.uop_bgn <= MAX_LOOP)
                        & (loop.iter_out <= MAX_LOOP) & (loop.iter_in <= MAX_LOOP)
                        & (loop.iter_out * loop.iter_in * uops <= MAX_STEPS))
            self.assume(m, (opcode != Opcode.ALU) | (insn.alu.alu_opcode == AluOp.ADD)
                        | (insn.alu.alu_opcode == AluOp.MOV))
            if IMM_RANGE:
                imm = insn.alu.imm.as_signed()
                self.assume(m, (opcode != Opcode.ALU)
                            | ((imm >= IMM_RANGE[0]) & (imm <= IMM_RANGE[1])))
            insns.append(raw)
        return insns

    def _preload(self, m, name):
        """Free initial contents for every row of every scratchpad (INP and WGT elements in
        :data:`ELEMENT_RANGE`, ACC lanes in :data:`ACC_RANGE`). A range of one value makes
        its rows constants, not free inputs assumed equal to them: the same contents, but
        Yosys folds a constant, so with INP and WGT zero the GEMM's products leave the
        solver's problem instead of being worked out to zero at every step of both copies."""
        cfg = self._cfg
        rows = {}
        bounds = {"inp": ELEMENT_RANGE, "wgt": ELEMENT_RANGE, "acc": ACC_RANGE}
        for pad in SCRATCHPADS:
            geo = geometry(cfg, pad)
            lo, hi = bounds.get(pad) or (None, None)
            if lo is not None and lo == hi:
                rows[pad] = [Signal(geo.row_bits, name=f"{name}_{pad}{r}")
                             for r in range(geo.depth)]
            else:
                rows[pad] = [self.input(f"{name}_{pad}{r}", geo.row_bits)
                             for r in range(geo.depth)]
            if lo is None:
                continue
            for raw in rows[pad]:
                view = data.View(row_layout(cfg, pad), raw)
                for vector in view:
                    for element in vector:
                        if lo == hi:
                            m.d.comb += element.eq(lo)
                        else:
                            self.assume(m, (element >= lo) & (element <= hi))
        return rows

    def _feed(self, m, stage, insns, first, drained):
        """Offer ``insns[first:]`` to ``stage`` in order; with ``drained``, only while nothing
        executes there. Returns the count of instructions taken."""
        ctrl = stage.ctrl
        count = len(insns)
        taken = Signal(range(count + 1), init=first, name=f"{stage.name}_taken")
        offer = self.started(m) & (taken < count)
        if drained:
            # Nothing runs beside: while an instruction is detached the next waits (the head
            # executes with nothing detached, so its offer stays up until it leaves).
            offer &= ~ctrl.draining & ~ctrl.detached
        m.d.comb += [ctrl.insn.valid.eq(offer),
                     ctrl.insn.payload.insn.eq(Array(insns)[taken]),
                     ctrl.insn.payload.index.eq(taken)]
        with m.If(ctrl.insn.valid & ctrl.insn.ready):
            m.d.sync += taken.eq(taken + 1)
        return taken

    def properties(self, m):
        cfg, faults = self._cfg, self._faults
        power_on = self.started(m)
        if self._mode in OVERLAP_PAIRS:
            insns = self._instructions(m, OVERLAP_PAIRS[self._mode])
            preload = self._preload(m, "s")
            a = ComputeStage(m, "serial", cfg, faults, preload, power_on)
            b = ComputeStage(m, "pipelined", cfg, faults, preload, power_on)
            taken_a = self._feed(m, a, insns, 0, drained=True)
            taken_b = self._feed(m, b, insns, 0, drained=False)
        else:
            insns = self._instructions(m)
            a = ComputeStage(m, "first", cfg, faults, self._preload(m, "a"), power_on)
            b = ComputeStage(m, "after", cfg, faults, self._preload(m, "b"), power_on)
            taken_b = self._feed(m, b, insns, 0, drained=True)
            taken_a = self._feed(m, a, insns, len(insns) - 1, drained=True)
            # A waits for B to reach I, and starts its I on the same contents as B's.
            at_last = (taken_b == len(insns) - 1) & b.ctrl.insn.valid
            synced = Signal()
            with m.If(at_last):
                m.d.sync += synced.eq(1)
            with m.If(~at_last & ~synced):
                m.d.comb += a.ctrl.insn.valid.eq(0)
            self.assume(m, ~(at_last & ~synced) | same_rows(a.rows, b.rows, SCRATCHPADS))

        ended = ((taken_a == len(insns)) & ~a.ctrl.busy & (taken_b == len(insns))
                 & ~b.ctrl.busy)
        # One arbitrary element (the solver picks its row and lane) stands for all of them.
        row = self.constant(m, "row", geometry(cfg, "acc").addr_bits)
        lane = self.constant(m, "lane", range(cfg.batch * cfg.block_out))
        mine, theirs = self._element(a.rows, row, lane), self._element(b.rows, row, lane)
        self.promise(m, ~ended | (mine == theirs))
        # The banks' ports are never contended: a GEMM step waits while its bank is one the
        # ALU's rows reach (hw/core/compute.py), so no write is dropped and no read misrouted.
        self.promise(m, ~a.conflict & ~b.conflict)
        changed = mine != self._element(self._initial(m, a), row, lane)
        if self._mode in OVERLAP_PAIRS:
            overlapped = Signal()
            beside = b.ctrl.detached if self._mode == "overlap" else b.ctrl.draining
            with m.If(beside & b.ctrl.start):
                m.d.sync += overlapped.eq(1)
            held = Signal()
            # overlap: a GEMM step held on the ALU's rows; drain: the ALU waited for the GEMM.
            with m.If(b.unit.gemm_held if self._mode == "overlap" else b.unit.alu_waiting):
                m.d.sync += held.eq(1)
            self.cover(m, ended & overlapped & changed)
            # An ALU instruction waits only where a step can still be in s2 .. s(1 + S) when
            # it is dispatched: with two or more pipeline registers (hw/core/compute.py).
            if self._mode == "overlap" or cfg.gemm_stages >= 2:
                self.cover(m, ended & held & changed)
        else:
            # I changes an element the first instruction had changed in the other copy.
            theirs_before = self._element(self._initial(m, b), row, lane)
            first_changed = Signal()
            with m.If(at_last & ~synced & (theirs != theirs_before)):
                m.d.sync += first_changed.eq(1)
            self.cover(m, ended & changed)
            self.cover(m, ended & changed & first_changed)

    def _element(self, rows, row, lane):
        """ACC[row] lane ``lane`` and its OUT mirror, of ``rows``."""
        cfg = self._cfg
        acc = Array(data.View(row_layout(cfg, "acc"), r).as_value() for r in rows["acc"])[row]
        out = Array(rows["out"])[row]
        return Cat(acc.word_select(lane, cfg.acc_width), out.word_select(lane, cfg.out_width))

    def _initial(self, m, stage):
        """``stage``'s ACC and OUT rows as they were after power-on (the preload): the covers
        ask for instructions that change them."""
        loaded = Signal()       # the cycle after power-on: the rows hold the preload
        m.d.sync += loaded.eq(~self.started(m))
        snapshot = {}
        for pad in ("acc", "out"):
            snapshot[pad] = []
            for row in stage.rows[pad]:
                kept = Signal.like(row)
                with m.If(loaded):
                    m.d.sync += kept.eq(row)
                snapshot[pad].append(kept)
        return snapshot


def _small(cfg):
    """Up to 4 ACC lanes (tiny): the depths below; above (default's 16 lanes) each step costs
    the solver several times more (on default ``overlap``'s step 12 ran past 14 minutes,
    ``fresh``'s step 9 took 4)."""
    return cfg.batch * cfg.block_out <= 4


def checks(cfg, faults=frozenset()):
    # Without the GEMM's dot-product pipeline and index register the covers are reached at
    # steps 9 and 12 (overlap) and 8 and 11 (fresh) on every configuration (the control is the
    # same), so they look 13 and 12 deep at least; each of the GEMM's registers beyond that
    # (its dot product's, its index and row registers: costs.gemm_fill) delays a GEMM's writes
    # a cycle, and fresh's second cover runs two GEMMs one after the other.
    small, s = _small(cfg), costs.gemm_fill(cfg) - costs.COMPUTE_FILL
    return [
        Check("compute", "overlap", "an ALU instruction then a GEMM leave the same ACC/OUT "
              "element whether the GEMM runs beside the detached ALU or after it (A-QED)",
              lambda: ComputeConsistencyHarness(cfg, faults, "overlap"),
              depth=(15 if small else 12) + s, cover_depth=(15 if small else 13) + s,
              prove=False, flatten=True,
              # CPU seconds: on tiny about twice the 1,678 s measured (docs/formal.md,
              # "Budgets"); default 801 s of wall clock measured.
              budget=4000 if small else 1800),
        Check("compute", "drain", "a GEMM then an ALU instruction leave the same ACC/OUT "
              "element whether the ALU starts while the GEMM drains or after it (A-QED)",
              lambda: ComputeConsistencyHarness(cfg, faults, "drain"),
              depth=(15 if small else 12) + s, cover_depth=(15 if small else 13) + s,
              prove=False, flatten=True, budget=4000 if small else 1800),
        Check("compute", "fresh", "an instruction run first leaves the same ACC/OUT element as "
              "the same instruction on the same contents after another one (A-QED)",
              lambda: ComputeConsistencyHarness(cfg, faults, "fresh"),
              depth=(13 if small else 10) + s, cover_depth=(13 if small else 12) + 2 * s,
              prove=False, flatten=True,
              # CPU seconds: about twice tiny's, 935 s at depth 16 (1,012 before the constant
              # INP/WGT rows); default 1,284 s of wall clock measured (docs/formal.md,
              # "Budgets").
              budget=2000 if small else 4000),
    ]
