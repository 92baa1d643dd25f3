"""The well-formedness checker: it accepts the runtime's programs and names what breaks a rule."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.encoding import finish
from avta.isa.enums import AluOp, MemType, Opcode, Stage
from avta.isa.insn import MemoryInsn
from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d
from avta.runtime.ops.conv_plan import Conv2dShape
from avta.runtime.ops.requant import Requant
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import Loop, UopKernel
from avta.runtime.wellformed import WellFormedError, check_stream, check_wellformed

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


@pytest.fixture
def cfg():
    return load_config("tiny")


def gemm_program(cfg, *, tokens=True, store_tokens=True):
    """LOAD INP/WGT → GEMM → STORE, with or without the tokens that order them."""
    b = StreamBuilder(cfg)
    b.load(MemType.INP, sram=0, dram=0, x_size=4)
    b.load(MemType.WGT, sram=0, dram=0, x_size=1)
    if tokens:
        b.dep_push(L, C)
        b.dep_pop(L, C)
    b.gemm(UopKernel([(0, 0, 0)], [Loop(4, 1)]), reset=True)
    b.gemm(UopKernel([(0, 0, 0)], [Loop(4, 1, 1)]))
    if store_tokens:
        b.dep_push(C, S)
        b.dep_pop(C, S)
    b.store(sram=0, dram=100, x_size=4)
    return b.finish()


def rules(found):
    return {v.rule for v in found}


def test_builder_programs_pass(cfg):
    assert check_wellformed(gemm_program(cfg)) == []
    shape = Conv2dShape(1, 8, 6, 6, 8, 3, 3, 1, 1)
    prog = build_conv2d(cfg, shape, Conv2dBuffers(0, 4096, 8192, 16384), requant=Requant(4))
    assert check_wellformed(prog) == []


def test_missing_load_token_is_a_hazard(cfg):
    found = check_wellformed(gemm_program(cfg, tokens=False))
    assert "a" in rules(found)
    assert any("read-after-write on INP row" in v.message for v in found)


def test_missing_store_token_is_a_hazard(cfg):
    found = check_wellformed(gemm_program(cfg, store_tokens=False))
    assert any(v.rule == "a" and "OUT row" in v.message for v in found)


def test_write_after_read_on_out(cfg):
    """Compute overwrites rows the store may not have read yet: a write-after-read hazard."""
    b = StreamBuilder(cfg)
    b.load(MemType.ACC, sram=0, dram=0, x_size=2)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store(sram=0, dram=50, x_size=2)
    b.load(MemType.ACC, sram=0, dram=2, x_size=2)       # no S→C wait
    found = check_wellformed(b.finish())
    assert any(v.rule == "a" and "write-after-read" in v.message for v in found)


def test_read_of_unwritten_row(cfg):
    b = StreamBuilder(cfg)
    b.alu(UopKernel([(0, 5)]), AluOp.ADD)                # ACC[5] and ACC[0] never written
    found = check_wellformed(b.finish())
    assert any(v.rule == "e" and "ACC row" in v.message for v in found)

    # Rows left by an earlier run count as written.
    b = StreamBuilder(cfg)
    b.alu(UopKernel([(0, 5)]), AluOp.ADD)
    assert check_wellformed(b.finish(), written={"acc": [0, 5]}) == []


def test_alu_step_reads_a_row_written_earlier_in_it(cfg):
    """Step 2 reads ACC[1], written by step 1 of the same instruction: not a read of garbage."""
    b = StreamBuilder(cfg)
    b.load(MemType.ACC, sram=0, dram=0, x_size=1)
    b.alu(UopKernel([(1, 0), (2, 1)]), AluOp.MOV)
    assert check_wellformed(b.finish()) == []
    b = StreamBuilder(cfg)
    b.load(MemType.ACC, sram=0, dram=0, x_size=1)
    b.alu(UopKernel([(2, 1), (1, 0)]), AluOp.MOV)       # reads ACC[1] before it is written
    assert "e" in rules(check_wellformed(b.finish()))


def raw(cfg, insns):
    return check_stream(cfg, insns, np.zeros(0, dtype=np.uint64))


def test_missing_finish(cfg):
    found = raw(cfg, [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=1)])
    assert "c" in rules(found)


def test_finish_not_ordered_after_a_stage(cfg):
    found = raw(cfg, [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=1),
                      finish()])
    assert any(v.rule == "c" and v.insn == 0 for v in found)


def test_counter_overflow(cfg):
    cfg = cfg.replace(token_bits=2)
    push = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=0, push_next=1)
    pop = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_prev=1)
    found = raw(cfg, [push] * 4 + [pop] * 4 + [finish()])
    assert any(v.rule == "b" and "holds at most 3" in v.message for v in found)


def test_deadlock(cfg):
    pop = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_prev=1)
    found = raw(cfg, [pop, finish()])
    assert any(v.rule == "deadlock" and "COMPUTE" in v.message for v in found)


def test_store_writing_twice_and_oversized_load(cfg):
    overlap = MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, x_size=4, y_size=2,
                         x_stride=2)
    big = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC, x_size=cfg.acc_depth + 1,
                     y_size=1)
    found = raw(cfg, [big, overlap, finish()])
    assert {"d", "index"} <= rules(found)


def test_dram_hazard_between_store_and_load(cfg):
    """A LOAD reading bytes a STORE writes, with no tokens between them."""
    b = StreamBuilder(cfg)
    b.load(MemType.ACC, sram=0, dram=0, x_size=1)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store(sram=0, dram=0, x_size=1)                    # OUT element 0 = bytes [0, 4)
    b.load(MemType.INP, sram=0, dram=0, x_size=1)        # INP element 0 = bytes [0, 4)
    found = check_wellformed(b.finish())
    assert any(v.rule == "a" and "DRAM" in v.message for v in found)


def test_error_lists_violations(cfg):
    with pytest.raises(WellFormedError, match=r"rule \(a\)"):
        check_wellformed(gemm_program(cfg, tokens=False), raise_error=True)


def test_uop_contents_come_from_the_buffer(cfg):
    """The checker reads the micro-ops each GEMM runs: a GEMM whose (only) micro-op points at
    an unloaded INP row is caught even though its loops look harmless."""
    b = StreamBuilder(cfg)
    b.load(MemType.INP, sram=0, dram=0, x_size=1)
    b.load(MemType.WGT, sram=0, dram=0, x_size=1)
    b.dep_push(L, C)
    b.dep_pop(L, C)
    b.gemm(UopKernel([(0, 0, 0)]), reset=True)
    b.gemm(UopKernel([(0, 7, 0)]))
    found = check_wellformed(b.finish())
    assert any(v.rule == "e" and "INP row 7" in v.message for v in found)
