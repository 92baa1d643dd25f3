"""Stage control and error propagation (hw/core/stage_control.py and the run control of
hw/core/core.py): an error anywhere stops every stage and raises CTRL's error bit; CTRL's
launch/busy/finish/error protocol.

The harness is the real :class:`~avta.hw.core.core.Core` (fetch, decode, the three queues and
stage controls, the four token counters, the run and error logic, the counters) at a small
fetch ring and queue depth (the logic is the same at any), with its three execution units
replaced by models of their contract (``Core(units=...)``): the load, compute and store
units are where the datapath and the scratchpads are, far beyond what a proof of the control
can carry, and what the control relies on is only this contract:

* a unit reports ``done`` only while it executes an instruction it was started on, ``err``
  (a DRAM error, docs/isa.md §3.5 error 9) only with ``done``, and compute ``finish`` only
  with the ``done`` of a FINISH;
* compute says ``detaching`` exactly for an ALU instruction and ``joins`` exactly for a GEMM
  (hw/core/compute.py: an ALU runs detached, a GEMM may start beside it); a detached ALU
  reports ``detached_done`` once, only after it started, and its ``done`` is not the unit's;
* once ``abort`` is up, a unit (and a detached ALU) ends its instruction within
  :data:`ABORT_CYCLES` cycles (the real units stop requesting and end when the beats already
  requested have arrived, the ALU and GEMM when the steps already issued have written);
* otherwise an instruction may take any time.

Environment: for ``halt`` one run from power-on (a launch in the first cycle), for ``ctrl``
launches at any time; runs of at most
:data:`MAX_INSNS` instructions at an arbitrary 16-byte aligned address, arbitrary base
registers (so error 11 is possible), fetch's memory free data answering at full speed (a
beat every cycle a read is open, in any order, any beat may carry an error).

``halt``
    From the cycle an error is latched (ERR_CODE ≠ 0): no unit is started (every stage
    stops), every unit still executing sees ``abort``, FINISH is never reported; a unit's
    DRAM error is latched in the next cycle; and within :data:`BOUND` cycles the run has
    ended with CTRL's error bit set (``busy`` low, ``error`` high). Covers: the error bit
    raised by a DRAM error of each of the three stages, by a decode error, by an unaligned
    base; each unit and a detached ALU aborted mid-instruction; a run that finishes; a run
    still busy :data:`BOUND` − 1 cycles after its error (the bound is tight).
``ctrl``
    CTRL's start/done/error protocol at the core's ports (docs/architecture.md, control
    registers), over any number of runs (the host launches whenever it likes): a launch the
    core takes (not busy) clears FINISH, ERROR, CYCLES, the counters, ERR_CODE and ERR_INSN in
    the next cycle; BUSY follows in the cycle after (unless a second launch restarts the run
    first) and stays until the run ends, which sets exactly one of FINISH and ERROR; they change
    at no other time, so a launch while busy is ignored; ERR_CODE is 0 after a run that
    finished and non-zero after one that failed. Covers: a launch clears FINISH; a launch
    clears ERROR; a launch while busy; runs ending each way.
"""

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import wiring
from amaranth.utils import exact_log2

from avta.hw.core.compute import Compute
from avta.hw.core.core import Core
from avta.hw.core.queue import INDEX_BITS
from avta.hw.core.tensor_load import LOAD_STAGE_TYPES, TensorLoad
from avta.hw.core.tensor_store import TensorStore
from avta.hw.mem_client import ADDR_BITS
from avta.isa.encoding import INSN_BYTES
from avta.isa.enums import ErrorCode, Opcode
from avta.isa.memories import BASE_KEYS

from ..harness import Check, Harness
from .read_memory import serve_reads

__all__ = ["checks", "UnitModel", "ABORT_CYCLES", "MAX_INSNS", "BOUND"]

#: A unit ends an aborted instruction within this many cycles (the units' contract, assumed).
ABORT_CYCLES = 2
#: Instructions in the run (enough for an error in one stage while others hold instructions).
MAX_INSNS = 3
#: Cycles from the error's latching to CTRL's error bit, at most (the promise): the units'
#: abort latency, then on the longest path (a GEMM beside a detached ALU, both aborted) a
#: cycle for the stage to see the ALU's completion, a cycle to retire the GEMM and a cycle for
#: the core's end-of-run register. It is tight: the cover ``since == BOUND - 1 & busy`` is
#: reached, and BOUND - 1 fails with a counterexample.
BOUND = ABORT_CYCLES + 3
#: Fetch ring, read size and queue depth of the core in the check.
RING, BURST, QUEUE_DEPTH = 2, 1, 2


def _signature_only(unit):
    """``unit``'s signature; the unit (and the parts it built) is never elaborated, which
    Amaranth would otherwise warn about."""
    for part in (unit, *vars(unit).values()):
        if isinstance(part, Elaboratable):
            part._MustUse__silence = True
    return unit.signature


class UnitModel(wiring.Component):
    """A unit with the real one's ports, whose ``done``, ``err`` (and ``finish``) the harness
    drives from free inputs under the contract's assumptions; its other outputs stay 0 (it
    never touches memory or the scratchpads)."""

    def elaborate(self, platform):
        return Module()


class StageHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._faults, self._prop = cfg, faults, prop

    def properties(self, m):
        cfg = self._cfg
        real = {"load": TensorLoad(cfg=cfg, types=LOAD_STAGE_TYPES), "compute": Compute(cfg=cfg),
                "store": TensorStore(cfg=cfg)}
        units = {name: UnitModel(_signature_only(unit)) for name, unit in real.items()}
        core = Core(cfg=cfg, queue_depth=QUEUE_DEPTH, fetch_ring=RING, fetch_burst=BURST,
                    faults=self._faults, units=units)
        m.submodules.core = core

        # "halt": one run, launched in the first cycle; "ctrl": the host launches at will.
        if self._prop == "halt":
            launch = Signal(init=1)
            m.d.sync += launch.eq(0)
        else:
            launch = self.input("launch")
        clear = launch & ~core.busy             # a launch the core takes: the run restarts
        insn_addr = self.constant(m, "insn_addr", ADDR_BITS)
        count = self.constant(m, "insn_count", INDEX_BITS)
        self.assume(m, (insn_addr[:exact_log2(INSN_BYTES)] == 0) & (count <= MAX_INSNS))
        m.d.comb += [core.launch.eq(launch), core.insn_addr.eq(insn_addr),
                     core.insn_count.eq(count)]
        for key in BASE_KEYS:
            base = f"{key.lower()}_base"
            m.d.comb += getattr(core, base).eq(self.constant(m, base, ADDR_BITS))
        serve_reads(self, m, core.fetch_mem, data_bits=cfg.axi_data_bits, slots=RING,
                    name="fetch", full_speed=True)

        erred = core.err_code != ErrorCode.NONE
        since = Signal(range(BOUND + 1))
        with m.If(erred & (since != BOUND)):
            m.d.sync += since.eq(since + 1)
        # The units, and the compute stage's detached ALU as a unit of its own.
        executions = {name: (unit, unit.start, unit.abort) for name, unit in units.items()}
        compute = units["compute"]
        opcode = compute.insn.head.opcode
        m.d.comb += [compute.detaching.eq(opcode == Opcode.ALU),
                     compute.joins.eq(opcode == Opcode.GEMM)]
        executions["compute"] = (compute, compute.start & ~compute.detaching, compute.abort)
        executions["alu"] = (compute, compute.start & compute.detaching, compute.abort)
        for name, (unit, start, abort) in executions.items():
            busy, age = Signal(name=f"{name}_busy"), Signal(range(ABORT_CYCLES + 1),
                                                           name=f"{name}_abort_age")
            done = self.input(f"{name}_done")
            if name == "alu":
                m.d.comb += unit.detached_done.eq(done)
                err = Signal()              # the ALU reports no DRAM error
            else:
                err = self.input(f"{name}_err")
                m.d.comb += [unit.done.eq(done), unit.err.eq(err)]
            with m.If(start):
                m.d.sync += busy.eq(1)
            with m.Elif(done):
                m.d.sync += busy.eq(0)
            with m.If(busy & abort & ~done):
                m.d.sync += age.eq(age + 1)
            with m.Else():
                m.d.sync += age.eq(0)
            with m.If(clear):                   # the launch resets the real units too
                m.d.sync += [busy.eq(0), age.eq(0)]
            self.assume(m, ~done | busy)
            self.assume(m, ~err | done)
            self.assume(m, (age != ABORT_CYCLES) | done)
            if name == "compute":
                finish = self.input("compute_finish")
                m.d.comb += unit.finish.eq(finish)
                self.assume(m, ~finish | (done & (opcode == Opcode.FINISH)))

            if self._prop != "halt":
                continue
            self.promise(m, ~erred | ~start)
            self.promise(m, ~(erred & busy) | abort)
            was_err = Signal(name=f"{name}_was_err")
            m.d.sync += was_err.eq(done & err)
            self.promise(m, ~was_err | erred)
            # Covers: this stage's DRAM error ends the run with the error bit; a unit aborted.
            failed_here = Signal(name=f"{name}_failed")
            with m.If(done & err & ~erred):
                m.d.sync += failed_here.eq(1)
            if name != "alu":
                self.cover(m, failed_here & core.error
                           & (core.err_code == ErrorCode.DRAM_OUT_OF_RANGE))
            self.cover(m, busy & abort)

        if self._prop == "ctrl":
            self._ctrl_protocol(m, core, launch, clear)
            return
        self.promise(m, ~(erred & core.finish))
        self.promise(m, (since != BOUND) | (~core.busy & core.error))
        self.cover(m, core.error & (core.err_code == ErrorCode.ILLEGAL_OPCODE))
        self.cover(m, core.error & (core.err_code == ErrorCode.UNALIGNED_BASE))
        self.cover(m, core.finish)
        self.cover(m, (since == BOUND - 1) & core.busy)     # the bound is needed


    def _ctrl_protocol(self, m, core, launch, clear):
        """CTRL's start/done/error protocol at the core's ports (docs/architecture.md)."""
        after, after2 = Signal(), Signal()          # one and two cycles after a taken launch
        was_busy, was_finish, was_error = Signal(), Signal(), Signal()
        m.d.sync += [after.eq(clear), after2.eq(after), was_busy.eq(core.busy),
                     was_finish.eq(core.finish), was_error.eq(core.error)]
        ended = was_busy & ~core.busy
        erred = core.err_code != ErrorCode.NONE
        self.promise(m, ~(core.finish & core.error))
        # The launch clears the result, CYCLES, the counters and the error registers ...
        counters = core.counters.as_value()
        self.promise(m, ~after | (~core.finish & ~core.error & ~core.busy & (core.cycles == 0)
                                  & (counters == 0) & ~erred & (core.err_insn == 0)))
        # ... busy follows two cycles after it and stays until the run ends, which sets exactly
        # one of FINISH and ERROR; they change at no other time.
        # (A launch in the cycle after a launch, before busy shows, restarts the run.)
        self.promise(m, ~after2 | after | core.busy)
        self.promise(m, ~ended | (core.finish ^ core.error))
        self.promise(m, (core.finish == was_finish) | after | (ended & core.finish))
        self.promise(m, (core.error == was_error) | after | (ended & core.error))
        self.promise(m, ~was_busy | core.busy | ended)
        # ERR_CODE is 0 after a run that finished and names the error after one that failed.
        self.promise(m, ~core.finish | ~erred)
        self.promise(m, ~core.error | erred)
        self.cover(m, after & was_finish)            # a launch clears FINISH
        self.cover(m, after & was_error)             # a launch clears ERROR
        self.cover(m, launch & core.busy)            # a launch while busy is ignored
        self.cover(m, ended & core.finish)
        self.cover(m, ended & core.error)


def checks(cfg, faults=frozenset()):
    return [
        Check("stage_control", "halt", "an error stops every stage (no start, running units "
              f"aborted) and raises CTRL's error bit within {BOUND} cycles",
              lambda: StageHarness(cfg, faults, "halt"), depth=32, prove=False, cover_depth=20),
        Check("stage_control", "ctrl", "CTRL's protocol: a launch clears FINISH, ERROR, CYCLES, "
              "the counters and the error registers, busy follows and ends with exactly one of "
              "FINISH and ERROR; a launch while busy is ignored",
              lambda: StageHarness(cfg, faults, "ctrl"), depth=40, prove=False, cover_depth=24),
    ]
