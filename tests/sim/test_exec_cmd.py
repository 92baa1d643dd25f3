"""``avta exec --target fsim`` end to end through ``avta.cli.main`` (docs/architecture.md)."""

import json

import numpy as np
import pytest

from avta.cli import main
from avta.isa.enums import AluOp, ErrorCode, MemType
from avta.isa.insn import IllegalInsn, Uop
from avta.isa.registers import COUNTER_NAMES
from avta.sim.fsim import Fsim
from avta.sim.image import Image, alu, finish, load, store, sync

INSN, UOPS, ACC, OUT = 0x100, 0x40, 0x400, 0x800


def requant_image(cfg):
    """ACC rows 0..3 loaded, ADD 5 by ALU, stored as int8 at OUT; instructions at INSN."""
    image = Image(cfg, size=0x900, insn_addr=INSN)
    image.put(ACC, np.arange(4 * cfg.batch * cfg.block_out, dtype=np.int32) * 3 - 20)
    image.put_uops(UOPS, [Uop(0, 0)])
    image.add(load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=1),
              load(MemType.ACC, dram=ACC // cfg.acc_elem_bytes, x=4),
              alu(AluOp.ADD, iters=(1, 4), dst=(0, 1), src=(0, 1), imm=5, push_next=1),
              store(dram=OUT // cfg.out_elem_bytes, x=4, pop_prev=1, push_prev=1),
              sync("pop_next"), finish())
    return image


def write(tmp_path, image):
    """The image, its program encoded at ``insn_addr``, as a file."""
    path = tmp_path / "image.bin"
    path.write_bytes(image.to_bytes())
    return path


def exec_args(path, count, *extra, config="tiny", addr=INSN):
    return ["exec", "--config", config, "--target", "fsim", "--image", str(path),
            "--insn-addr", hex(addr), "--insn-count", str(count), *extra]


def summary(capsys):
    out = capsys.readouterr().out.strip().splitlines()
    line = json.loads(out[-1])
    assert list(line) == ["status", "cycles", "counters", "error_code", "error_insn"]
    assert list(line["counters"]) == list(COUNTER_NAMES)
    return line


def test_exec_runs_and_writes_the_final_image(tiny_cfg, tmp_path, capsys):
    image = requant_image(tiny_cfg)
    path = write(tmp_path, image)
    out = tmp_path / "out.bin"
    assert main(exec_args(path, len(image.insns), "-o", str(out))) == 0
    captured = capsys.readouterr()
    assert "rounded up to 4096" in captured.err
    line = json.loads(captured.out.strip().splitlines()[-1])
    assert (line["status"], line["error_code"], line["error_insn"]) == ("ok", None, None)
    assert line["counters"]["ALU_STEPS"] == 4
    final = out.read_bytes()
    assert len(image.data) == 0x900 and len(final) == 0x1000      # a whole 4 KiB page
    expected = (np.arange(16, dtype=np.int32) * 3 - 15).astype(np.int8)
    np.testing.assert_array_equal(np.frombuffer(final[OUT:OUT + 16], np.int8), expected)
    # The same run through the Python API gives the same image.
    direct = bytearray(image.data) + bytearray(0x1000 - 0x900)
    assert Fsim(tiny_cfg).run(direct, INSN, len(image.insns)).ok
    assert bytes(direct) == final


def test_dram_size_extends_with_zeros(tiny_cfg, tmp_path, capsys):
    image = requant_image(tiny_cfg)
    path = write(tmp_path, image)
    out = tmp_path / "out.bin"
    assert main(exec_args(path, len(image.insns), "-o", str(out), "--dram-size", "0x2000")) == 0
    assert summary(capsys)["status"] == "ok"
    assert len(out.read_bytes()) == 0x2000 and not any(out.read_bytes()[0x900:])


def test_error_status_and_exit_code(tiny_cfg, tmp_path, capsys):
    image = requant_image(tiny_cfg)
    image.insns[2] = IllegalInsn(opcode=6, raw=6)
    assert main(exec_args(write(tmp_path, image), len(image.insns))) == 1
    line = summary(capsys)
    assert (line["status"], line["error_code"], line["error_insn"]) == \
        ("error", ErrorCode.ILLEGAL_OPCODE, 2)


def test_deadlock_detail_on_stderr(tiny_cfg, tmp_path, capsys):
    image = requant_image(tiny_cfg)
    assert main(exec_args(write(tmp_path, image), len(image.insns) - 1)) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[-1])["status"] == "deadlock"
    assert "ended without FINISH" in captured.err


def test_strict_flag(tiny_cfg, tmp_path, capsys):
    image = Image(tiny_cfg, size=0x200)
    image.add(load(MemType.ACC, sram=tiny_cfg.acc.depth - 1, x=2), finish())
    path = write(tmp_path, image)
    assert main(exec_args(path, 2, addr=0)) == 0
    assert summary(capsys)["status"] == "ok"
    assert main(exec_args(path, 2, "--strict", addr=0)) == 1
    assert summary(capsys)["error_code"] == ErrorCode.SRAM_OUT_OF_RANGE


@pytest.mark.parametrize("mode, kinds", [("retire", {"retire"}),
                                         ("arch", {"retire", "sram", "dram"})])
def test_trace_file(tiny_cfg, tmp_path, capsys, mode, kinds):
    image = requant_image(tiny_cfg)
    trace = tmp_path / "trace.jsonl"
    assert main(exec_args(write(tmp_path, image), len(image.insns), "--trace", str(trace),
                          "--trace-mode", mode)) == 0
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["kind"] == "header" and events[-1]["kind"] == "end"
    assert {e["kind"] for e in events[1:-1]} == kinds
    assert sum(e["kind"] == "retire" for e in events) == len(image.insns)


# (extra arguments, exit status, message piece): the command's own mistakes.
BAD = [
    (["--insn-addr", "0x108"], "must be a non-negative multiple of 16"),
    (["--dram-size", "0x10"], "smaller than the image"),
    (["--image", "/nonexistent/image.bin"], "does not exist"),
]


@pytest.mark.parametrize("extra, message", BAD)
def test_command_errors(tiny_cfg, tmp_path, capsys, extra, message):
    path = write(tmp_path, requant_image(tiny_cfg))
    assert main(exec_args(path, 6) + extra) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
