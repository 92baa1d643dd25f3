"""A check's budget is the CPU seconds of the tools it starts, not the wall clock: a machine
shared with other work slows a proof without failing it, and a failing design still fails
(docs/formal.md, "Budgets")."""

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from avta.cli import main
from avta.formal.blocks import find_check
from avta.formal.processes import TreeCpu, descendants
from avta.formal.runner import compile_yosys, run_check
from avta.hw.core.faults import FaultName
from avta.isa.config import load_config

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")

TINY = load_config("tiny")

#: A child that spins for one second of CPU and ends (its parent shell reaps it), then a
#: sleep that uses none.
_SPIN_THEN_SLEEP = (f"{sys.executable} -c 'import time\nend = time.process_time() + 1\n"
                    "while time.process_time() < end: pass' && sleep 1.5")


def test_tree_cpu_counts_the_cpu_of_ended_children_and_not_the_wall_clock():
    tree = subprocess.Popen(["sh", "-c", _SPIN_THEN_SLEEP])
    cpu = TreeCpu(tree.pid)
    while tree.poll() is None:
        cpu.sample()
        time.sleep(0.1)
    # The spinner ended a second or more before the last sample: its time is the shell's
    # reaped children's. The 2.5 s of wall clock count only as the second of CPU.
    assert 0.8 <= cpu.seconds <= 1.5, cpu.seconds


def _starve_tools_of_cpu(seconds, done):
    """Stop every process below this one (the tools a check starts) for ``seconds``, as a
    scheduler that gives them no CPU would; then let them go on."""
    stopped = set()
    end = time.monotonic() + seconds
    while time.monotonic() < end and not done.is_set():
        for pid in descendants(os.getpid()):
            if pid not in stopped:
                try:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.add(pid)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def test_a_check_starved_of_cpu_past_its_budget_still_passes(tmp_path):
    """The tools get no CPU for longer than the whole budget (a loaded machine, at its worst):
    the proof waits, then holds, because the budget counts the CPU it used."""
    check = dataclasses.replace(find_check("read_arbiter", "route", TINY), budget=8)
    compile_yosys()     # on a new machine, before the tools are stopped (run_check does it)
    done = threading.Event()
    starver = threading.Thread(target=_starve_tools_of_cpu, args=(12, done))
    starver.start()
    try:
        result = run_check(check, tmp_path / "route")
    finally:
        done.set()
        starver.join()
    assert result.status == "proven", result.message
    assert result.seconds > 12 and 0 < result.cpu_seconds < 8, result


def test_a_check_past_its_budget_of_cpu_is_a_timeout_naming_it(tmp_path):
    check = dataclasses.replace(find_check("compute", "overlap", TINY), budget=5)
    result = run_check(check, tmp_path / "overlap")
    assert result.status == "timeout" and not result.ok
    assert result.message == "the proof ran past its budget of 5 CPU seconds"
    assert 5 <= result.cpu_seconds < 8, result


def test_a_wall_clock_timeout_is_named_in_seconds(tmp_path):
    result = run_check(find_check("compute", "overlap", TINY), tmp_path / "overlap",
                       timeout=3)
    assert result.status == "timeout" and result.message == "the proof ran past 3 s"


@pytest.mark.slow
@pytest.mark.parametrize("fault, prop", [(FaultName.COMPUTE_HAZARD_DST, "overlap"),
                                         (FaultName.GEMM_RESET_STICKY, "fresh")])
def test_planted_compute_faults_fail_within_their_checks_budgets(tmp_path, capsys, fault,
                                                                 prop):
    """The CPU budgets let no failing design pass: ``avta formal`` as a user runs it, no
    --timeout, fails on each planted compute fault with a counterexample."""
    report = tmp_path / "report.json"
    status = main(["formal", "--config", "tiny", "--block", f"compute.{prop}", "--plant",
                   fault.value, "-o", str(tmp_path / "out"), "--json", str(report)])
    out = capsys.readouterr().out
    assert status == 1, out
    assert f"compute.{prop}: failed: assertion" in out and "counterexample:" in out, out
