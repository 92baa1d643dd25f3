"""Trace ports: what the tsim harness samples to write a trace (avta.sim.trace.schema).

The generator adds them only when tracing is asked for (``Core(trace=True)``,
``VtaTop(trace=True)``, ``top_verilog(cfg, trace=True)``); without them the design has no
extra logic and no extra ports. They are plain taps of signals the core has anyway:

* per stage (``load``, ``compute``, ``store``): the index of the instruction at the head of the
  stage's queue (``<stage>_insn``, the one executing while ``busy``; the load stage's released
  LOAD in a cycle it writes a row, read-ahead, hw/core/tensor_load.py), a one-cycle ``retire``
  pulse when an instruction completes without error with its index (``<stage>_retire_insn``:
  the head's, or the detached ALU instruction's, hw/core/compute.py), and the stage's ``state``
  (:class:`StageState`);
* per scratchpad a stage writes (``uop``, ``inp``, ``wgt``, ``acc``): the write port's enables,
  row address and data, exactly as the memory sees them (``acc``: the GEMM's port or a LOAD
  ACC's, one at a time). A row wider than the bus arrives in pieces under per-piece enables;
  the harness re-assembles whole rows. An interleaved scratchpad's write (the micro-ops,
  hw/core/banks.py) is several consecutive rows, one enable each;
* the detached ALU instruction's ACC write port (``alu_acc_*``, whole rows) and its index
  (``alu_insn``): its rows belong to it, not to the head instruction.

DRAM writes need no port: the harness is the AXI memory and sees every beat.
"""

from amaranth.hdl import Mux
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import Out

from avta.isa.enums import Stage
from avta.isa.memories import SCRATCHPADS, writer_stage

from .queue import INDEX_BITS
from .sram import geometry

__all__ = ["TraceSignature", "StageState", "STATE_NAMES", "TRACED_MEMORIES", "TRACE_STAGES",
           "drive_trace"]


class StageState(enum.Enum, shape=2):
    """What a stage is doing in a cycle (the trace's ``activity`` states, lower-case)."""
    #: No instruction is queued.
    IDLE = 0
    #: The head instruction waits for a token.
    WAIT = 1
    #: Executing the head instruction.
    BUSY = 2
    #: None of the above: the run is ending.
    HALT = 3


#: ``state`` names as traces spell them, in the order of their encoding.
STATE_NAMES = tuple(state.name.lower() for state in StageState)
#: Scratchpads traced, and the stage whose instructions write them (docs/isa.md §3). Every
#: scratchpad but OUT, whose rows are ACC's mirror and implied by ACC's.
TRACED_MEMORIES = {name: writer_stage(name).name.lower() for name in SCRATCHPADS
                   if name != "out"}
#: Stage names, and the Core's short names for their controls.
TRACE_STAGES = {stage.name.lower(): short for stage, short in zip(Stage, ("ld", "cp", "st"))}


def TraceSignature(cfg):
    """The trace port bundle of a core of configuration ``cfg`` (all outputs)."""
    members = {}
    for stage in TRACE_STAGES:
        members[f"{stage}_insn"] = Out(INDEX_BITS)
        members[f"{stage}_retire"] = Out(1)
        members[f"{stage}_retire_insn"] = Out(INDEX_BITS)
        members[f"{stage}_state"] = Out(StageState)
    for name in TRACED_MEMORIES:
        geo = geometry(cfg, name)
        members[f"{name}_en"] = Out(geo.en_bits)
        members[f"{name}_addr"] = Out(geo.addr_bits)
        members[f"{name}_data"] = Out(geo.write_bits)
    acc = geometry(cfg, "acc")
    members.update({"alu_insn": Out(INDEX_BITS), "alu_acc_en": Out(acc.en_bits),
                    "alu_acc_addr": Out(acc.addr_bits), "alu_acc_data": Out(acc.row_bits)})
    return wiring.Signature(members)


def drive_trace(m, trace, stages, write_ports, load_released=None):
    """Drive ``trace`` (a :func:`TraceSignature` interface) from the Core's stage controls
    (by short name) and scratchpad write ports (by memory name), in module ``m``.
    ``load_released``: the load stage's row written this cycle is its released LOAD's
    (read-ahead, hw/core/tensor_load.py): ``load_insn`` then names that LOAD."""
    for stage, short in TRACE_STAGES.items():
        ctrl = stages[short]
        index = ctrl.insn.payload.index
        if short == "ld" and load_released is not None:
            index = Mux(load_released, ctrl.late_index, index)
        if short == "cp":
            # The compute stage's writes on the GEMM's port are those of a draining GEMM until
            # it completes (hw/core/stage_control.py, ``owner_index``).
            index = ctrl.owner_index
        state = Mux(ctrl.busy, StageState.BUSY,
                    Mux(ctrl.idle_event, StageState.IDLE,
                        Mux(ctrl.stall_event, StageState.WAIT, StageState.HALT)))
        m.d.comb += [
            getattr(trace, f"{stage}_insn").eq(index),
            getattr(trace, f"{stage}_retire").eq(ctrl.retire),
            getattr(trace, f"{stage}_retire_insn").eq(ctrl.retire_index),
            getattr(trace, f"{stage}_state").eq(state),
        ]
    m.d.comb += [trace.alu_insn.eq(stages["cp"].detached_index),
                 trace.alu_acc_en.eq(write_ports["alu_acc"].en),
                 trace.alu_acc_addr.eq(write_ports["alu_acc"].addr),
                 trace.alu_acc_data.eq(write_ports["alu_acc"].data)]
    for name in TRACED_MEMORIES:
        port = write_ports[name]
        en, addr, data = port.en, port.addr, port.data
        if name == "acc":
            # The GEMM and a LOAD ACC write ACC on ports of their own (the loader's is not
            # forwarded, hw/core/compute.py), never in one cycle: the stage's writes are both.
            load = write_ports["load_acc"]
            gemm = port.en.any()
            en, addr, data = (Mux(gemm, port.en, load.en), Mux(gemm, port.addr, load.addr),
                              Mux(gemm, port.data, load.data))
        m.d.comb += [
            getattr(trace, f"{name}_en").eq(en),
            getattr(trace, f"{name}_addr").eq(addr),
            getattr(trace, f"{name}_data").eq(data),
        ]
