"""The events a run's energy is counted from (:class:`EventCounts`).

Every count is exact and the same on fsim and tsim except ``cycles`` (fsim's is its estimate):
they come from the run's performance counters (micro-op steps and bytes moved, docs/isa.md's
exact counters) and the program's :meth:`~avta.runtime.program.Program.step_mix`, which splits
what the counters do not (reset GEMM steps, one- or two-read ALU steps, LOAD rows with padding).

Per micro-op step (hw/core/compute.py): a GEMM step reads one micro-op, one INP row, one WGT row
and the ACC row it accumulates into, and writes that ACC row and its OUT mirror; a reset step
reads only its micro-op and writes zeros. An ALU step reads one micro-op, one or two ACC rows and
writes one ACC row and its OUT mirror. A LOAD writes its rows (padding included) into its
scratchpad, a STORE reads OUT rows. DRAM moves the counted bytes plus every instruction's own.
"""

from dataclasses import asdict, dataclass

from avta.isa.encoding import INSN_BYTES
from avta.isa.memories import SCRATCHPADS, scratchpad
from avta.isa.registers import BYTE_COUNTERS

__all__ = ["EventCounts", "event_counts"]


@dataclass(frozen=True)
class EventCounts:
    """One run's events: ``reads`` and ``writes`` are rows per scratchpad, ``dram_bytes``
    includes the instruction fetch (``insns`` instructions of :data:`INSN_BYTES`)."""
    cycles: int
    insns: int
    macs: int
    alu_ops: int
    reads: dict
    writes: dict
    dram_bytes: int

    def __add__(self, other):
        return EventCounts(
            self.cycles + other.cycles, self.insns + other.insns, self.macs + other.macs,
            self.alu_ops + other.alu_ops,
            {p: self.reads[p] + other.reads[p] for p in SCRATCHPADS},
            {p: self.writes[p] + other.writes[p] for p in SCRATCHPADS},
            self.dram_bytes + other.dram_bytes)

    @classmethod
    def zero(cls):
        return cls(0, 0, 0, 0, dict.fromkeys(SCRATCHPADS, 0), dict.fromkeys(SCRATCHPADS, 0), 0)

    def to_dict(self):
        return asdict(self)


def event_counts(cfg, *, counters, mix, cycles, insns):
    """The :class:`EventCounts` of a run of ``insns`` instructions on ``cfg`` that took
    ``cycles`` and ended with performance ``counters`` (name -> value); ``mix`` is its
    program's :meth:`~avta.runtime.program.Program.step_mix`."""
    gemm, alu = counters["GEMM_STEPS"], counters["ALU_STEPS"]
    mac_steps = gemm - mix["gemm_reset_steps"]
    if mac_steps < 0 or mix["alu_one_read_steps"] > alu:
        raise ValueError(f"the step mix {mix} does not fit the counters GEMM_STEPS {gemm}, "
                         f"ALU_STEPS {alu}: are they from the same program?")
    load_rows = mix["load_rows"]
    acc_writes = load_rows["acc"] + gemm + alu
    out_row_bytes = scratchpad(cfg, "out").row_bytes
    reads = {"uop": gemm + alu, "inp": mac_steps, "wgt": mac_steps,
             "acc": mac_steps + 2 * alu - mix["alu_one_read_steps"],
             "out": counters["OUT_ST"] // out_row_bytes}
    writes = {"uop": load_rows["uop"], "inp": load_rows["inp"], "wgt": load_rows["wgt"],
              "acc": acc_writes, "out": acc_writes}
    return EventCounts(
        cycles=int(cycles), insns=int(insns),
        macs=mac_steps * cfg.batch * cfg.block_in * cfg.block_out,
        alu_ops=alu * cfg.batch * cfg.block_out, reads=reads, writes=writes,
        dram_bytes=sum(counters[name] for name in BYTE_COUNTERS) + insns * INSN_BYTES)
