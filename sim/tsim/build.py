"""Build the tsim shared library: Verilated top + ``harness.cpp``, cached by content hash.

The harness sources are copied into the build folder beside the header generated from Python
(:mod:`.harness_header`), so a build folder holds exactly what was compiled. The cache key
covers the Verilog text, the harness sources, the generated header, the data width, the
Verilator version and the waveform format compiled in (if any); a library already built for the
same key is reused, so only a change to the design, the harness or the facts it shares with
Python costs a Verilator build. The activity recorder (``activity.h`` and the harness's
``#ifdef TSIM_ACTIVITY`` blocks) is part of the key only of the builds that compile it in: a
build without it compiles the harness without those blocks, so its key leaves them out too.

Publishing is safe with many processes at once, and a library is used only if it matches the
checksum written beside it when it was built, so a truncated or corrupt one (a full disk, a
killed copy) is rebuilt instead of crashing the process that loads it
(:mod:`avta.sim.build_folder`, which upstream's simulator builds share).
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from avta.progress import working

from ..build_folder import building, intact
from ..verilator import (VerilatorError, cache_root, run_verilator, verilator_env,
                         verilator_version)
from .harness_header import HEADER_NAME, harness_header

__all__ = ["build_library", "HARNESS"]

#: The library, the build folder's artifact (:mod:`avta.sim.build_folder`).
LIBRARY = "libtsim.so"

HARNESS = Path(__file__).with_name("harness.cpp")
#: The trace manager's half of the harness, compiled in for designs with trace ports.
EVENTS = Path(__file__).with_name("events.h")
#: The activity recorder, compiled in for designs with activity ports.
ACTIVITY = Path(__file__).with_name("activity.h")
#: The lines that open and close the harness's activity blocks.
ACTIVITY_BEGIN = "#ifdef TSIM_ACTIVITY"
ACTIVITY_END = "#endif  // TSIM_ACTIVITY"
TOP = "vta_top"
#: Verilator's own C++ is compiled with -O1: large designs build much faster than with -O2
#: and run nearly as fast (the harness itself gets -O2).
MODEL_OPT = "-O1"


#: Waveform formats: Verilator's trace option and the harness's define for each.
TRACE_FORMATS = {"vcd": ("--trace", "TSIM_TRACE_VCD"), "fst": ("--trace-fst", "TSIM_TRACE_FST")}


def _check_fst_headers():
    """FST needs lz4's development headers, which no PyPI package provides."""
    probe = subprocess.run(["g++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    if probe.returncode != 0:
        raise VerilatorError("FST waveforms need the lz4 development headers (Debian: "
                             "liblz4-dev), which are not installed; ask for a .vcd file instead, "
                             "which needs nothing more")


def without_activity(harness):
    """The harness text as a build without ``TSIM_ACTIVITY`` compiles it: every block from a
    line ``ACTIVITY_BEGIN`` to the next line ``ACTIVITY_END`` removed."""
    kept, inside = [], False
    for line in harness.splitlines(keepends=True):
        if line.startswith(ACTIVITY_BEGIN):
            inside = True
        elif inside:
            inside = not line.startswith(ACTIVITY_END)
        else:
            kept.append(line)
    return "".join(kept)


def build_library(verilog_text, *, data_bits, trace=None, events=False, activity=False,
                  jobs=None):
    """Path of ``libtsim.so`` for this Verilog (top module ``vta_top``), building it if needed.

    ``trace`` is ``None``, ``"vcd"`` or ``"fst"``: compile waveform tracing in. ``events``: the
    design has trace ports (``top_verilog(cfg, trace=True)``); compile the trace manager in.
    ``activity``: the design has activity ports (``top_verilog(cfg, activity=True)``); compile
    the activity recorder in.
    """
    if trace is not None and trace not in TRACE_FORMATS:
        raise ValueError(f"trace must be one of {sorted(TRACE_FORMATS)} or None, not {trace!r}")
    env = verilator_env()
    sources = {path.name: path.read_text() for path in (HARNESS, EVENTS, ACTIVITY)}
    sources[HEADER_NAME] = harness_header()
    harness = sources[HARNESS.name] if activity else without_activity(sources[HARNESS.name])
    parts = [verilog_text, harness, sources[EVENTS.name] if events else "",
             sources[HEADER_NAME], str(data_bits), str(verilator_version()), str(trace),
             MODEL_OPT]
    if activity:
        parts.append(sources[ACTIVITY.name])
    key = "\0".join(parts)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    out = cache_root() / "tsim" / f"{digest}{'-' + trace if trace else ''}"
    if intact(out, LIBRARY):
        return out / LIBRARY
    with building(out, LIBRARY, error=VerilatorError, what="the tsim build") as tmp:
        (tmp / "obj").mkdir()
        with working(f"building tsim {digest} (Verilator; cached for next time)") as bar:
            _compile(tmp, verilog_text, sources, env, data_bits=data_bits, trace=trace,
                     events=events, activity=activity, jobs=jobs, bar=bar)
    return out / LIBRARY


def _compile(tmp, verilog_text, sources, env, *, data_bits, trace, events, activity, jobs, bar):
    """Verilate the design and compile it with the harness into ``tmp / LIBRARY``; ``bar`` (a
    :func:`avta.progress.working` bar) names the step."""
    (tmp / f"{TOP}.v").write_text(verilog_text)
    for name, text in sources.items():
        (tmp / name).write_text(text)
    jobs = jobs or os.cpu_count() or 1
    flags = [f"-fPIC {MODEL_OPT} -DTSIM_DATA_BITS={data_bits}"]
    args = ["--cc", f"{TOP}.v", "--top-module", TOP, "-Mdir", "obj", "--build", "-j", str(jobs),
            "-CFLAGS", flags[0], "--x-assign", "0", "--x-initial", "0"]
    if trace == "fst":
        _check_fst_headers()
    if trace:
        args.append(TRACE_FORMATS[trace][0])
    bar.set_postfix_str("verilating and compiling the model")
    run_verilator(args, cwd=tmp)
    root = Path(env.get("VERILATOR_ROOT", ""))
    include = root / "include" if root.name else Path(shutil.which("verilator")).parent.parent \
        / "share" / "verilator" / "include"
    cmd = ["g++", "-std=c++20", "-O2", "-shared", "-fPIC", f"-DTSIM_DATA_BITS={data_bits}",
           *([f"-D{TRACE_FORMATS[trace][1]}"] if trace else []),
           *(["-DTSIM_EVENTS"] if events else []),
           *(["-DTSIM_ACTIVITY"] if activity else []),
           "-I.", f"-I{include}", f"-I{include / 'vltstd'}", "-Iobj", HARNESS.name,
           f"obj/V{TOP}__ALL.a", "obj/libverilated.a", "-o", LIBRARY, "-lpthread",
           "-latomic"]
    if trace == "fst":
        cmd.append("-lz")
    bar.set_postfix_str("compiling the harness")
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    if proc.returncode != 0:
        raise VerilatorError(f"compiling the tsim harness failed:\n{' '.join(cmd)}\n"
                             f"{proc.stdout}{proc.stderr}")
