"""The accelerator core: fetch → three instruction queues → load, compute and store stages with
the four token counters between them, the scratchpads, the performance counters and the error
registers (docs/architecture.md, Hardware; docs/isa.md §3).

A run: ``launch`` (ignored while ``busy``) clears the token counters, the queues, CYCLES, the
counters and the error registers (docs/isa.md §3: scratchpads keep their contents), then fetch starts.
It ends when

* FINISH has executed and fetch has checked the whole stream: ``finish``;
* or an error was found, every unit has drained its memory traffic, and (for an execution
  error) fetch has checked the rest of the stream: ``error``, with ``err_code`` and ``err_insn``.

Error precedence (docs/isa.md §3.5): decode-time errors are found in program order and stop the
machine at once; fsim checks the whole stream before it runs, so a decode error anywhere in the
stream wins over an execution error (7, 9) met earlier: after an execution error or FINISH, fetch
keeps checking (without dispatching) until the end of the stream. A stream without FINISH never
ends (the host's cycle limit gives ``timeout``).

Memory traffic goes through four memory-engine clients (:mod:`avta.hw.mem_client`):
``fetch_mem``, ``ld_mem`` (INP, WGT), ``cp_mem`` (UOP, ACC, ACC_8BIT) and ``st_mem`` (OUT).
"""

import functools
import operator

from amaranth.hdl import Cat, Module, ResetInserter, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect, flipped
from amaranth.utils import exact_log2

from avta.isa.config import INSN_QUEUE_DEPTH
from avta.isa.costs import FETCH_BURST, FETCH_RING
from avta.isa.enums import ErrorCode
from avta.isa.memories import BASE_KEYS, base_alignment, memories
from avta.isa.registers import COUNTER_NAMES

from ..mem_client import ADDR_BITS, WriteClientSignature
from .compute import Compute, connect_scratchpads
from .faults import FaultName, check_faults
from .fetch import Fetch
from .queue import INDEX_BITS, InsnQueue
from .sram import SCRATCHPADS, scratchpad_ports
from .stage_control import StageControl
from .tensor_load import LOAD_STAGE_TYPES, TensorLoad
from .tensor_store import TensorStore
from .tokens import TokenCounter
from .activity_port import ActivitySignature, drive_activity
from .trace_port import TraceSignature, drive_trace

__all__ = ["Core", "counter_layout", "COUNTER_BITS", "READ_CLIENTS", "WRITE_CLIENTS"]

#: The core's memory-engine clients, by port name: the memory engine (or a model of it) serves
#: these reads and this write.
READ_CLIENTS = ("fetch_mem", "ld_mem", "cp_mem")
WRITE_CLIENTS = ("st_mem",)

#: Counters and CYCLES are 32-bit registers (docs/architecture.md, control registers).
COUNTER_BITS = 32



def counter_layout():
    """The 14 performance counters, in the order of :data:`avta.isa.registers.COUNTER_NAMES`
    (field names in lower case)."""
    return data.StructLayout({name.lower(): COUNTER_BITS for name in COUNTER_NAMES})


class Core(wiring.Component):
    """The VTA core of one configuration.

    Parameters
    ----------
    cfg : Config
    queue_depth : int
        Entries of each stage's instruction queue. Fetch dispatches in program order and waits
        while the next instruction's queue is full, so a program whose token waits need more
        than this many instructions of one stage in flight stalls (upstream VTA uses 512).
    fetch_ring, fetch_burst : int
        Fetch read-ahead (see :class:`Fetch`).
    trace : bool
        Add the ``trace`` port (:mod:`.trace_port`); off, the design has no tracing logic.
    activity : bool
        Add the ``activity`` port (:mod:`.activity_port`); off, the design is unchanged.
    faults : set of str
        Planted bugs (:mod:`.faults`), for testing the verification tools only.
    units : dict, optional
        ``{"load": ..., "compute": ..., "store": ...}``: units with the signatures of
        :class:`TensorLoad`, :class:`Compute` and :class:`TensorStore` to use in their place.
        Only the formal proof of stage control (``avta.formal.blocks.stage_control``) passes
        it, with models of the units' contract (docs/formal.md); default: the real units.

    Ports
    -----
    launch : In(1)
        One-cycle pulse: start a run (ignored while ``busy``).
    insn_addr, insn_count : In(32)
        Byte address (16-byte aligned) and number of instructions; stable during a run.
    uop_base, inp_base, wgt_base, acc_base, out_base : In(32)
        Byte offsets added to each memory type's DRAM addresses; stable during a run.
    busy : Out(1)
        A run is in progress.
    finish, error : Out(1)
        How the last run ended (cleared at launch).
    err_code : Out(ErrorCode), err_insn : Out(32)
        The error and the index of the instruction that raised it.
    cycles : Out(32)
        Cycles from launch to the end of the run.
    counters : Out(counter_layout())
        The 14 performance counters of docs/architecture.md.
    fetch_mem, ld_mem, cp_mem : Out(ReadClientSignature)
    st_mem : Out(WriteClientSignature)
    bank_conflict : Out(len(SCRATCHPADS))
        Per scratchpad (:data:`SCRATCHPADS` order): two units on one port of its memories this cycle (hw/core/banks.py): never, by
        the compute stage's protocol; the Amaranth simulator's runs check it (sim/amaranth/core_run.py).
        ``vta_top`` leaves it unconnected, so synthesis removes it.
    """

    def __init__(self, *, cfg, queue_depth=INSN_QUEUE_DEPTH, fetch_ring=FETCH_RING, fetch_burst=FETCH_BURST,
                 trace=False, activity=False, faults=(), units=None):
        self._cfg = cfg
        self._queue_depth = queue_depth
        self._trace = trace
        self._activity = activity
        self._faults = faults = check_faults(faults)
        self._fetch = Fetch(cfg=cfg, ring=fetch_ring, burst=fetch_burst, faults=faults)
        units = units or {
            "load": TensorLoad(cfg=cfg, types=LOAD_STAGE_TYPES, overlap=True, faults=faults),
            "compute": Compute(cfg=cfg, faults=faults),
            "store": TensorStore(cfg=cfg, faults=faults)}
        self._load, self._compute, self._store = units["load"], units["compute"], units["store"]
        members = {
            "launch": In(1), "insn_addr": In(ADDR_BITS), "insn_count": In(INDEX_BITS),
            **{f"{key.lower()}_base": In(ADDR_BITS) for key in BASE_KEYS},
            "busy": Out(1), "finish": Out(1), "error": Out(1),
            "err_code": Out(ErrorCode), "err_insn": Out(INDEX_BITS),
            "cycles": Out(COUNTER_BITS), "counters": Out(counter_layout()),
            "fetch_mem": Out(self._fetch.signature.members["mem"].signature),
            "ld_mem": Out(self._load.signature.members["mem"].signature),
            "cp_mem": Out(self._compute.signature.members["mem"].signature),
            "st_mem": Out(WriteClientSignature(data_bits=cfg.axi_data_bits)),
            "bank_conflict": Out(len(SCRATCHPADS)),
        }
        if trace:
            members["trace"] = Out(TraceSignature(cfg))
        if activity:
            members["activity"] = Out(ActivitySignature())
        super().__init__(members)

    @property
    def cfg(self):
        return self._cfg

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg

        # -- scratchpads (outside the launch reset: they keep their contents, docs/isa.md §3) ----------
        pads, wr, rd = scratchpad_ports(m, cfg)
        m.d.comb += self.bank_conflict.eq(Cat(pads[name].conflict for name in SCRATCHPADS))

        # -- everything else restarts at launch ---------------------------------------------------
        clear = Signal()
        run = Module()
        m.submodules.run = ResetInserter(clear)(run)
        m.d.comb += clear.eq(self.launch & ~self.busy)
        go = Signal()
        m.d.sync += go.eq(clear)
        # The host may write INSN_ADDR/INSN_COUNT for the next run while the core is idle; fetch
        # sees the values latched at launch, so a finished run never reads the new ones (it would
        # fetch past its end at its old address and leave orphan beats behind the reset).
        insn_addr, insn_count = Signal(ADDR_BITS), Signal(INDEX_BITS)
        # docs/isa.md §3.5, error 11: a base register off its alignment is refused at launch,
        # before any instruction; fetch does not start.
        unaligned = Signal()
        with m.If(clear):
            m.d.sync += [insn_addr.eq(self.insn_addr), insn_count.eq(self.insn_count),
                         unaligned.eq(functools.reduce(operator.or_, (
                             getattr(self, f"{key.lower()}_base")[:exact_log2(
                                 base_alignment(cfg, key))] != 0 for key in BASE_KEYS)))]

        run.submodules.fetch = fetch = self._fetch
        run.submodules.load = load = self._load
        run.submodules.compute = compute = self._compute
        run.submodules.store = store = self._store
        queues, stages = {}, {}
        for name, port in (("ld", fetch.ld_insn), ("cp", fetch.cp_insn), ("st", fetch.st_insn)):
            run.submodules[f"{name}_insn_q"] = queues[name] = q = InsnQueue(
                cfg=cfg, depth=self._queue_depth, faults=self._faults)
            # The load stage's LOADs overlap (read-ahead) when its unit releases them.
            run.submodules[f"{name}_ctrl"] = stages[name] = StageControl(
                cfg=cfg, faults=self._faults, late_in_done=name != "ld")
            connect(run, fetch=port, queue=q.w)
            connect(run, queue=q.r, stage=stages[name].insn)
        tokens = {}
        for name in ("l2c", "c2l", "c2s", "s2c"):
            run.submodules[f"tok_{name}"] = tokens[name] = TokenCounter(cfg=cfg,
                                                                        faults=self._faults)

        # docs/isa.md §3: "prev" of compute is load, "next" is store. Load pops C→L and pushes L→C;
        # store pops C→S and pushes S→C; compute pops L→C, S→C and pushes C→L, C→S.
        links = {"ld": {"next": ("c2l", "l2c")}, "st": {"prev": ("c2s", "s2c")},
                 "cp": {"prev": ("l2c", "c2l"), "next": ("s2c", "c2s")}}
        for stage, sides in links.items():
            ctrl = stages[stage]
            for side, (popped, pushed) in sides.items():
                run.d.comb += [
                    getattr(ctrl, f"{side}_nonzero").eq(tokens[popped].nonzero),
                    tokens[popped].pop.eq(getattr(ctrl, f"pop_{side}")),
                    tokens[pushed].push.eq(getattr(ctrl, f"push_{side}")),
                    getattr(ctrl, f"{side}_overflow").eq(tokens[pushed].overflow),
                ]

        # -- units --------------------------------------------------------------------------------
        for ctrl, unit in ((stages["ld"], load), (stages["cp"], compute), (stages["st"], store)):
            run.d.comb += [unit.start.eq(ctrl.start), ctrl.done.eq(unit.done),
                           ctrl.err.eq(unit.err)]
        cp = stages["cp"]
        load_overlaps = "release" in self._load.signature.members
        if load_overlaps:
            ld = stages["ld"]
            run.d.comb += [ld.detach_late.eq(load.release), ld.joins.eq(load.joins),
                           ld.late_done.eq(load.detached_done),
                           ld.late_err.eq(load.detached_err)]
        run.d.comb += [cp.detaching.eq(compute.detaching), cp.joins.eq(compute.joins),
                       cp.detach_late.eq(compute.detach_late),
                       cp.detached_done.eq(compute.detached_done),
                       cp.late_done.eq(compute.gemm_done)]
        run.d.comb += [
            load.insn.eq(stages["ld"].insn.payload.insn.memory),
            compute.insn.eq(stages["cp"].insn.payload.insn),
            store.insn.eq(stages["st"].insn.payload.insn.memory),
            fetch.start.eq(go & ~unaligned), fetch.insn_addr.eq(insn_addr),
            fetch.insn_count.eq(insn_count),
            load.inp_base.eq(self.inp_base), load.wgt_base.eq(self.wgt_base),
            compute.uop_base.eq(self.uop_base), compute.acc_base.eq(self.acc_base),
            store.out_base.eq(self.out_base),
        ]
        connect(run, flipped(self.fetch_mem), fetch.mem)
        connect(run, flipped(self.ld_mem), load.mem)
        connect(run, flipped(self.cp_mem), compute.mem)
        connect(run, flipped(self.st_mem), store.mem)
        connect(run, load.inp_wr, wr["inp"])
        connect(run, load.wgt_wr, wr["wgt"])
        connect_scratchpads(run, compute, cfg, wr, rd)
        connect(run, store.out_rd, rd["out"])
        if self._trace:
            drive_trace(run, self.trace, stages, wr,
                        load.wr_released if load_overlaps else None)

        # -- run control and errors ---------------------------------------------------------------
        finished = Signal()          # FINISH has executed
        failed = Signal()            # an error is latched in err_code / err_insn
        decode_failed = fetch.error
        run.d.comb += fetch.scan.eq(finished | failed)
        # docs/isa.md §3.5: an error stops the machine at once: a long GEMM or ALU abandons its
        # remaining steps, a LOAD or STORE its remaining rows, instead of finishing them.
        run.d.comb += [compute.abort.eq(failed | decode_failed),
                       load.abort.eq(failed | decode_failed),
                       store.abort.eq(failed | decode_failed)]
        for ctrl in stages.values():
            run.d.comb += ctrl.halt.eq(finished | failed | decode_failed)
        with run.If(compute.done & compute.finish):
            run.d.sync += finished.eq(1)

        # An execution error: the lowest code among the stages erring this cycle (later
        # statements win, so the preferred one comes last); decode errors (from fetch) override
        # it whenever they are found.
        exec_code = Signal(ErrorCode)
        exec_index = Signal(INDEX_BITS)
        exec_error = Signal()
        for code in (ErrorCode.DRAM_OUT_OF_RANGE, ErrorCode.TOKEN_OVERFLOW):
            for ctrl in reversed(list(stages.values())):
                with run.If(ctrl.error & (ctrl.error_code == code)):
                    run.d.comb += [exec_error.eq(1), exec_code.eq(code),
                                   exec_index.eq(ctrl.error_index)]
        with run.If(go & unaligned):
            run.d.sync += [failed.eq(1), self.err_code.eq(ErrorCode.UNALIGNED_BASE),
                           self.err_insn.eq(0)]
        with run.Elif(decode_failed):
            run.d.sync += [failed.eq(1), self.err_code.eq(fetch.error_code),
                           self.err_insn.eq(fetch.error_index)]
        with run.Elif(exec_error & ~failed):
            run.d.sync += [failed.eq(1), self.err_code.eq(exec_code),
                           self.err_insn.eq(exec_index)]

        drained = fetch.idle & ~stages["ld"].busy & ~stages["cp"].busy & ~stages["st"].busy
        running = Signal()
        run.d.comb += self.busy.eq(running)
        if self._activity:
            drive_activity(run, self.activity, stages, running, compute.gemm_held)
        with run.If(go):
            run.d.sync += running.eq(1)
        with run.If(running & drained & (decode_failed | unaligned
                                         | ((finished | failed) & fetch.checked))):
            run.d.sync += [running.eq(0), self.finish.eq(~failed & ~decode_failed),
                           self.error.eq(failed | decode_failed)]
        if FaultName.CTRL_FINISH_EARLY in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            with run.If(compute.done & compute.finish):
                run.d.sync += self.finish.eq(1)

        # -- counters (docs/architecture.md): count while the run is in progress -----------------------
        counters = self.counters
        with run.If(running):
            run.d.sync += self.cycles.eq(self.cycles + 1)
            events = {
                "acc_wr": compute.acc_write, "alu_steps": compute.alu_step,
                "gemm_steps": compute.gemm_step,
                "idle_ld": stages["ld"].idle_event, "idle_cp": stages["cp"].idle_event,
                "idle_st": stages["st"].idle_event, "stall_ld": stages["ld"].stall_event,
                "stall_cp": stages["cp"].stall_event, "stall_st": stages["st"].stall_event,
            }
            for name, event in events.items():
                with run.If(event):
                    run.d.sync += getattr(counters, name).eq(getattr(counters, name) + 1)
            for unit in (load, compute, store):
                with run.If(unit.count_valid):
                    with run.Switch(unit.count.mtype):
                        for mtype, info in memories(cfg).items():
                            with run.Case(mtype):
                                field = getattr(counters, info.counter.lower())
                                run.d.sync += field.eq(field + unit.count.bytes)
        return m
