"""``avta exec`` end to end through ``avta.cli.main`` (docs/cli.md): on fsim, and on tsim for the
base registers and the memory knobs (marked ``tsim``)."""

import json

import numpy as np
import pytest

from avta.cli import build_parser, main
from avta.isa.enums import AluOp, ErrorCode, MemType
from avta.isa.insn import IllegalInsn, Uop
from avta.isa.memories import base_alignment
from avta.isa.registers import COUNTER_NAMES
from avta.sim.exec.cli import memory_knobs
from avta.sim.fsim import Fsim
from avta.sim.image import Image, alu, finish, load, store, sync
from avta.sim.memory_knobs import MemoryKnobs

INSN, UOPS, ACC, OUT = 0x100, 0x40, 0x400, 0x800


def requant_image(cfg, bases=None):
    """ACC rows 0..3 loaded, ADD 5 by ALU, stored as int8 at OUT; instructions at INSN. With
    ``bases`` (a ``--base`` mapping) the same instructions, the micro-op and ACC data at their
    addresses plus their base register (mod 2^32), and decoys at the addresses without it."""
    bases = bases or {}
    image = Image(cfg, size=0x2000 if bases else 0x900, insn_addr=INSN)
    acc = np.arange(4 * cfg.batch * cfg.block_out, dtype=np.int32) * 3 - 20
    at = {key: bases.get(key, 0) for key in ("UOP", "ACC")}
    if at["UOP"]:
        image.put_uops(UOPS, [Uop(1, 1)])
    if at["ACC"]:
        image.put(ACC, acc * 7 + 1)
    image.put((ACC + at["ACC"]) % (1 << 32), acc)
    image.put_uops(UOPS + at["UOP"], [Uop(0, 0)])
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


# (extra arguments, message piece): the command's own mistakes. The knob mistakes are on tsim,
# and found before tsim is built.
TSIM = ["--target", "tsim"]
BAD = [
    (["--insn-addr", "0x108"], "must be a non-negative multiple of 16"),
    (["--dram-size", "0x10"], "smaller than the image"),
    (["--image", "/nonexistent/image.bin"], "does not exist"),
    (TSIM + ["--latency", "30..40"], "--latency '30..40': give N (a fixed latency) or MIN-MAX"),
    (TSIM + ["--latency", "1-2-3"], "--latency '1-2-3': give N"),
    (TSIM + ["--latency", "-5"], "--latency '-5': give N"),
    (TSIM + ["--latency", "30-"], "--latency '30-': give N"),
    (TSIM + ["--latency", "40-30"], "--latency 40-30: latency must be (min, max)"),
    (TSIM + ["--latency", "x"], "--latency 'x': give N"),
    (TSIM + ["--latency", "1.5"], "--latency '1.5': give N"),
    (TSIM + ["--backpressure", "0.95"], "--backpressure 0.95: backpressure is a probability"),
    (TSIM + ["--backpressure", "-0.1"], "--backpressure -0.1: backpressure is a probability"),
    (TSIM + ["--backpressure", "nan"], "--backpressure nan: backpressure is a probability"),
    (TSIM + ["--backpressure", "half"], "--backpressure 'half' is not a number"),
    (TSIM + ["--outstanding", "0"], "--outstanding 0: outstanding must be in 1.."),
    (TSIM + ["--write-latency", "-1"], "--write-latency -1: outstanding must be in"),
    (TSIM + ["--seed", "-1"], "--seed -1 must be in 0..0xffffffffffffffff"),
    (TSIM + ["--seed", "1.5"], "--seed '1.5' is not an integer"),
    (["--latency", "30-40"], "--latency set tsim's memory timing; fsim has none"),
    (["--seed", "3", "--reorder"], "--seed, --reorder set tsim's memory timing; fsim has none"),
    (["--base", "FOO=0x100"], "unknown base register 'FOO'; the base registers are UOP, INP"),
    (["--base", "ACC_8BIT=0x100"], "unknown base register 'ACC_8BIT'"),
    (["--base", "inp=0x100", "--base", "INP_BASE=0x200"], "INP_BASE is already set (to 0x100)"),
    (["--base", "INP"], "--base 'INP': give KEY=ADDR"),
    (["--base", "INP="], "--base 'INP=': give KEY=ADDR"),
    (["--base", "INP=0x100000000"], "--base INP 0x100000000 must be in 0..0xffffffff"),
    (["--base", "INP=-4"], "--base INP -4 must be in 0..0xffffffff"),
    (["--base", "INP=lots"], "--base INP 'lots' is not an integer"),
]


def assert_usage_error(capsys, message):
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("avta exec: ") and captured.err.count("\n") == 1
    assert message in captured.err, captured.err


@pytest.mark.parametrize("extra, message", BAD)
def test_command_errors(tiny_cfg, tmp_path, capsys, extra, message):
    path = write(tmp_path, requant_image(tiny_cfg))
    assert main(exec_args(path, 6) + extra) == 2
    assert_usage_error(capsys, message)


# -- tsim's memory knobs --------------------------------------------------------------------------

SHAKEN = MemoryKnobs(seed=7, latency=(30, 40), outstanding=3, reorder=True, backpressure=0.5,
                     write_latency=9)


def knobs_of(*argv, target="tsim"):
    """The MemoryKnobs ``avta exec`` would give tsim for these options."""
    return memory_knobs(build_parser().parse_args(
        ["exec", "--target", target, "--image", "x", "--insn-addr", "0", "--insn-count", "1",
         *argv]))


@pytest.mark.parametrize("argv, knobs", [
    ([], MemoryKnobs()),
    (["--latency", "5"], MemoryKnobs(latency=(5, 5))),
    (["--latency", "30-40"], MemoryKnobs(latency=(30, 40))),
    (["--latency", "0x10 - 0x20"], MemoryKnobs(latency=(16, 32))),
    (["--latency", "0-0"], MemoryKnobs(latency=(0, 0))),
    (["--seed", "7", "--latency", "30-40", "--outstanding", "3", "--reorder",
      "--backpressure", "0.5", "--write-latency", "9"], SHAKEN),
    (["--seed", "0xffffffffffffffff"], MemoryKnobs(seed=(1 << 64) - 1)),
    (["--reorder", "--no-reorder"], MemoryKnobs()),
    (["--backpressure", "0.9"], MemoryKnobs(backpressure=0.9)),
])
def test_knob_flags(argv, knobs):
    assert knobs_of(*argv) == knobs


def test_knobs_file_and_flags_over_it(tmp_path):
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps(SHAKEN.to_dict()))
    assert knobs_of("--knobs", str(path)) == SHAKEN
    assert knobs_of("--knobs", str(path), "--latency", "2", "--no-reorder", "--seed", "9") == \
        MemoryKnobs(seed=9, latency=(2, 2), outstanding=3, reorder=False, backpressure=0.5,
                    write_latency=9)
    # Fields left out keep their defaults; a fuzz failure.json gives its "memory_knobs".
    path.write_text('{"backpressure": 0.25}')
    assert knobs_of("--knobs", str(path)) == MemoryKnobs(backpressure=0.25)
    path.write_text(json.dumps({"seed": 12, "insn_addr": 4096,
                                "memory_knobs": MemoryKnobs.random(12).to_dict()}))
    assert knobs_of("--knobs", str(path)) == MemoryKnobs.random(12)


def test_default_knobs_are_accepted_on_fsim(tiny_cfg, tmp_path, capsys):
    """Knobs that are the plain timing mean nothing to fsim, but are not wrong."""
    image = requant_image(tiny_cfg)
    knobs = tmp_path / "knobs.json"
    knobs.write_text(json.dumps(MemoryKnobs().to_dict()))
    assert main(exec_args(write(tmp_path, image), len(image.insns), "--knobs", str(knobs),
                          "--seed", "1", "--latency", "1-1", "--no-reorder")) == 0
    assert summary(capsys)["status"] == "ok"


# (contents of the --knobs file, message piece)
BAD_KNOBS = [
    (None, "--knobs file '{path}' does not exist"),
    ("latency: [1, 2]", "--knobs file '{path}' is not JSON"),
    ("[1, 40]", "must hold a JSON object of memory knobs"),
    ('{"latncy": [1, 40]}', "unknown memory knobs ['latncy']"),
    ('{"latency": 40}', "latency 40 has the wrong type"),
    ('{"latency": [1, 2, 3]}', "latency [1, 2, 3] has the wrong type"),
    ('{"reorder": 1}', "reorder 1 has the wrong type"),
    ('{"seed": "7"}', 'seed "7" has the wrong type'),
    ('{"seed": -7}', "seed -7 must be in 0..0xffffffffffffffff"),
    ('{"backpressure": 0.95}', "backpressure is a probability in [0, 0.9], not 0.95"),
    ('{"latency": [40, 30]}', "latency must be (min, max)"),
]


@pytest.mark.parametrize("text, message", BAD_KNOBS)
def test_knobs_file_errors(tiny_cfg, tmp_path, capsys, text, message):
    path = tmp_path / "knobs.json"
    if text is not None:
        path.write_text(text)
    image = write(tmp_path, requant_image(tiny_cfg))
    assert main(exec_args(image, 6, "--target", "tsim", "--knobs", str(path))) == 2
    assert_usage_error(capsys, message.format(path=path))


def test_shaken_knobs_file_is_refused_on_fsim(tiny_cfg, tmp_path, capsys):
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps(SHAKEN.to_dict()))
    image = write(tmp_path, requant_image(tiny_cfg))
    assert main(exec_args(image, 6, "--knobs", str(path))) == 2
    assert_usage_error(capsys, "--knobs set tsim's memory timing; fsim has none: give "
                               "--target tsim")


# -- base registers ----------------------------------------------------------------------------

#: Base registers of the based runs: UOP and OUT in the image, ACC wrapping past 2^32 (docs/isa.md
#: §3: addresses are mod 2^32) to 0x200.
BASES = {"UOP": 0x1204, "ACC": (1 << 32) - ACC + 0x200, "OUT": 0xA0C}
BASE_ARGS = ["--base", "uop=0x1204", "--base", f"ACC_BASE={BASES['ACC']:#x}",
             "--base", f"Out={BASES['OUT']}"]
TARGETS = ["fsim", pytest.param("tsim", marks=pytest.mark.tsim)]
#: The counters that count work, not cycles: equal whatever the timing and the addresses.
EXACT = [name for name in COUNTER_NAMES if name.endswith(("_WR", "_LD", "_ST", "_STEPS"))
         and not name.startswith(("IDLE", "STALL"))]


def run_exec(tmp_path, capsys, image, *extra, target="fsim", name="out"):
    """``avta exec`` of ``image`` on ``target``: (exit status, summary line, final DRAM)."""
    out = tmp_path / f"{name}.bin"
    status = main(exec_args(write(tmp_path, image), len(image.insns), "-o", str(out),
                            "--target", target, *extra))
    return status, summary(capsys), out.read_bytes()


@pytest.mark.parametrize("target", TARGETS)
def test_base_registers_move_the_data(tiny_cfg, tmp_path, capsys, target):
    """The program built for base 0 and the same program with its micro-op, ACC and OUT data
    moved by --base end alike, on either target, and only the OUT data moved."""
    plain = requant_image(tiny_cfg)
    status, line, final = run_exec(tmp_path, capsys, plain, target=target, name="plain")
    assert status == 0 and line["status"] == "ok"
    based = requant_image(tiny_cfg, BASES)
    status, based_line, based_final = run_exec(tmp_path, capsys, based, *BASE_ARGS,
                                               target=target, name="based")
    assert status == 0 and based_line["status"] == "ok"
    assert all(based_line["counters"][c] == line["counters"][c] for c in EXACT)
    out = OUT + BASES["OUT"]
    assert based_final[out:out + 16] == final[OUT:OUT + 16] != bytes(16)
    assert based_final[OUT:OUT + 16] == bytes(16)      # nothing at OUT without its base
    expected = bytearray(based.to_bytes())
    expected[out:out + 16] = final[OUT:OUT + 16]
    assert based_final == bytes(expected)
    # fsim through the Python API with the same bases.
    direct = bytearray(based.to_bytes())
    assert Fsim(tiny_cfg).run(direct, INSN, len(based.insns), bases=BASES).ok
    assert based_final == bytes(direct)


def test_base_registers_in_a_trace(tiny_cfg, tmp_path, capsys):
    based = requant_image(tiny_cfg, BASES)
    trace = tmp_path / "trace.jsonl"
    _, line, final = run_exec(tmp_path, capsys, based, *BASE_ARGS, "--trace", str(trace))
    _, _, untraced = run_exec(tmp_path, capsys, based, *BASE_ARGS, name="untraced")
    assert line["status"] == "ok" and final == untraced
    events = [json.loads(text) for text in trace.read_text().splitlines()]
    stores = [e for e in events if e["kind"] == "dram"]
    assert [e["address"] for e in stores] == [OUT + BASES["OUT"] + 4 * i for i in range(4)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_misaligned_base_is_error_11_not_a_usage_error(tiny_cfg, tmp_path, capsys, target):
    image = requant_image(tiny_cfg)
    wgt = base_alignment(tiny_cfg, "WGT") // 2
    status, line, _ = run_exec(tmp_path, capsys, image, "--base", f"WGT={wgt}", target=target)
    assert status == 1
    assert (line["status"], line["error_code"], line["error_insn"]) == \
        ("error", ErrorCode.UNALIGNED_BASE, 0)


@pytest.mark.tsim
def test_memory_knobs_change_cycles_not_dram(tiny_cfg, tmp_path, capsys):
    """Shaken timing slows the run down, leaves the final DRAM alone, and replays: the same
    knobs from a file give the same cycles."""
    image = requant_image(tiny_cfg, BASES)
    runs = {}
    knobs = tmp_path / "failure.json"
    knobs.write_text(json.dumps({"memory_knobs": SHAKEN.to_dict()}))
    shaken = ["--seed", "7", "--latency", "30-40", "--outstanding", "3", "--reorder",
              "--backpressure", "0.5", "--write-latency", "9"]
    for name, extra in [("plain", []), ("shaken", shaken), ("file", ["--knobs", str(knobs)]),
                        ("reseeded", ["--knobs", str(knobs), "--seed", "8"])]:
        status, line, final = run_exec(tmp_path, capsys, image, *BASE_ARGS, *extra,
                                       target="tsim", name=name)
        assert status == 0 and line["status"] == "ok"
        runs[name] = line, final
    plain, shaken = runs["plain"][0], runs["shaken"][0]
    assert shaken["cycles"] > plain["cycles"] + 30
    assert runs["file"][0]["cycles"] == shaken["cycles"]
    assert len({final for _, final in runs.values()}) == 1
    assert runs["plain"][1][OUT + BASES["OUT"]:OUT + BASES["OUT"] + 16] != bytes(16)
    assert all(runs[name][0]["counters"][c] == plain["counters"][c]
               for name in runs for c in EXACT)
