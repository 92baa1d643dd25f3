"""Decode-time errors of docs/isa.md §3.5: each rule, and the lowest code winning."""

import pytest

from avta.isa.enums import AluOp, ErrorCode as E, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn
from avta.isa.legality import check, check_program

LOAD, STORE = Opcode.LOAD, Opcode.STORE


def load(**kw):
    return MemoryInsn(opcode=LOAD, **kw)


def store(**kw):
    return MemoryInsn(opcode=STORE, **kw)


# (instruction, expected code or None, a piece of the reason)
CASES = [
    (IllegalInsn(opcode=5), E.ILLEGAL_OPCODE, "opcode 5 is undefined"),
    (IllegalInsn(opcode=7), E.ILLEGAL_OPCODE, "opcode 7"),
    (AluInsn(alu_opcode=7), E.ILLEGAL_ALU_OPCODE, "ALU opcode 7"),
    (AluInsn(alu_opcode=AluOp.MOV), None, None),
    (load(memory_type=MemType.OUT, x_size=1), E.ILLEGAL_MEMORY_TYPE, "memory type 4"),
    (load(memory_type=6), E.ILLEGAL_MEMORY_TYPE, "memory type 6"),
    (load(memory_type=7, x_size=0), E.ILLEGAL_MEMORY_TYPE, "memory type 7"),  # also with x_size 0
    (load(memory_type=MemType.ACC_8BIT, x_size=1), None, None),
    (load(memory_type=MemType.INP, pad_value=3), E.ILLEGAL_PAD_VALUE, "pad_value 3"),
    (load(memory_type=MemType.ACC, pad_value=2), None, None),
    (store(memory_type=MemType.ACC, x_size=1), E.ILLEGAL_STORE, "only OUT"),
    (store(memory_type=MemType.OUT, x_size=1, x_pad_1=1), E.ILLEGAL_STORE, "cannot pad"),
    (store(memory_type=MemType.OUT, x_size=1, pad_value=1), E.ILLEGAL_STORE, "cannot pad"),
    (store(memory_type=MemType.UOP, x_size=0), None, None),  # upstream's store-stage NOP
    (store(memory_type=MemType.OUT, x_size=1, pop_next=1), E.TOKEN_WRONG_STAGE, "no next stage"),
    (store(push_next=1), E.TOKEN_WRONG_STAGE, "no next stage"),
    (load(memory_type=MemType.INP, pop_prev=1), E.TOKEN_WRONG_STAGE, "no previous stage"),
    (load(memory_type=MemType.WGT, push_prev=1), E.TOKEN_WRONG_STAGE, "no previous stage"),
    (load(memory_type=MemType.UOP, pop_prev=1, pop_next=1, push_prev=1, push_next=1), None, None),
    (load(memory_type=MemType.INP, pop_next=1, push_next=1), None, None),
    (store(memory_type=MemType.OUT, x_size=1, pop_prev=1, push_prev=1), None, None),
    (GemmInsn(opcode=Opcode.FINISH, pop_prev=1), E.FINISH_WITH_TOKEN, "FINISH cannot"),
    (GemmInsn(opcode=Opcode.FINISH), None, None),
    (GemmInsn(pop_prev=1, push_next=1), None, None),
    # several rules at once: the lowest code wins
    (load(memory_type=6, pad_value=3, pop_prev=1), E.ILLEGAL_MEMORY_TYPE, "memory type 6"),
    (load(memory_type=MemType.INP, pad_value=3, pop_prev=1), E.ILLEGAL_PAD_VALUE, "pad_value"),
    (store(memory_type=MemType.ACC, x_size=2, pop_next=1), E.ILLEGAL_STORE, "only OUT"),
]


@pytest.mark.parametrize("insn, code, reason", CASES, ids=[str(i) for i in range(len(CASES))])
def test_rule(insn, code, reason):
    violation = check(insn)
    if code is None:
        assert violation is None
    else:
        assert violation.code == code
        assert reason in violation.reason


def test_program_reports_the_first_illegal_instruction():
    program = [load(memory_type=MemType.INP), AluInsn(), AluInsn(alu_opcode=7), IllegalInsn(5)]
    index, violation = check_program(program)
    assert index == 2 and violation.code == E.ILLEGAL_ALU_OPCODE
    assert check_program(program[:2]) is None


# SCL (ALU opcode 7) exists only where ALU_SCALE is 1 or 2 (docs/isa.md §3.4, §3.5).
def test_scl_is_error_2_without_the_scale_key():
    from avta.isa.config import load_config
    insn = AluInsn(alu_opcode=AluOp.SCL, use_imm=1, imm=1 << 14)
    for cfg in (None, load_config("default"), load_config("tiny")):
        violation = check(insn, cfg)
        assert violation.code == E.ILLEGAL_ALU_OPCODE
        assert "ALU_SCALE: 1" in violation.reason


@pytest.mark.parametrize("scale", [1, 2])
def test_scl_is_legal_with_the_scale_key(scale):
    from avta.isa.config import load_config
    from avta.isa.legality import alu_ops
    cfg = load_config("tiny").replace(alu_scale=scale)
    assert check(AluInsn(alu_opcode=AluOp.SCL), cfg) is None
    assert check_program([AluInsn(alu_opcode=AluOp.SCL)], cfg) is None
    assert check_program([AluInsn(alu_opcode=AluOp.SCL)]) is not None
    assert AluOp.SCL in alu_ops(cfg) and AluOp.SCL not in alu_ops(load_config("tiny"))
