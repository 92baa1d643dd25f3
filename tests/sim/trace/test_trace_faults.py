"""The trace diff finds planted RTL bugs at the right instruction and row.

Each test builds a design on ``tiny`` with one bug from :mod:`avta.hw.core.faults`, runs a
small program on fsim and on that design with traces, and checks what ``avta trace-diff``
reports: the stage, the instruction index, the row, the lanes, and the exit status.
"""

import numpy as np
import pytest

from avta.cli import main
from avta.hw.core.faults import FAULT_UOP_ROW, FAULTS, FaultName, check_faults
from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Stage
from avta.runtime.device import Device
from avta.sim.fsim.backend import FsimBackend
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import UopKernel
from avta.sim.mirror import MirrorBackend, MirrorMismatch
from avta.sim.trace.diff import diff_files
from avta.sim.tsim.backend import TsimBackend

pytestmark = pytest.mark.tsim

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE
CFG = load_config("tiny")
DRAM = 1 << 16


def _faulty_device(tmp_path, fault):
    tsim = TsimBackend(CFG, dram_size=DRAM, trace=True, faults={fault})
    backend = MirrorBackend(FsimBackend(CFG, dram_size=DRAM), tsim, trace_mode="arch",
                            trace_dir=tmp_path)
    return Device(CFG, backend)


def _acc_rows(dev, rng, rows):
    data = rng.integers(-1000, 1000, (rows, CFG.batch, CFG.block_out), dtype=np.int32)
    return dev.upload(data, mem=MemType.ACC).elem(CFG, MemType.ACC)


def _run_expecting_divergence(dev, program, tmp_path):
    with pytest.raises(MirrorMismatch) as caught:
        dev.run(program)
    assert "the traces differ" in str(caught.value)
    fsim_trace, tsim_trace = sorted(tmp_path.glob("run1-*.trace"))
    return fsim_trace, tsim_trace, caught.value


def _index_of(program, predicate):
    return next(i for i, insn in enumerate(program.insns) if predicate(insn))


def test_alu_lane_fault_found_at_the_add_and_its_row(tmp_path, capsys):
    dev = _faulty_device(tmp_path, FaultName.ALU_LANE)
    rng = np.random.default_rng(1)
    acc = _acc_rows(dev, rng, 16)
    out = dev.alloc(16 * CFG.out_elem_bytes, mem=MemType.OUT).elem(CFG, MemType.OUT)
    b = StreamBuilder(CFG)
    b.load(MemType.ACC, sram=0, dram=acc, x_size=16)
    b.alu(UopKernel([(1, 8)]), AluOp.MAX, imm=-5)          # unaffected: not ADD
    b.alu(UopKernel([(2, 9), (6, 10)]), AluOp.ADD)          # the planted bug: row 2 first
    b.alu(UopKernel([(3, 11)]), AluOp.ADD, imm=7)            # unaffected: lanes of B all equal
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store(sram=0, dram=out, x_size=16)
    program = b.finish()
    add = _index_of(program, lambda i: getattr(i, "alu_opcode", None) == AluOp.ADD
                    and not i.use_imm)

    fsim_trace, tsim_trace, _ = _run_expecting_divergence(dev, program, tmp_path)
    report = diff_files(fsim_trace, tsim_trace)
    found = report.divergences["compute"]
    assert (found.insn, found.key) == (add, ("acc", 2))
    assert "load" not in report.divergences
    assert found.cycle is not None

    assert main(["trace-diff", str(fsim_trace), str(tsim_trace)]) == 1
    text = capsys.readouterr().out
    assert f"compute  DIVERGES at instruction {add} (tsim cycle " in text
    assert f"instruction {add}: ALU ADD uop" in text
    assert "ACC row 2: data differs" in text
    assert "lane 1 (b0 o1):" in text and "lane 0 (" not in text
    assert text.rstrip().splitlines()[-1].startswith("mismatched: compute at instruction")


def test_gemm_acc_index_fault_found_at_the_gemm_and_the_row_it_missed(tmp_path, capsys):
    dev = _faulty_device(tmp_path, FaultName.GEMM_ACC_INDEX)
    rng = np.random.default_rng(2)
    acc = _acc_rows(dev, rng, 16)
    inp = dev.upload(rng.integers(-20, 20, (8, CFG.batch, CFG.block_in), dtype=np.int8),
                     mem=MemType.INP).elem(CFG, MemType.INP)
    wgt = dev.upload(rng.integers(-20, 20, (8, CFG.block_out, CFG.block_in), dtype=np.int8),
                     mem=MemType.WGT).elem(CFG, MemType.WGT)
    out = dev.alloc(16 * CFG.out_elem_bytes, mem=MemType.OUT).elem(CFG, MemType.OUT)
    b = StreamBuilder(CFG)
    b.load(MemType.INP, sram=0, dram=inp, x_size=8)
    b.load(MemType.WGT, sram=0, dram=wgt, x_size=8)
    b.dep_push(L, C)
    b.dep_pop(L, C)
    b.load(MemType.ACC, sram=0, dram=acc, x_size=16)
    # The first kernel lands at micro-op row 0, so its second micro-op sits in FAULT_UOP_ROW.
    assert FAULT_UOP_ROW == 1
    kernel = UopKernel([(0, 0, 0), (4, 1, 1), (8, 2, 2)])
    b.gemm(kernel)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store(sram=0, dram=out, x_size=16)
    program = b.finish()
    gemm = _index_of(program, lambda i: type(i).__name__ == "GemmInsn")

    fsim_trace, tsim_trace, _ = _run_expecting_divergence(dev, program, tmp_path)
    report = diff_files(fsim_trace, tsim_trace)
    found = report.divergences["compute"]
    # fsim writes row 4; the faulty design writes row 5 instead: row 4 comes first.
    assert (found.insn, found.key) == (gemm, ("acc", 4))
    assert found.event_b is None and found.event_a is not None

    assert main(["trace-diff", str(fsim_trace), str(tsim_trace)]) == 1
    text = capsys.readouterr().out
    assert f"instruction {gemm}: GEMM uop [0,3)" in text
    assert "ACC row 4 is written only in fsim" in text


def test_a_correct_design_matches(tmp_path, capsys):
    """The same kind of program on the design without faults: the diff says matched, exit 0."""
    tsim = TsimBackend(CFG, dram_size=DRAM, trace=True)
    dev = Device(CFG, MirrorBackend(FsimBackend(CFG, dram_size=DRAM), tsim, trace_mode="full",
                                    trace_dir=tmp_path))
    acc = _acc_rows(dev, np.random.default_rng(3), 8)
    out = dev.alloc(8 * CFG.out_elem_bytes, mem=MemType.OUT).elem(CFG, MemType.OUT)
    b = StreamBuilder(CFG)
    b.load(MemType.ACC, sram=0, dram=acc, x_size=8)
    b.alu(UopKernel([(2, 1), (6, 3)]), AluOp.ADD)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store(sram=0, dram=out, x_size=8)
    dev.run(b.finish())
    fsim_trace, tsim_trace = sorted(tmp_path.glob("run1-*.trace"))
    assert main(["trace-diff", str(fsim_trace), str(tsim_trace)]) == 0
    text = capsys.readouterr().out
    assert "ignored (in one trace only): activity" in text
    assert text.rstrip().splitlines()[-1].startswith("matched:")


def test_unknown_fault_is_refused():
    with pytest.raises(ValueError, match="unknown fault"):
        check_faults({"no-such-bug"})
    assert {FaultName.ALU_LANE, FaultName.GEMM_ACC_INDEX} <= set(FAULTS)
