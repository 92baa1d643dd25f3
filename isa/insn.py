"""Instructions and micro-ops as Python values, one class per format (docs/isa.md §2).

Field names are those of docs/isa.md §2 (checked against :mod:`avta.isa.formats` by the tests);
their widths depend on the configuration and are checked when encoding. ``imm`` is signed.
"""

from dataclasses import asdict, dataclass, fields, replace

from .enums import AluOp, MemType, Opcode, Stage
from .memories import stage_of

__all__ = ["MemoryInsn", "GemmInsn", "AluInsn", "IllegalInsn", "Uop", "Insn", "FORMAT_CLASSES"]

#: The memory types that exist; a decoded field may hold another value (error 3).
_TYPES = frozenset(MemType)


class _Insn:
    """Behaviour shared by the instruction classes."""

    @property
    def op(self):
        return Opcode(self.opcode)

    @property
    def flags(self):
        return {n: getattr(self, n) for n in ("pop_prev", "pop_next", "push_prev", "push_next")}

    def replace(self, **changes):
        return replace(self, **changes)

    def field_values(self):
        """Every field by its docs/isa.md §2 name, in format order."""
        return asdict(self)

    @classmethod
    def field_names(cls):
        return [f.name for f in fields(cls)]


@dataclass(frozen=True)
class MemoryInsn(_Insn):
    """LOAD (opcode 0) or STORE (opcode 1)."""
    opcode: int = Opcode.LOAD
    pop_prev: int = 0
    pop_next: int = 0
    push_prev: int = 0
    push_next: int = 0
    memory_type: int = 0
    sram_base: int = 0
    dram_base: int = 0
    pad_value: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0

    @property
    def stage(self):
        """Which stage runs it: decided by ``memory_type`` even when ``x_size`` is 0 (§3.1)."""
        if self.opcode == Opcode.STORE:
            return Stage.STORE
        # docs/isa.md §3.1: memory_type decides the stage; an illegal type (error 3) is decoded
        # by the compute stage's rules, as upstream's fetch routes it.
        return stage_of(self.memory_type) if self.memory_type in _TYPES else Stage.COMPUTE

    @property
    def rows(self):
        """Scratchpad rows written (LOAD) or read (STORE): W·H with padding, or y·x."""
        if self.x_size == 0:
            return 0
        if self.opcode == Opcode.STORE:
            return self.x_size * self.y_size
        return ((self.x_pad_0 + self.x_size + self.x_pad_1)
                * (self.y_pad_0 + self.y_size + self.y_pad_1))


@dataclass(frozen=True)
class _LoopInsn(_Insn):
    """The fields GEMM and ALU share (docs/isa.md §2): the head, then the micro-op loop nest and
    the dst and src factors, in encoding order."""
    opcode: int = Opcode.GEMM
    pop_prev: int = 0
    pop_next: int = 0
    push_prev: int = 0
    push_next: int = 0
    reset: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 0
    iter_in: int = 0
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0

    stage = Stage.COMPUTE

    @property
    def steps(self):
        """Micro-op steps executed: iter_out·iter_in·(uop_end − uop_bgn), 0 when degenerate."""
        return self.iter_out * self.iter_in * max(0, self.uop_end - self.uop_bgn)


@dataclass(frozen=True)
class GemmInsn(_LoopInsn):
    """GEMM (opcode 2) or FINISH (opcode 3, the same format with every other field 0)."""
    opcode: int = Opcode.GEMM
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0


@dataclass(frozen=True)
class AluInsn(_LoopInsn):
    """ALU (opcode 4). ``imm`` is a signed 16-bit value."""
    opcode: int = Opcode.ALU
    alu_opcode: int = AluOp.MIN
    use_imm: int = 0
    imm: int = 0


@dataclass(frozen=True)
class IllegalInsn(_Insn):
    """An instruction whose opcode (5..7) has no format; ``raw`` holds all 128 bits.

    ``raw`` defaults to the opcode alone; a ``raw`` whose low bits disagree with ``opcode`` is
    refused, so an illegal instruction can never encode as a legal one.
    """
    opcode: int
    raw: int = None

    stage = None

    def __post_init__(self):
        if self.opcode in FORMAT_CLASSES:
            raise ValueError(f"opcode {self.opcode} is legal; IllegalInsn is for opcodes 5..7")
        if self.raw is None:
            object.__setattr__(self, "raw", self.opcode)
        elif self.raw & 0b111 != self.opcode:
            raise ValueError(f"IllegalInsn(opcode={self.opcode}) with raw {self.raw:#x}, whose "
                             f"opcode bits are {self.raw & 0b111}")

    @property
    def op(self):
        return None


@dataclass(frozen=True)
class Uop:
    """A micro-op: ACC destination, INP (GEMM) or ACC (ALU) source, and WGT index."""
    dst_idx: int = 0
    src_idx: int = 0
    wgt_idx: int = 0


Insn = MemoryInsn | GemmInsn | AluInsn | IllegalInsn

#: Which class encodes and decodes each opcode.
FORMAT_CLASSES = {Opcode.LOAD: MemoryInsn, Opcode.STORE: MemoryInsn, Opcode.GEMM: GemmInsn,
                  Opcode.FINISH: GemmInsn, Opcode.ALU: AluInsn}
