"""The command line: config, asm/disasm, gen, error messages."""

import json

import pytest

from avta.cli import main
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.insn import GemmInsn


def test_config_prints_layout(capsys):
    assert main(["config", "--config", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "1x4x4 10/10/12/12" in out
    assert "[ 60:53 ] dst_factor_out   8 bits" in out


def test_config_json(capsys):
    assert main(["config", "--config", "default", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["derived"]["wgt"]["depth"] == 1024


def test_bad_config_is_one_clear_message(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("LOG_BATCH: 4\nAXI_DATA_BITS: 96\n")
    assert main(["config", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "LOG_BATCH = 4: must be 0..3" in err and "AXI_DATA_BITS = 96" in err
    assert "Traceback" not in err


def test_asm_disasm_round_trip(tmp_path, capsys):
    src = tmp_path / "p.jsonl"
    src.write_text(
        '# a comment\n'
        '{"op": "LOAD", "memory_type": 2, "x_size": 4, "y_size": 1, "x_stride": 4, '
        '"push_next": 1}\n'
        '{"op": "GEMM", "uop_end": 1, "iter_out": 1, "iter_in": 1, "dst_factor_out": 1, '
        '"pop_prev": 1}\n'
        '{"op": "ALU", "alu_op": "CLP", "use_imm": 1, "imm": -5}\n'
        '{"op": "FINISH"}\n')
    binary = tmp_path / "p.bin"
    assert main(["asm", "--config", "tiny", str(src), "-o", str(binary)]) == 0
    insns = codec(load_config("tiny")).decode_program(binary.read_bytes())
    assert insns[1] == GemmInsn(uop_end=1, iter_out=1, iter_in=1, dst_factor_out=1, pop_prev=1)
    capsys.readouterr()
    assert main(["disasm", "--config", "tiny", str(binary), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[2]["alu_op"] == "CLP" and lines[2]["imm"] == -5 and "alu_opcode" not in lines[2]
    assert lines[3]["op"] == "FINISH" and lines[3]["wgt_factor_in"] == 0
    # the JSON disassembly assembles back to the same bytes
    again = tmp_path / "again.jsonl"
    again.write_text("\n".join(json.dumps(x) for x in lines))
    assert main(["asm", "--config", "tiny", str(again), "-o", str(tmp_path / "b.bin")]) == 0
    assert (tmp_path / "b.bin").read_bytes() == binary.read_bytes()
    assert main(["disasm", "--config", "tiny", str(binary)]) == 0
    text = capsys.readouterr().out
    assert "ALU CLP imm -5" in text and "FINISH" in text


def test_disasm_flags_illegal_instructions(tmp_path, capsys):
    blob = (5).to_bytes(16, "little") + (7 << 108 | 4).to_bytes(16, "little")
    path = tmp_path / "bad.bin"
    path.write_bytes(blob)
    assert main(["disasm", "--config", "default", str(path), "--json"]) == 0
    first, second = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert first["op"] == "ILLEGAL" and first["error"] == 1
    assert second["op"] == "ALU" and second["alu_op"] == "SCL" and second["error"] == 2
    assert "ALU_SCALE: 1" in second["reason"]


@pytest.mark.parametrize("scale", [1, 2])
def test_scl_assembles_and_is_legal_where_alu_scale_is_on(tmp_path, capsys, scale):
    config = tmp_path / "scale.yaml"
    config.write_text("name: tiny_scale\nLOG_BLOCK_IN: 2\nLOG_BLOCK_OUT: 2\n"
                      "LOG_UOP_BUFF_SIZE: 10\nLOG_INP_BUFF_SIZE: 10\nLOG_WGT_BUFF_SIZE: 12\n"
                      f"LOG_ACC_BUFF_SIZE: 12\nALU_SCALE: {scale}\n")
    src = tmp_path / "p.jsonl"
    src.write_text('{"op": "ALU", "alu_op": "SCL", "use_imm": 1, "imm": 16384}\n')
    binary = tmp_path / "p.bin"
    assert main(["asm", "--config", str(config), str(src), "-o", str(binary)]) == 0
    capsys.readouterr()
    assert main(["disasm", "--config", str(config), str(binary), "--json"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["alu_op"] == "SCL" and line["imm"] == 16384 and "error" not in line
    assert main(["disasm", "--config", str(config), str(binary)]) == 0
    assert "ALU SCL imm 16384" in capsys.readouterr().out


@pytest.mark.parametrize("line, message", [
    ('{"op": "JUMP"}', '"op" must be one of'),
    ('{"op": "GEMM", "imm": 3}', "GEMM has no field 'imm'"),
    ('{"op": "ALU", "alu_op": "DIV"}', "unknown alu_op 'DIV'"),
    ('{"op": "GEMM", "uop_bgn": 9999}', "uop_bgn = 9999 does not fit its 8-bit field"),
    ('{"op": "LOAD", "x_size": "many"}', "field x_size must be an integer"),
    ("not json", "not valid JSON"),
    ('{"op": "ILLEGAL", "opcode": 6, "raw": "0x5"}', "whose opcode bits are 5"),
])
def test_asm_errors_name_the_line(tmp_path, capsys, line, message):
    """Bad assembly is one message naming the line (exit 2), never a traceback."""
    src = tmp_path / "p.jsonl"
    src.write_text('{"op": "FINISH"}\n' + line + "\n")
    assert main(["asm", "--config", "tiny", str(src), "-o", str(tmp_path / "o.bin")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_gen_writes_everything_and_the_verilog_lints_clean(tmp_path):
    from avta.sim.verilator import lint
    assert main(["gen", "--config", "tiny", "-o", str(tmp_path)]) == 0
    assert "#define VTA_BLOCK_IN 4" in (tmp_path / "vta_hw_spec.h").read_text()
    assert json.loads((tmp_path / "config.json").read_text())["config"]["LOG_BLOCK_IN"] == 2
    assert (tmp_path / "files.f").read_text().split() == ["vta_top.v"]
    verilog = (tmp_path / "vta_top.v").read_text()
    assert "module vta_top(" in verilog and "verilator lint_off PROCASSINIT" in verilog
    assert lint(["vta_top.v"], cwd=tmp_path).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "batch2", "rect", "wide", "huge", "big_acc"])
def test_gen_lints_clean_on_every_shipped_config(tmp_path, config):
    from avta.sim.verilator import lint
    assert main(["gen", "--config", config, "-o", str(tmp_path)]) == 0
    assert lint(["vta_top.v"], cwd=tmp_path).returncode == 0


def test_trace_diff_of_a_missing_file_is_a_usage_error(capsys, tmp_path):
    assert main(["trace-diff", str(tmp_path / "a.trace"), str(tmp_path / "b.trace")]) == 2
    assert "a.trace' does not exist" in capsys.readouterr().err


def test_gen_trace_ports_only_when_asked(tmp_path):
    assert main(["gen", "--config", "tiny", "-o", str(tmp_path / "plain")]) == 0
    assert main(["gen", "--config", "tiny", "-o", str(tmp_path / "traced"), "--trace-ports"]) == 0
    assert "trace__" not in (tmp_path / "plain" / "vta_top.v").read_text()
    assert "output [31:0] trace__compute_insn;" in (tmp_path / "traced" / "vta_top.v").read_text()
    from avta.sim.verilator import lint
    assert lint(["vta_top.v"], cwd=tmp_path / "traced").returncode == 0


def test_asm_illegal_without_raw_is_its_opcode(tmp_path):
    src = tmp_path / "p.jsonl"
    src.write_text('{"op": "ILLEGAL", "opcode": 6}\n')
    assert main(["asm", "--config", "tiny", str(src), "-o", str(tmp_path / "o.bin")]) == 0
    assert (tmp_path / "o.bin").read_bytes() == (6).to_bytes(16, "little")


def _bad_inputs(tmp):
    (tmp / "folder").mkdir()
    (tmp / "binary.yaml").write_bytes(b"\xff\xfe\x00bad")
    (tmp / "empty.yaml").write_text("")
    (tmp / "twice.yaml").write_text("LOG_BATCH: 0\nLOG_BATCH: 1\n")
    (tmp / "huge.yaml").write_text("LOG_INP_BUFF_SIZE: 5000\n")
    (tmp / "escape.yaml").write_text("name: ../../escape\n")
    (tmp / "p.jsonl").write_text('{"op": "FINISH"}\n')
    (tmp / "a_file").write_text("")


@pytest.mark.parametrize("args, message", [
    ("config --config folder", "is a folder"),
    ("config --config binary.yaml", "is not UTF-8 text"),
    ("config --config empty.yaml", "is empty"),
    ("config --config twice.yaml", "LOG_BATCH is given twice"),
    ("config --config huge.yaml", "LOG_INP_BUFF_SIZE = 5000: must be at most 30"),
    ("gen --config escape.yaml -o out", "must be a plain name"),
    ("gen --config tiny -o a_file", "is a file, not a folder"),
    ("asm --config tiny folder -o x.bin", "is a folder"),
    ("asm --config tiny binary.yaml -o x.bin", "is not UTF-8 text"),
    ("asm --config tiny p.jsonl -o folder", "is a folder; give a file name"),
    ("asm --config tiny p.jsonl -o missing/x.bin", "create 'missing' first"),
    ("disasm --config tiny folder", "is a folder"),
    ("exec --config tiny --image folder --insn-addr 0 --insn-count 1", "is a folder"),
    ("exec --config tiny --image p.jsonl --insn-addr 0x100000000 --insn-count 1",
     "beyond the 32-bit address space"),
    ("exec --config tiny --image p.jsonl --insn-addr 0 --insn-count 1 --max-cycles -1",
     "must be at least 1"),
    ("exec --config tiny --image p.jsonl --insn-addr 0 --insn-count 1 --max-cycles 0",
     "must be at least 1"),
    ("exec --config tiny --image p.jsonl --insn-addr 0 --insn-count 1 -o missing/o.bin",
     "create 'missing' first"),
    ("trace-diff folder p.jsonl", "is a folder"),
    ("trace-diff binary.yaml binary.yaml", "is not UTF-8 text"),
    ("floorplan --config tiny -o a_file", "is a file, not a folder"),
])
def test_bad_input_is_one_message_and_exit_2(tmp_path, monkeypatch, capsys, args, message):
    """Every bad input is exit 2 with one message and no traceback."""
    _bad_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(args.split()) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.bin").exists()


def test_a_reader_that_goes_away_is_not_an_error():
    """``avta ... | head``: the command stops quietly, exit 0, no traceback or 'Broken pipe'.
    stdout is block-buffered (as in a shell without PYTHONUNBUFFERED) and the output shorter
    than the buffer, so nothing reaches the pipe before the command's end flushes it."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-m", "avta.cli", "config", "--config", "default"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()             # before the command has written anything (it is starting)
    err = proc.stderr.read().decode()
    assert proc.wait() == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err


@pytest.mark.parametrize("workers", ["0", "1"])
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, workers):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it: Dask's worker
    processes too) while a sweep point runs (ResNet-18 at 224 on tiny: minutes): one line on
    stderr after the progress, no traceback, the shell's status for SIGINT."""
    import os
    import signal
    import subprocess
    import sys
    import time
    spec = tmp_path / "spec.yaml"
    spec.write_text("base: tiny\nvary:\n  LOG_ACC_BUFF_SIZE: [13]\nworkload: resnet18\n")
    # Programs planned afresh (no program cache), so that the point runs for minutes whatever
    # earlier runs left in the cache.
    env = dict(os.environ, AVTA_PROGRAM_CACHE="0")
    proc = subprocess.Popen([sys.executable, "-m", "avta.cli", "sweep", str(spec), "-o",
                             str(tmp_path / "out"), "--workers", workers],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        first = proc.stderr.readline()            # the log line before the point runs
        assert first.startswith("1 points: 0 cached, 0 invalid, 1 to run"), first
        if workers != "0":
            time.sleep(10)                        # the cluster starts and takes the point
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert err == "avta sweep: interrupted\n"
