"""Errors on tsim end as on fsim (docs/isa.md §3.5): same code and instruction index for illegal
instructions, error 9 for an access outside DRAM, and a deadlock reaches the cycle limit."""

import numpy as np
import pytest

from avta.isa.encoding import codec, finish
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn, Uop
from avta.isa.memories import base_alignment, elem_bytes
from avta.sim.fsim import Fsim
from avta.sim.tsim.driver import Tsim

pytestmark = pytest.mark.tsim

DRAM_BYTES = 1 << 16
INSN_ADDR = 0x1000


def image(cfg, program, uops=()):
    """DRAM with the micro-ops at 0 and the program at INSN_ADDR."""
    c = codec(cfg)
    dram = np.zeros(DRAM_BYTES, dtype=np.uint8)
    blob = c.encode_uops(uops)
    dram[:len(blob)] = np.frombuffer(blob, dtype=np.uint8)
    code = c.encode_program(program)
    dram[INSN_ADDR:INSN_ADDR + len(code)] = np.frombuffer(code, dtype=np.uint8)
    return dram


def run_both(cfg, program, uops=(), max_cycles=200_000):
    f_dram, t_dram = image(cfg, program, uops), image(cfg, program, uops)
    fres = Fsim(cfg).run(f_dram, INSN_ADDR, len(program))
    tres = Tsim(cfg).run(t_dram, INSN_ADDR, len(program), max_cycles=max_cycles)
    return fres, tres


def load_uop(n=1, **flags):
    return MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, y_size=1, x_size=n,
                      x_stride=n, **flags)


def alu(**kw):
    return AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, **kw)


ILLEGAL = {
    "opcode 5": [load_uop(), alu(alu_opcode=AluOp.ADD, use_imm=1, imm=1), IllegalInsn(5),
                 finish()],
    "alu opcode 7": [load_uop(), alu(alu_opcode=7), finish()],
    "load memory type OUT": [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.OUT, x_size=1,
                                        y_size=1, x_stride=1), finish()],
    "pad value 3": [load_uop(), MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP,
                                           pad_value=3, x_size=1, y_size=1, x_stride=1),
                    finish()],
    "store of ACC": [MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.ACC, x_size=1,
                                y_size=1, x_stride=1), finish()],
    "token on wrong stage": [load_uop(), MemoryInsn(opcode=Opcode.LOAD,
                                                    memory_type=MemType.WGT, pop_prev=1),
                             finish()],
    "finish with a token": [load_uop(), GemmInsn(opcode=Opcode.FINISH, push_next=1)],
    "decode error after an execution error": [
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, dram_base=1 << 20, y_size=1,
                   x_size=1, x_stride=1),
        alu(alu_opcode=7), finish()],
}


@pytest.mark.parametrize("case", list(ILLEGAL))
def test_illegal_instruction_same_code_and_index(cfg, case):
    fres, tres = run_both(cfg, ILLEGAL[case], uops=[Uop(0, 0, 0)])
    assert fres.status == "error"
    assert (tres.status, tres.error_code, tres.error_insn) == \
        (fres.status, fres.error_code, fres.error_insn)


@pytest.mark.parametrize("mem", [MemType.UOP, MemType.ACC, MemType.INP])
def test_load_outside_dram_is_error_9(cfg, mem):
    elem = elem_bytes(cfg, mem)
    program = [MemoryInsn(opcode=Opcode.LOAD, memory_type=mem, dram_base=DRAM_BYTES // elem - 1,
                          y_size=1, x_size=2, x_stride=2), finish()]
    fres, tres = run_both(cfg, program)
    assert (fres.status, fres.error_code) == ("error", 9)
    assert (tres.status, tres.error_code, tres.error_insn) == \
        ("error", 9, fres.error_insn)


def test_store_outside_dram_is_error_9(cfg):
    program = [load_uop(), alu(alu_opcode=AluOp.MOV, use_imm=1, imm=3, push_next=1),
               MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, pop_prev=1,
                          dram_base=DRAM_BYTES // cfg.out_elem_bytes, y_size=1, x_size=1,
                          x_stride=1, push_prev=1),
               MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_next=1),
               finish()]
    fres, tres = run_both(cfg, program, uops=[Uop(0, 0, 0)])
    assert (fres.status, fres.error_code) == ("error", 9)
    assert (tres.status, tres.error_code, tres.error_insn) == ("error", 9, fres.error_insn)


def test_deadlock_is_recognized_and_names_the_waiting_stages(cfg):
    """tsim used to spin until the cycle limit and say timeout."""
    # the compute stage waits for a token the load stage never sends
    program = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_prev=1), finish()]
    fres, tres = run_both(cfg, program, max_cycles=1_000_000)
    assert fres.status == tres.status == "deadlock"
    assert tres.cycles < 20_000
    assert "the compute stage waits on a token" in tres.detail
    assert "the load stage has no instruction" in tres.detail


def test_stream_without_finish_is_a_deadlock(cfg):
    fres, tres = run_both(cfg, [load_uop()], uops=[Uop(0, 0, 0)], max_cycles=1_000_000)
    assert fres.status == tres.status == "deadlock"
    assert "the compute stage has no instruction" in tres.detail


def test_a_long_busy_run_is_not_a_deadlock(cfg):
    """Many windows of one long ALU instruction: busy, so never taken for a deadlock."""
    program = [load_uop(), AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0, uop_end=1,
                                   iter_out=100, iter_in=200), finish()]
    fres, tres = run_both(cfg, program, uops=[Uop(0, 0, 0)])
    assert fres.status == tres.status == "ok" and tres.cycles > 20_000


def test_avta_exec_on_tsim_matches_fsim(cfg, tmp_path, capsys):
    import json
    from avta.cli import main
    program = [load_uop(), alu(alu_opcode=AluOp.ADD, use_imm=1, imm=9, push_next=1),
               MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, pop_prev=1,
                          dram_base=0x800 // cfg.out_elem_bytes, y_size=1, x_size=1,
                          x_stride=1, push_prev=1),
               MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_next=1), finish()]
    path = tmp_path / "image.bin"
    path.write_bytes(image(cfg, program, uops=[Uop(0, 0, 0)]).tobytes())
    outputs = {}
    for target in ("fsim", "tsim"):
        out = tmp_path / f"{target}.bin"
        assert main(["exec", "--config", cfg.name, "--target", target, "--image", str(path),
                     "--insn-addr", hex(INSN_ADDR), "--insn-count", str(len(program)),
                     "-o", str(out)]) == 0
        summary = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert summary["status"] == "ok" and summary["error_code"] is None
        outputs[target] = out.read_bytes()
    assert outputs["fsim"] == outputs["tsim"]
    assert outputs["tsim"][0x800] == 9


def test_a_run_after_a_timeout_starts_afresh(cfg):
    """A reused tsim used to report the timed-out run's end as the next run's: the core was
    still busy, ignored the launch, then finished the old program."""
    sim = Tsim(cfg)
    long_alu = [load_uop(), AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0,
                                    uop_end=1, iter_out=4000, iter_in=4000), finish()]
    slow = sim.run(image(cfg, long_alu, [Uop(0, 0, 0)]), INSN_ADDR, len(long_alu),
                   max_cycles=3000)
    assert slow.status == "timeout"
    short = [load_uop(), alu(alu_opcode=AluOp.ADD, use_imm=1, imm=5), finish()]
    dram = image(cfg, short, [Uop(0, 0, 0)])
    again = sim.run(dram, INSN_ADDR, len(short))
    want = Fsim(cfg).run(image(cfg, short, [Uop(0, 0, 0)]), INSN_ADDR, len(short))
    assert again.status == "ok" and again.cycles < 1000
    assert again.counters["ALU_STEPS"] == want.counters["ALU_STEPS"] == 1


def test_an_image_that_ends_mid_beat_runs_on_both_targets(cfg, tmp_path, capsys):
    """A 260-byte image whose last micro-op ends at byte 260 used to give error 9 on tsim, which
    reads whole bus beats; DRAM now rounds up to a 4 KiB page and says so."""
    import json

    from avta.cli import main
    c = codec(cfg)
    uop_at = 260 - cfg.uop_elem_bytes
    program = [load_uop(dram_base=uop_at // cfg.uop_elem_bytes),
               alu(alu_opcode=AluOp.ADD, use_imm=1, imm=3), finish()]
    blob = bytearray(260)
    code = c.encode_program(program)
    blob[:len(code)] = code
    blob[uop_at:] = c.encode_uops([Uop(0, 0, 0)])
    path = tmp_path / "image.bin"
    path.write_bytes(bytes(blob))
    for target in ("fsim", "tsim"):
        out = tmp_path / f"{target}.bin"
        assert main(["exec", "--config", cfg.name, "--target", target, "--image", str(path),
                     "--insn-addr", "0", "--insn-count", str(len(program)),
                     "-o", str(out)]) == 0
        captured = capsys.readouterr()
        assert json.loads(captured.out.splitlines()[-1])["status"] == "ok"
        assert "rounded up to 4096" in captured.err
        assert len(out.read_bytes()) == 4096


@pytest.mark.parametrize("key", ["UOP", "ACC", "OUT"])
def test_an_unaligned_base_is_error_11_on_both_targets(cfg, key):
    """An unaligned base register is docs/isa.md §3.5 error 11, at launch, index 0, on every
    target."""
    program = [load_uop(), alu(alu_opcode=AluOp.ADD, use_imm=1, imm=1), finish()]
    bases = {key: base_alignment(cfg, key) + 1}
    fres = Fsim(cfg).run(image(cfg, program, [Uop(0, 0, 0)]), INSN_ADDR, len(program),
                         bases=bases)
    sim = Tsim(cfg)
    tres = sim.run(image(cfg, program, [Uop(0, 0, 0)]), INSN_ADDR, len(program), bases=bases)
    assert (fres.status, fres.error_code, fres.error_insn) == \
        (tres.status, tres.error_code, tres.error_insn) == ("error", 11, 0)
    assert tres.counters["ALU_STEPS"] == 0 and tres.cycles < 100
    again = sim.run(image(cfg, program, [Uop(0, 0, 0)]), INSN_ADDR, len(program))
    assert again.status == "ok"


def test_an_illegal_instruction_behind_a_long_gemm_stops_at_once(cfg):
    """GEMM of 16383×16383 steps, then an ALU with opcode 7. fsim says
    error 2 at instruction 1; tsim used to run the GEMM out (268M cycles) and time out."""
    program = [GemmInsn(uop_bgn=0, uop_end=1, iter_out=16383, iter_in=16383),
               alu(alu_opcode=7), finish()]
    fres, tres = run_both(cfg, program, uops=[Uop(0, 0, 0)], max_cycles=100_000)
    assert (fres.status, fres.error_code, fres.error_insn) == ("error", 2, 1)
    assert (tres.status, tres.error_code, tres.error_insn) == ("error", 2, 1)
    assert tres.cycles < 1000


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_error_beside_long_transfers_leaves_the_bus_clean(cfg, seed):
    """The load stage meets error 9 while a long STORE and a long LOAD are on
    the bus of a shaken memory. Both stop; every AXI command keeps its beats, so the memory
    model ends empty and the same tsim runs the next program normally."""
    from avta.sim.memory_knobs import MemoryKnobs
    rows = 500
    program = [MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=0x4000
                          // cfg.out_elem_bytes, y_size=rows, x_size=1, x_stride=1),
               MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC, dram_base=0, y_size=rows,
                          x_size=1, x_stride=1),
               MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, dram_base=1 << 20,
                          y_size=1, x_size=1, x_stride=1),
               finish()]
    sim = Tsim(cfg, knobs=MemoryKnobs.random(seed))
    tres = sim.run(image(cfg, program), INSN_ADDR, len(program), max_cycles=200_000)
    fres = Fsim(cfg).run(image(cfg, program), INSN_ADDR, len(program))
    assert (tres.status, tres.error_code, tres.error_insn) == \
        (fres.status, fres.error_code, fres.error_insn) == ("error", 9, 2)
    assert sim.pending() == (0, 0, 0)
    # Both transfers were cut short: fewer rows moved than asked for.
    assert tres.counters["OUT_ST"] < rows * cfg.out_elem_bytes
    assert tres.counters["ACC_LD"] < rows * cfg.acc_elem_bytes
    short = [load_uop(), alu(alu_opcode=AluOp.ADD, use_imm=1, imm=5), finish()]
    again = sim.run(image(cfg, short, [Uop(0, 0, 0)]), INSN_ADDR, len(short))
    assert again.status == "ok" and again.counters["ALU_STEPS"] == 1


def test_a_load_stopped_by_an_error_writes_no_pad_row_into_the_next_run(cfg):
    """Found by the fuzzer's "tsim reused after an error" corner: a LOAD stopped by
    error 9 left its pad walker busy, and the walker went on writing the LOAD's pad rows while
    the next program ran, over rows that program had loaded. The next run's trace must show
    exactly fsim's writes."""
    from avta.sim.trace.diff import diff_files
    from avta.sim.trace.record import record_trace
    import tempfile
    from pathlib import Path
    width = 16                              # x_pad_0 15 + x_size 1: 15 × 16 top pad rows
    failing = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, dram_base=1 << 24,
                          y_size=1, x_size=1, x_stride=1, y_pad_0=15, x_pad_0=15), finish()]
    sim = Tsim(cfg, trace=True)
    tres = sim.run(image(cfg, failing), INSN_ADDR, len(failing), max_cycles=100_000)
    assert (tres.status, tres.error_code, tres.error_insn) == ("error", 9, 0)
    assert 15 * width <= cfg.inp_depth
    # The next program loads the rows the walker had left and hands them to compute.
    rows = min(cfg.inp_depth, 15 * width)
    nxt = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, dram_base=0, y_size=1,
                      x_size=rows, x_stride=rows, push_next=1),
           MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_prev=1), finish()]
    with tempfile.TemporaryDirectory() as scratch:
        traces = [Path(scratch) / "fsim.trace", Path(scratch) / "tsim.trace"]
        for trace, target in zip(traces, (Fsim(cfg), sim)):
            dram = image(cfg, nxt)
            dram[:rows * cfg.inp_elem_bytes] = 7
            assert record_trace(trace, target, dram, INSN_ADDR, len(nxt)).status == "ok"
        report = diff_files(*traces)
    assert report.matched, report.format()


def test_a_reset_leaves_every_scratchpad_zero(cfg):
    """docs/isa.md §3: scratchpads are zero after reset. Tsim.reset() (after a timeout or a
    deadlock, and before each run of a shrinking fuzz failure) used to pulse the reset signal
    only, which clears registers but not memories: a micro-op or ACC row from before survived."""
    acc = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC, dram_base=0, y_size=1,
                      x_size=1, x_stride=1), load_uop(), finish()]
    dram = image(cfg, acc, [Uop(0, 0, 0)])
    dram[:cfg.acc_elem_bytes] = 0x11
    sim = Tsim(cfg)
    assert sim.run(dram, INSN_ADDR, len(acc)).status == "ok"
    sim.reset()
    # Store ACC row 0 through an ALU step of micro-op row 0, neither written since the reset.
    out = 0x8000 // cfg.out_elem_bytes
    program = [AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0, uop_end=1, iter_out=1,
                       iter_in=1, push_next=1),
               MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=out, y_size=1,
                          x_size=1, x_stride=1, pop_prev=1, push_prev=1),
               MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_next=1), finish()]
    t_dram, f_dram = image(cfg, program), image(cfg, program)
    assert sim.run(t_dram, INSN_ADDR, len(program)).status == "ok"
    assert Fsim(cfg).run(f_dram, INSN_ADDR, len(program)).status == "ok"
    row = slice(out * cfg.out_elem_bytes, (out + 1) * cfg.out_elem_bytes)
    assert list(t_dram[row]) == list(f_dram[row]) == [1] * cfg.out_elem_bytes
