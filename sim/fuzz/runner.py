"""The differential fuzzer: random well-formed programs on fsim and tsim, compared (``avta fuzz``).

Program ``i`` of a session is :func:`~.program.random_program` ``(cfg, seed + i)``. It runs on a
fresh fsim and on one Verilated design with trace ports (reused across programs: its scratchpads
keep earlier contents, which a well-formed program never reads), both traced in ``arch`` mode.
The two runs must agree on

* the end (status, error code and instruction), the exact counters (bytes and steps) and the
  final DRAM byte for byte (:func:`avta.sim.mirror.run_differences`, as the runtime's mirror),
* the traces: every scratchpad row and DRAM element each instruction writes
  (:mod:`avta.sim.trace.diff`).

tsim's AXI memory is shaken by default (:meth:`MemoryKnobs.random`, seeded by the program's seed:
latency 1-40, reordering, 30 % backpressure), so timing differs from program to program too.

A failing program is saved to ``<out>/<config>-seed<S>/`` with everything needed to replay it:
``image.bin``, ``program.jsonl`` (its instructions, for ``avta asm``), both traces,
``diff.txt`` (the trace diff), ``failure.json`` (what differed, the memory knobs, the commands)
and ``replay.sh``.
"""

import json
import shlex
from collections import Counter
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from avta.isa.asm import insn_to_json
from avta.sim.mirror import run_differences

from .coverage import coverage
from .program import random_program

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

    @property
    def ok(self):
        return not self.failures

    def format(self):
        rate = self.programs / self.seconds if self.seconds else 0.0
        lines = [f"fuzz {self.config}: {self.programs} programs, {self.instructions} instructions, "
                 f"{self.events} trace events and {self.cycles} tsim cycles compared in "
                 f"{self.seconds:.1f} s ({rate:.1f} programs/s)"]
        if self.features is not None:
            from .coverage import ISA_FEATURES
            missing = sorted(set(ISA_FEATURES) - set(self.features))
            lines.append(f"coverage: {len(ISA_FEATURES) - len(missing)} of {len(ISA_FEATURES)} "
                         f"ISA features" + (f" (never: {', '.join(missing)})" if missing else ""))
        for failure in self.failures:
            lines.append(f"FAILED seed {failure.seed}: {failure.reasons[0]} (saved in "
                         f"{failure.folder}/)")
        lines.append(f"{'mismatched' if self.failures else 'matched'}: "
                     f"{len(self.failures)} of {self.programs} programs differ")
        return "\n".join(lines)


def fuzz(cfg, count, *, seed=0, out_dir="fuzz-failures", memory="random", log=None,
         config_arg=None, faults=()):
    """Run ``count`` programs (seeds ``seed`` … ``seed + count - 1``); a :class:`FuzzSummary`.

    ``memory`` is ``"random"`` (shaken AXI memory) or ``"plain"``; ``log`` (a callable taking
    one line) hears about progress and failures; ``config_arg`` is how the replay commands name
    the configuration (default: its name); ``faults`` plants bugs in the design (tests of the
    fuzzer itself, :mod:`avta.hw.core.faults`).
    """
    from avta.sim.fsim import Fsim
    from avta.sim.trace.diff import diff_files
    from avta.sim.trace.record import record_trace
    from avta.sim.memory_knobs import MemoryKnobs
    from avta.sim.tsim.driver import Tsim

    log = log or (lambda line: None)
    summary = FuzzSummary(cfg.name)
    tsim = Tsim(cfg, trace=True, faults=faults)    # built (or taken from the cache) once
    programs = []
    extra = Counter()           # features only a run shows
    after_error = False         # did the previous program leave tsim after an error?
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="avta-fuzz-") as scratch:
        scratch = Path(scratch)
        for s in range(seed, seed + count):
            prog = random_program(cfg, s)
            programs.append(prog.program)
            knobs = MemoryKnobs.random(s) if memory == "random" else MemoryKnobs(seed=s)
            tsim.set_knobs(knobs)
            drams = [np.frombuffer(prog.dram(), dtype=np.uint8) for _ in range(2)]
            traces = [scratch / "fsim.trace", scratch / "tsim.trace"]
            results = [
                record_trace(traces[0], Fsim(cfg, strict=prog.strict), drams[0], prog.insn_addr,
                             prog.insn_count, bases=prog.bases),
                record_trace(traces[1], tsim, drams[1], prog.insn_addr, prog.insn_count,
                             bases=prog.bases, max_cycles=MAX_CYCLES),
            ]
            report = diff_files(*traces)
            reasons = _reasons(prog, results, drams, report)
            if after_error:
                extra["tsim reused after an error"] += 1
            after_error = results[1].status != "ok"
            summary.programs += 1
            summary.instructions += prog.insn_count
            summary.events += sum(report.compared[stage][1] for stage in report.compared)
            summary.cycles += results[1].cycles or 0
            if reasons:
                folder = _save(Path(out_dir), prog, knobs, traces, report, reasons,
                               config_arg or cfg.name)
                summary.failures.append(FuzzFailure(s, reasons, folder))
                log(f"seed {s}: MISMATCH: {reasons[0]}; saved in {folder}/")
            elif (s - seed + 1) % 50 == 0:
                log(f"{s - seed + 1} of {count} programs match")
    summary.seconds = time.perf_counter() - start
    summary.features = coverage(programs) + extra
    tsim.close()
    return summary


def _reasons(prog, results, drams, report):
    """What differs between the fsim run (first) and the tsim run, one line each; and how
    either differs from the end a planted error must have (``prog.expect``)."""
    first, second = results
    reasons = []
    if prog.expect is None and first.status != "ok":
        reasons.append(f"fsim ended {first.status} ({first.detail}): a generator bug, the "
                       f"program should be well-formed")
    for name, result in zip(("fsim", "tsim"), results):
        end = (result.status, result.error_code, result.error_insn)
        if prog.expect is not None and end != prog.expect:
            reasons.append(f"{name} ended {end}, but the planted {prog.error!r} must end "
                           f"{prog.expect} ({result.detail})")
    reasons += run_differences(first, second, *drams, ("fsim", "tsim"))
    # After an error only the code and the index are defined (docs/isa.md §3.5).
    if prog.expect is None and not report.matched:
        stages = ", ".join(f"{stage} at instruction {d.insn}"
                           for stage, d in report.divergences.items())
        reasons.append(f"traces diverge: {stages or report.end_difference}")
    return reasons


def _save(out_dir, prog, knobs, traces, report, reasons, config):
    cfg = prog.cfg
    folder = out_dir / f"{cfg.name}-seed{prog.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "image.bin").write_bytes(prog.image)
    (folder / "program.jsonl").write_text(
        "".join(json.dumps(insn_to_json(insn)) + "\n" for insn in prog.insns))
    for trace in traces:
        (folder / trace.name).write_bytes(trace.read_bytes())
    (folder / "diff.txt").write_text(report.format() + "\n")
    replay = [
        ["avta", "exec", "--config", config, "--target", target, "--image", "image.bin",
         "--insn-addr", hex(prog.insn_addr), "--insn-count", str(prog.insn_count),
         "--dram-size", str(prog.dram_size), "--trace", f"replay-{target}.trace",
         "-o", f"final-{target}.bin"]
        for target in ("fsim", "tsim")
    ] + [["avta", "trace-diff", "replay-fsim.trace", "replay-tsim.trace"]]
    commands = [" ".join(shlex.quote(part) for part in cmd) for cmd in replay]
    (folder / "replay.sh").write_text(
        "#!/bin/sh\n# Replays the failing program (tsim with the plain memory model: the fuzzer's\n"
        "# shaken memory knobs are in failure.json).\ncd \"$(dirname \"$0\")\"\n"
        + "\n".join(commands) + "\n")
    (folder / "failure.json").write_text(json.dumps({
        "config": cfg.to_dict() | {"name": cfg.name}, "seed": prog.seed,
        "insn_addr": prog.insn_addr, "insn_count": prog.insn_count,
        "dram_size": prog.dram_size, "reasons": reasons,
        "memory_knobs": knobs.to_dict(),
        "replay": commands}, indent=2) + "\n")
    return folder
