"""A finished program: instructions, the micro-ops they load, and how to place them in DRAM.

The builder writes the ``dram_base`` of every micro-op LOAD relative to the program's own micro-op
buffer; :meth:`Program.link` adds the buffer's element address once the device has allocated it
(the UOP base register stays 0, as upstream's drivers leave it).
"""

from avta.isa.asm import format_insn
from avta.isa.encoding import codec
from avta.isa.enums import AluOp, Opcode
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.memories import SCRATCHPADS, memory, scratchpad_of
from avta.isa.registers import BYTE_COUNTERS, STEP_COUNTERS

__all__ = ["Program"]


class Program:
    """Instructions and micro-ops of one run on configuration ``cfg``.

    Attributes
    ----------
    insns : tuple
        The instructions, FINISH last; micro-op LOADs not yet linked.
    uops : tuple of Uop
        The micro-op buffer's contents.
    uop_loads : tuple of int
        Indices of the micro-op LOADs, whose ``dram_base`` counts from the buffer's start.
    ledger : TokenLedger
        The tokens and the happens-before order of the instructions.
    """

    def __init__(self, cfg, insns, uops, uop_loads, ledger):
        self.cfg = cfg
        self.insns = insns
        self.uops = uops
        self.uop_loads = uop_loads
        self.ledger = ledger

    def __len__(self):
        return len(self.insns)

    def link(self, uop_elem):
        """The instructions with micro-op LOADs pointing at DRAM element ``uop_elem``."""
        insns = list(self.insns)
        for i in self.uop_loads:
            insns[i] = insns[i].replace(dram_base=insns[i].dram_base + uop_elem)
        return insns

    def encode(self, uop_elem):
        """The instruction stream's bytes, linked to micro-ops at DRAM element ``uop_elem``."""
        return codec(self.cfg).encode_program(self.link(uop_elem))

    def uop_bytes(self):
        return codec(self.cfg).encode_uops(self.uops)

    def disasm(self):
        return "\n".join(f"{i:5d}  {format_insn(insn)}" for i, insn in enumerate(self.insns))

    def expected_counters(self):
        """The exact counters of docs/architecture.md (bytes per memory type, micro-op steps)."""
        cfg = self.cfg
        counters = dict.fromkeys(BYTE_COUNTERS + STEP_COUNTERS, 0)
        for insn in self.insns:
            if isinstance(insn, MemoryInsn) and insn.x_size:
                target = memory(cfg, insn.memory_type)
                counters[target.counter] += insn.x_size * insn.y_size * target.elem_bytes
            elif isinstance(insn, AluInsn):
                counters["ALU_STEPS"] += insn.steps
            elif isinstance(insn, GemmInsn) and insn.opcode == Opcode.GEMM:
                counters["GEMM_STEPS"] += insn.steps
        return counters

    def step_mix(self):
        """What the counters leave unsplit, from the instruction stream (the same on every
        target): ``gemm_reset_steps``, the GEMM steps that only zero an ACC row (no multiply, no
        INP, WGT or ACC read); ``alu_one_read_steps``, the ALU steps that read one ACC row (an
        immediate operand, or MOV, which reads only the source) rather than two; ``load_rows``,
        per scratchpad the rows LOADs write, padding included (docs/isa.md §3.1)."""
        mix = {"gemm_reset_steps": 0, "alu_one_read_steps": 0,
               "load_rows": dict.fromkeys(SCRATCHPADS, 0)}
        for insn in self.insns:
            if isinstance(insn, MemoryInsn) and insn.opcode == Opcode.LOAD and insn.rows:
                mix["load_rows"][scratchpad_of(insn.memory_type)] += insn.rows
            elif isinstance(insn, AluInsn):
                if insn.use_imm or insn.alu_opcode == AluOp.MOV:
                    mix["alu_one_read_steps"] += insn.steps
            elif isinstance(insn, GemmInsn) and insn.opcode == Opcode.GEMM and insn.reset:
                mix["gemm_reset_steps"] += insn.steps
        return mix
