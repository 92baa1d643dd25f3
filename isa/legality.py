"""Decode-time legality of an instruction (docs/isa.md §3.5, codes 1–6 and 8).

When one instruction breaks several rules the lowest code wins. fsim checks a whole stream with
:func:`check` before it starts; the RTL applies the same rules as instructions are fetched.
"""

from dataclasses import dataclass

from .enums import AluOp, ErrorCode, MemType, Opcode, PadValue, Stage
from .insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn
from .memories import LOADABLE

__all__ = ["Violation", "check", "check_program", "alu_ops", "LOADABLE_MEMORY_TYPES"]

#: LOAD memory types; any other (OUT, 6, 7) is error 3.
LOADABLE_MEMORY_TYPES = frozenset(LOADABLE)


def alu_ops(cfg=None):
    """The ALU operations an instruction may use at ``cfg``: every :class:`AluOp`, less SCL
    unless the configuration key ``ALU_SCALE`` is 1 (docs/isa.md §3.4). ``None`` stands for a
    configuration without the scale multipliers, upstream's set."""
    return _ALU_OPS[bool(cfg is not None and cfg.alu_scale)]


#: :func:`alu_ops` with and without the scale multipliers (the decoder asks per instruction).
_ALU_OPS = {scale: tuple(op for op in AluOp if op != AluOp.SCL or scale)
            for scale in (False, True)}


@dataclass(frozen=True)
class Violation:
    """The rule an instruction breaks: its error code and a sentence saying why."""
    code: ErrorCode
    reason: str


def check(insn, cfg=None):
    """The :class:`Violation` of ``insn`` with the lowest code, or ``None`` when it is legal;
    ``cfg`` decides whether SCL exists (:func:`alu_ops`; ``None``: it does not)."""
    found = _violations(insn, alu_ops(cfg))
    return min(found, key=lambda v: v.code) if found else None


def check_program(insns, cfg=None):
    """``(index, Violation)`` of the first illegal instruction, or ``None``."""
    for index, insn in enumerate(insns):
        violation = check(insn, cfg)
        if violation is not None:
            return index, violation
    return None


def _violations(insn, legal_alu_ops):
    if isinstance(insn, IllegalInsn):
        return [Violation(ErrorCode.ILLEGAL_OPCODE,
                          f"opcode {insn.opcode} is undefined (LOAD 0, STORE 1, GEMM 2, "
                          f"FINISH 3, ALU 4)")]
    found = []
    if isinstance(insn, AluInsn) and insn.alu_opcode not in legal_alu_ops:
        names = ", ".join(f"{op.name} {op.value}" for op in legal_alu_ops)
        found.append(Violation(ErrorCode.ILLEGAL_ALU_OPCODE,
                               f"ALU opcode {insn.alu_opcode} is undefined here ({names}; SCL 7 "
                               f"needs the configuration key ALU_SCALE: 1 or 2)"
                               if insn.alu_opcode == AluOp.SCL else
                               f"ALU opcode {insn.alu_opcode} is undefined ({names})"))
    if isinstance(insn, MemoryInsn) and insn.opcode == Opcode.LOAD:
        if insn.memory_type not in LOADABLE_MEMORY_TYPES:
            found.append(Violation(ErrorCode.ILLEGAL_MEMORY_TYPE,
                                   f"LOAD of memory type {insn.memory_type} (loadable: UOP 0, "
                                   f"WGT 1, INP 2, ACC 3, ACC_8BIT 5)"))
        if insn.pad_value not in PadValue._value2member_map_:
            found.append(Violation(ErrorCode.ILLEGAL_PAD_VALUE,
                                   f"LOAD pad_value {insn.pad_value} is undefined (0 zero, 1 min, "
                                   f"2 max)"))
    if isinstance(insn, MemoryInsn) and insn.opcode == Opcode.STORE and insn.x_size > 0:
        if insn.memory_type != MemType.OUT:
            found.append(Violation(ErrorCode.ILLEGAL_STORE,
                                   f"STORE of memory type {insn.memory_type}: only OUT (4) can "
                                   f"be stored"))
        pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
        if any(pads) or insn.pad_value:
            found.append(Violation(ErrorCode.ILLEGAL_STORE,
                                   f"STORE with padding (pads {pads}, pad_value "
                                   f"{insn.pad_value}): stores cannot pad"))
    if insn.stage == Stage.LOAD and (insn.pop_prev or insn.push_prev):
        found.append(Violation(ErrorCode.TOKEN_WRONG_STAGE,
                               "a load-stage instruction has no previous stage: pop_prev and "
                               "push_prev must be 0"))
    if insn.stage == Stage.STORE and (insn.pop_next or insn.push_next):
        found.append(Violation(ErrorCode.TOKEN_WRONG_STAGE,
                               "a store-stage instruction has no next stage: pop_next and "
                               "push_next must be 0"))
    if isinstance(insn, GemmInsn) and insn.opcode == Opcode.FINISH and any(insn.flags.values()):
        found.append(Violation(ErrorCode.FINISH_WITH_TOKEN, "FINISH cannot pop or push tokens"))
    return found
