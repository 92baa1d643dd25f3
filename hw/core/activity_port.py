"""Activity ports: what tsim's activity recorder samples every cycle (avta.sim.activity).

The generator adds them only when activity recording is asked for (``Core(activity=True)``,
``VtaTop(activity=True)``, ``top_verilog(cfg, activity=True)``); without them the design has no
extra logic and no extra ports, and its Verilog is unchanged. They are plain taps of signals the
core has anyway:

* ``running``: the run is in progress: the cycles CYCLES and every performance counter count;
* per stage (``load``, ``compute``, ``store``): its :class:`~.trace_port.StageState` (the same
  encoding as the trace port): IDLE exactly when the stage's IDLE_x counter counts, WAIT
  exactly when its STALL_x counter counts, BUSY while an instruction executes and HALT
  otherwise (the cycle an instruction starts, or a stage holding an instruction the ending run
  will not start);
* ``compute_kind``: what the compute stage runs (:class:`ComputeKind`), so that compute busy
  cycles split into GEMM, ALU and the rest (LOAD UOP/ACC, FINISH): the head instruction's kind
  while it executes, else GEMM while a detached GEMM drains, else ALU while a detached ALU
  instruction runs (hw/core/compute.py), else the head's kind. A cycle in which the ALU runs
  beside a GEMM (executing or draining) counts as GEMM; one in which the GEMM waits for the
  ALU's rows, or has completed and waits for the ALU to retire, as ALU.
"""

from amaranth.hdl import Mux
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import Out

from avta.isa.enums import Opcode

from .trace_port import TRACE_STAGES, StageState

__all__ = ["ActivitySignature", "ComputeKind", "drive_activity"]


class ComputeKind(enum.Enum, shape=2):
    """The class of the compute stage's head instruction."""
    OTHER = 0
    GEMM = 1
    ALU = 2


def ActivitySignature():
    """The activity port bundle (all outputs; the same for every configuration)."""
    members = {"running": Out(1)}
    for stage in TRACE_STAGES:
        members[f"{stage}_state"] = Out(StageState)
    members["compute_kind"] = Out(ComputeKind)
    return wiring.Signature(members)


def stage_state(ctrl):
    """The :class:`StageState` of a :class:`~.stage_control.StageControl` this cycle."""
    return Mux(ctrl.busy, StageState.BUSY,
               Mux(ctrl.idle_event, StageState.IDLE,
                   Mux(ctrl.stall_event, StageState.WAIT, StageState.HALT)))


def drive_activity(m, activity, stages, running, gemm_held):
    """Drive ``activity`` (an :func:`ActivitySignature` interface) from the Core's stage
    controls (by short name), its ``running`` signal and the compute stage's ``gemm_held``, in
    module ``m``."""
    for stage, short in TRACE_STAGES.items():
        m.d.comb += getattr(activity, f"{stage}_state").eq(stage_state(stages[short]))
    cp = stages["cp"]
    opcode = cp.insn.payload.insn.head.opcode
    head_kind = Mux(opcode == Opcode.GEMM, ComputeKind.GEMM,
                    Mux(opcode == Opcode.ALU, ComputeKind.ALU, ComputeKind.OTHER))
    m.d.comb += [
        activity.running.eq(running),
        # A draining GEMM's cycles are the GEMM's, an ALU instruction beside it or not (as the
        # cycles of one beside an executing GEMM are).
        activity.compute_kind.eq(Mux(cp.draining & ~cp.executing, ComputeKind.GEMM,
                                     Mux(cp.detached & (~cp.executing | gemm_held),
                                         ComputeKind.ALU, head_kind))),
    ]
