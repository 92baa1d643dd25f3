"""The differential fuzzer: random well-formed programs on fsim and tsim, compared (``avta fuzz``).

Program ``i`` of a session is :func:`~.program.random_program` ``(cfg, seed + i)``. It runs on a
fresh fsim and on one Verilated design with trace ports (reused across programs: its scratchpads
keep earlier contents, which a well-formed program never reads), both traced in ``arch`` mode.
The two runs must agree on

* the end (status, error code and instruction), the exact counters (bytes and steps) and the
  final DRAM byte for byte (:func:`avta.sim.mirror.run_differences`, as the runtime's mirror),
* the traces: every scratchpad row and DRAM element each instruction writes
  (:mod:`avta.sim.trace.diff`);
* for a program with a planted error (:mod:`.errors`), the end it must have: after an error only
  the code and the instruction are defined (docs/isa.md §3.5), so nothing else is compared.

The shared tsim also runs each program right after the previous one, errors included: a run
that follows an error must find the machine as a clean one would ("tsim reused after an error").

tsim's AXI memory is shaken by default (:meth:`MemoryKnobs.random`, seeded by the program's seed:
latency 1-40, reordering, 30 % backpressure), so timing differs from program to program too.

A failing program is first shrunk (:mod:`.shrink`) to a small reproducer, then saved to
``<out>/<config>-seed<S>/`` with everything needed to replay it: ``image.bin``,
``program.jsonl`` (its instructions, for ``avta asm``), both traces, ``diff.txt`` (the trace
diff), ``knobs.json`` (tsim's memory timing), ``failure.json`` (what differed, base registers,
the commands, how far it shrank) and ``replay.sh``; the unshrunk program goes into
``original/``.
"""

import dataclasses
import json
import shlex
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from avta.isa.asm import insn_to_json
from avta.sim.mirror import run_differences

from .coverage import coverage, isa_features
from .program import random_program
from .shrink import shrink

__all__ = ["FuzzFailure", "FuzzSummary", "fuzz"]

#: tsim's cycle limit per program; a random program needs a few thousand cycles.
MAX_CYCLES = 5_000_000


@dataclass
class FuzzFailure:
    seed: int
    reasons: list
    folder: Path


@dataclass
class FuzzSummary:
    config: str
    programs: int = 0
    instructions: int = 0
    events: int = 0
    cycles: int = 0
    seconds: float = 0.0
    failures: list = field(default_factory=list)
    features: object = None
    #: The ISA features the configuration has (:func:`avta.sim.fuzz.coverage.isa_features`).
    isa_features: tuple = ()

    @property
    def ok(self):
        return not self.failures

    def format(self):
        rate = self.programs / self.seconds if self.seconds else 0.0
        lines = [f"fuzz {self.config}: {self.programs} programs, {self.instructions} instructions, "
                 f"{self.events} trace events and {self.cycles} tsim cycles compared in "
                 f"{self.seconds:.1f} s ({rate:.1f} programs/s)"]
        if self.features is not None:
            from .coverage import CORNER_FEATURES, RUN_FEATURES
            for kind, names in (("ISA features", self.isa_features),
                                ("corner features", CORNER_FEATURES + RUN_FEATURES)):
                missing = [name for name in names if not self.features[name]]
                lines.append(f"coverage: {len(names) - len(missing)} of {len(names)} {kind}"
                             + (f" (never: {', '.join(missing)})" if missing else ""))
        for failure in self.failures:
            lines.append(f"FAILED seed {failure.seed}: {failure.reasons[0]} (saved in "
                         f"{failure.folder}/)")
        lines.append(f"{'mismatched' if self.failures else 'matched'}: "
                     f"{len(self.failures)} of {self.programs} programs differ")
        return "\n".join(lines)


def fuzz(cfg, count, *, seed=0, out_dir="fuzz-failures", memory="random", log=None,
         config_arg=None, faults=(), shrink_failures=True, save=True, step=None):
    """Run ``count`` programs (seeds ``seed`` … ``seed + count - 1``); a :class:`FuzzSummary`.

    ``memory`` is ``"random"`` (shaken AXI memory) or ``"plain"``; ``log`` (a callable taking
    one line) hears about failures; ``step(summary)`` is called after each program (progress);
    ``config_arg`` is how the replay commands name
    the configuration (default: its name); ``faults`` plants bugs in the design (tests of the
    fuzzer itself, :mod:`avta.hw.core.faults`). A failing program is shrunk
    (:func:`~.shrink.shrink`, unless ``shrink_failures`` is false) and saved in ``out_dir``
    (unless ``save`` is false: a campaign that only counts failures).
    """
    from avta.sim.memory_knobs import MemoryKnobs
    from avta.sim.tsim.driver import Tsim

    log = log or (lambda line: None)
    summary = FuzzSummary(cfg.name, isa_features=isa_features(cfg))
    tsim = Tsim(cfg, trace=True, faults=faults)    # built (or taken from the cache) once
    features = Counter()        # coverage of every program, layout and run features included
    after_error = False         # did the previous program leave tsim after an error?
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="avta-fuzz-") as scratch:
        trial = _Trial(tsim, Path(scratch))
        for s in range(seed, seed + count):
            prog = random_program(cfg, s)
            features += coverage(prog)
            knobs = MemoryKnobs.random(s) if memory == "random" else MemoryKnobs(seed=s)
            reasons = trial.run(prog, knobs)
            if after_error:
                features["tsim reused after an error"] += 1
            after_error = trial.results[1].status != "ok"
            summary.programs += 1
            summary.instructions += prog.insn_count
            summary.events += sum(n for _, n in trial.report.compared.values())
            summary.cycles += trial.results[1].cycles or 0
            if step:
                step(summary)
            if not reasons:
                continue
            folder = None
            if save:
                found = None
                if shrink_failures:
                    log(f"seed {s}: MISMATCH: {reasons[0]}; shrinking it")
                    found = shrink(prog, lambda p: trial.run(p, knobs, fresh=True,
                                                             differences_only=True))
                folder = _save(Path(out_dir), prog, knobs, reasons, config_arg or cfg.name,
                               trial, found)
                tsim.reset()        # the shrinking runs left their state behind
                after_error = False
            summary.failures.append(FuzzFailure(s, reasons, folder))
            log(f"seed {s}: MISMATCH: {reasons[0]}" + (f"; saved in {folder}/" if folder
                                                        else ""))
    summary.seconds = time.perf_counter() - start
    summary.features = features
    tsim.close()
    return summary


class _Trial:
    """One program on a fresh fsim and on ``tsim``, both traced; what differs.

    After :meth:`run`, ``results``, ``drams``, ``report`` and ``traces`` (two trace files in
    ``scratch``, overwritten by the next run) describe the last run."""

    def __init__(self, tsim, scratch):
        self.tsim, self.scratch = tsim, scratch
        self.traces = [scratch / "fsim.trace", scratch / "tsim.trace"]

    def run(self, prog, knobs, *, fresh=False, differences_only=False):
        """The reasons ``prog`` fails (empty when fsim and tsim agree and each ends as
        ``prog.expect`` says); ``fresh`` resets tsim first (scratchpads zero, as fsim's);
        ``differences_only`` leaves out how each target's end differs from the expected one
        (what a shrunk program is judged by: the two targets disagree)."""
        from avta.sim.fsim import Fsim
        from avta.sim.trace.diff import diff_files
        from avta.sim.trace.record import record_trace
        if fresh:
            self.tsim.reset()
        self.tsim.set_knobs(knobs)
        self.drams = [np.frombuffer(prog.dram(), dtype=np.uint8) for _ in range(2)]
        self.results = [
            record_trace(self.traces[0], Fsim(prog.cfg, strict=prog.strict), self.drams[0],
                         prog.insn_addr, prog.insn_count, bases=prog.bases),
            record_trace(self.traces[1], self.tsim, self.drams[1], prog.insn_addr,
                         prog.insn_count, bases=prog.bases, max_cycles=MAX_CYCLES),
        ]
        self.report = diff_files(*self.traces)
        if differences_only:
            prog = dataclasses.replace(prog, expect=None, error="")
        return _reasons(prog, self.results, self.drams, self.report)


def _reasons(prog, results, drams, report):
    """What differs between the fsim run (first) and the tsim run, one line each; and how
    either differs from the end a planted error must have (``prog.expect``)."""
    first, second = results
    reasons = []
    if prog.expect is None and prog.error is None and first.status != "ok":
        reasons.append(f"fsim ended {first.status} ({first.detail}): a generator bug, the "
                       f"program should be well-formed")
    for name, result in zip(("fsim", "tsim"), results):
        end = (result.status, result.error_code, result.error_insn)
        if prog.expect is not None and end != prog.expect:
            reasons.append(f"{name} ended {end}, but the planted {prog.error!r} must end "
                           f"{prog.expect} ({result.detail})")
    reasons += run_differences(first, second, *drams, ("fsim", "tsim"))
    # After an error only the code and the index are defined (docs/isa.md §3.5).
    if first.status == "ok" and not report.matched:
        stages = ", ".join(f"{stage} at instruction {d.insn}"
                           for stage, d in report.divergences.items())
        reasons.append(f"traces diverge: {stages or report.end_difference}")
    return reasons


def _save(out_dir, prog, knobs, reasons, config, trial, shrunk):
    """Save a failing program in ``out_dir/<config>-seed<S>/``; the folder.

    The folder holds the reproducer: the program :func:`~.shrink.shrink` found (``shrunk``), or
    the failing program itself when shrinking was off or could not reproduce it alone; with
    a smaller reproducer, the original program goes into ``original/``. ``trial`` holds the
    original run's traces on entry; the reproducer is run again for its own."""
    cfg = prog.cfg
    folder = out_dir / f"{cfg.name}-seed{prog.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    original = folder / "original" if shrunk is not None else folder
    _write_run(original, prog, trial)
    record = {"config": cfg.to_dict() | {"name": cfg.name}, "seed": prog.seed,
              "corners": sorted(prog.corners), "memory_knobs": knobs.to_dict()}
    if shrunk is not None:
        # The traces of the reproducer's own (fresh) run.
        trial.run(shrunk.program, knobs, fresh=True, differences_only=True)
        _write_run(folder, shrunk.program, trial)
        record["shrunk"] = {"from_insns": len(prog.insns), "to_insns": len(shrunk.program.insns),
                            "runs": shrunk.runs, "seconds": round(shrunk.seconds, 1),
                            "original_reasons": reasons}
        reasons, prog = shrunk.reasons, shrunk.program
    else:
        record["shrunk"] = None         # off, or the failure needs the programs run before
    (folder / "knobs.json").write_text(json.dumps(knobs.to_dict(), indent=2) + "\n")
    bases = [arg for key, value in prog.bases.items() if value
             for arg in ("--base", f"{key}={value:#x}")]
    replay = [
        ["avta", "exec", "--config", config, "--target", target, "--image", "image.bin",
         "--insn-addr", hex(prog.insn_addr), "--insn-count", str(prog.insn_count),
         "--dram-size", str(prog.dram_size), *bases, "--trace", f"replay-{target}.trace",
         "-o", f"final-{target}.bin"]
        + (["--knobs", "knobs.json"] if target == "tsim" else [])
        + (["--strict"] if target == "fsim" and prog.strict else [])
        for target in ("fsim", "tsim")
    ] + [["avta", "trace-diff", "replay-fsim.trace", "replay-tsim.trace"]]
    commands = [" ".join(shlex.quote(part) for part in cmd) for cmd in replay]
    (folder / "replay.sh").write_text(
        "#!/bin/sh\n# Replays the failing program on a fresh fsim and tsim, tsim with the "
        "fuzzer's memory timing (knobs.json).\ncd \"$(dirname \"$0\")\"\n"
        + "\n".join(commands) + "\n")
    (folder / "failure.json").write_text(json.dumps(record | {
        "insn_addr": prog.insn_addr, "insn_count": prog.insn_count,
        "dram_size": prog.dram_size, "bases": prog.bases, "expect": prog.expect,
        "reasons": reasons, "replay": commands}, indent=2, default=int) + "\n")
    return folder


def _write_run(folder, prog, trial):
    """The image, instructions, both traces and the trace diff of ``trial``'s last run."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "image.bin").write_bytes(prog.image)
    (folder / "program.jsonl").write_text(
        "".join(json.dumps(insn_to_json(insn, cfg=prog.cfg)) + "\n" for insn in prog.insns))
    for trace in trial.traces:
        (folder / trace.name).write_bytes(trace.read_bytes())
    (folder / "diff.txt").write_text(trial.report.format() + "\n")
