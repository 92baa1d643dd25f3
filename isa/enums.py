"""Opcodes, memory types, ALU operations, pad values and error codes (docs/isa.md §2, §3.1, §3.5).

They are Amaranth shaped enums, so the RTL uses the same definitions as the model and runtime.
What each member means is written once, in :mod:`avta.isa.doc_tables` (``_MEANINGS``), which
renders it into docs/isa.md's tables.
"""

from amaranth.lib import enum

from . import formats

__all__ = ["Opcode", "MemType", "AluOp", "PadValue", "ErrorCode", "Stage"]


class Opcode(enum.IntEnum, shape=formats.OPCODE_BITS):
    """Instruction opcode, bits [2:0] of every instruction. 5..7 are illegal (error 1)."""
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemType(enum.IntEnum, shape=formats.MEMORY_TYPE_BITS):
    """``memory_type`` of LOAD and STORE. LOAD of OUT, 6 or 7 is error 3; STORE moves OUT only."""
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(enum.IntEnum, shape=formats.ALU_OPCODE_BITS):
    """ALU ``alu_opcode`` (docs/isa.md §3.4). SCL exists only where the configuration key
    ``ALU_SCALE`` is 1 or 2; elsewhere 7 is illegal (error 2), as upstream
    (:func:`avta.isa.legality.alu_ops`)."""
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4
    CLP = 5
    MOV = 6
    SCL = 7


class PadValue(enum.IntEnum, shape=formats.PAD_VALUE_BITS):
    """LOAD ``pad_value``: what padding rows hold (docs/isa.md §3.1). 3 is illegal (error 4)."""
    ZERO = 0
    MIN = 1
    MAX = 2


class ErrorCode(enum.IntEnum, shape=4):
    """Error codes of docs/isa.md §3.5, as latched in the ERR_CODE register."""
    NONE = 0
    ILLEGAL_OPCODE = 1
    ILLEGAL_ALU_OPCODE = 2
    ILLEGAL_MEMORY_TYPE = 3
    ILLEGAL_PAD_VALUE = 4
    ILLEGAL_STORE = 5
    TOKEN_WRONG_STAGE = 6
    TOKEN_OVERFLOW = 7
    FINISH_WITH_TOKEN = 8
    DRAM_OUT_OF_RANGE = 9
    SRAM_OUT_OF_RANGE = 10
    UNALIGNED_BASE = 11


class Stage(enum.IntEnum, shape=2):
    """The three execution stages (docs/isa.md §3). "prev" of compute is load, "next" is store."""
    LOAD = 0
    COMPUTE = 1
    STORE = 2
