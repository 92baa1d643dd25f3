"""The trace schema and the trace diff on hand-written traces (no simulator involved)."""

import json

import pytest

from avta.cli import main
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, MemoryInsn
from avta.sim.trace.diff import diff_files
from avta.sim.trace.schema import (TraceFormatError, canonical_mode, header_record, read_trace,
                                   trace_config)

CFG = load_config("tiny")
PROGRAM = codec(CFG).encode_program([
    MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=2, y_size=1, x_stride=2),
    AluInsn(alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1),
])
ROW = "00" * 16


def _write(path, events, *, target="fsim", mode="arch", end="ok"):
    lines = [header_record(CFG, target=target, mode=mode, insn_addr=0, insn_count=2,
                           program=PROGRAM)]
    lines += events
    if end is not None:
        lines.append({"kind": "end", "status": end, "cycles": 10, "error_code": None,
                      "error_insn": None})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def sram(insn, memory, index, data=ROW, stage="compute", **extra):
    return {"kind": "sram", "stage": stage, "insn": insn, "memory": memory, "index": index,
            "data": data, **extra}


def retire(insn, stage="compute", **extra):
    return {"kind": "retire", "stage": stage, "insn": insn, **extra}


def test_rows_of_one_instruction_may_land_in_any_order(tmp_path):
    a = _write(tmp_path / "a", [sram(1, "acc", 3), sram(1, "acc", 5), retire(1)])
    b = _write(tmp_path / "b", [sram(1, "acc", 5, cycle=7), sram(1, "acc", 3, cycle=8),
                                retire(1, cycle=9)], target="tsim")
    report = diff_files(a, b)
    assert report.matched
    assert report.format().splitlines()[-1] == "matched: 1 instructions agree in every stage"


def test_writes_to_one_row_keep_their_order(tmp_path):
    first, second = "01" + "00" * 15, "02" + "00" * 15
    a = _write(tmp_path / "a", [sram(1, "acc", 3, first), sram(1, "acc", 3, second)])
    b = _write(tmp_path / "b", [sram(1, "acc", 3, second), sram(1, "acc", 3, first)])
    found = diff_files(a, b).divergences["compute"]
    assert found.key == ("acc", 3) and "write 1 of 2" in found.what


def test_stages_are_compared_separately_and_in_program_order(tmp_path):
    a = _write(tmp_path / "a", [sram(0, "inp", 0, "00" * 4, stage="load"), retire(0, "load"),
                                sram(1, "acc", 2), retire(1)])
    b = _write(tmp_path / "b", [sram(1, "acc", 2, "ff" * 16, cycle=5), retire(1, cycle=6),
                                sram(0, "inp", 0, "00" * 4, stage="load", cycle=9),
                                retire(0, "load", cycle=10)], target="tsim")
    report = diff_files(a, b)
    assert set(report.divergences) == {"compute"}
    found = report.divergences["compute"]
    assert (found.insn, found.key, found.cycle) == (1, ("acc", 2), 5)
    text = report.format()
    assert "instruction 1: ALU ADD uop [0,1)" in text
    assert "lane 0 (b0 o0): fsim 0 vs tsim -1" in text
    assert "load     matched: 1 instructions, 2 events" in text


def test_kinds_in_one_trace_only_are_ignored(tmp_path):
    activity = {"kind": "activity", "stage": "compute", "insn": 1, "state": "busy", "cycle": 3}
    a = _write(tmp_path / "a", [sram(1, "acc", 2), retire(1)])
    b = _write(tmp_path / "b", [activity, sram(1, "acc", 2, cycle=4), retire(1, cycle=5)],
               target="tsim", mode="full")
    report = diff_files(a, b)
    assert report.matched and report.ignored_kinds == ("activity",)
    # A retire-mode trace against an arch one: only the retire events are compared.
    c = _write(tmp_path / "c", [retire(1)], mode="retire")
    assert diff_files(a, c).matched


def test_missing_retire_and_end_differences(tmp_path):
    a = _write(tmp_path / "a", [retire(0, "load"), retire(1)])
    b = _write(tmp_path / "b", [retire(0, "load")], end="timeout")
    report = diff_files(a, b)
    assert "retires only in A" in report.divergences["compute"].what
    assert report.end_difference.startswith("status ok (fsim) vs timeout")
    assert report.format().splitlines()[-1] == "mismatched: compute at instruction 1, end record"


def test_cli_exit_status(tmp_path, capsys):
    a = _write(tmp_path / "a", [retire(1)])
    b = _write(tmp_path / "b", [retire(1)])
    c = _write(tmp_path / "c", [])
    assert main(["trace-diff", str(a), str(b)]) == 0
    assert main(["trace-diff", str(a), str(c)]) == 1
    capsys.readouterr()


BAD_FILES = [
    ("not json\n", "not JSON"),
    ('{"kind": "sram", "stage": "compute", "insn": 1}\n', "needs memory, index, data"),
    ('{"kind": "retire", "stage": "fetch", "insn": 1}\n', "unknown stage 'fetch'"),
    ('{"kind": "bogus"}\n', "unknown record kind 'bogus'"),
    ('{"kind": "header", "schema": 99}\n', "trace schema 99"),
    ("", "empty trace"),
]


@pytest.mark.parametrize("text, message", BAD_FILES)
def test_bad_trace_files_name_the_line(tmp_path, capsys, text, message):
    path = tmp_path / "bad.trace"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=message):
        read_trace(path)
    other = _write(tmp_path / "ok", [])
    assert main(["trace-diff", str(path), str(other)]) == 2
    assert message in capsys.readouterr().err


def test_header_carries_the_configuration_and_program(tmp_path):
    trace = read_trace(_write(tmp_path / "a", []))
    assert trace_config(trace) == CFG
    assert trace.program() == [PROGRAM[:16], PROGRAM[16:]]
    assert canonical_mode("equiv") == "arch"
    with pytest.raises(ValueError, match="trace mode 'cycle'"):
        canonical_mode("cycle")
