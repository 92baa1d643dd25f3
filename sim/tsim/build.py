"""Build the tsim shared library: Verilated top + ``harness.cpp``, cached by content hash.

The harness sources are copied into the build folder beside the header generated from Python
(:mod:`.harness_header`), so a build folder holds exactly what was compiled. The cache key
covers the Verilog text, the harness sources, the generated header, the data width, the
Verilator version and the waveform format compiled in (if any); a library already built for the
same key is reused, so only a change to the design, the harness or the facts it shares with
Python costs a Verilator build. The activity recorder (``activity.h`` and the harness's
``#ifdef TSIM_ACTIVITY`` blocks) is part of the key only of the builds that compile it in: a
build without it compiles the harness without those blocks, so its key leaves them out too.

Publishing is safe with many processes at once: each builds in a temporary folder of its own and
renames it into place; the first rename wins and the others use the winner's library. A library
is used only if it matches the checksum written beside it when it was built, so a truncated or
corrupt one (a full disk, a killed copy) is rebuilt instead of crashing the process that loads
it. Temporary folders of builds that died are removed by the next build.
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from avta.progress import working

from ..verilator import (VerilatorError, cache_root, run_verilator, verilator_env,
                         verilator_version)
from .harness_header import HEADER_NAME, harness_header

__all__ = ["build_library", "HARNESS"]

#: The library, and the file beside it that holds its SHA-256.
LIBRARY = "libtsim.so"
CHECKSUM = "libtsim.so.sha256"

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
    if _intact(out):
        return out / LIBRARY
    tmp = _workspace(out)
    try:
        with working(f"building tsim {digest} (Verilator; cached for next time)") as bar:
            _compile(tmp, verilog_text, sources, env, data_bits=data_bits, trace=trace,
                     events=events, activity=activity, jobs=jobs, bar=bar)
        (tmp / CHECKSUM).write_text(_sha256(tmp / LIBRARY))
        _publish(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / LIBRARY


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _intact(folder):
    """True when ``folder`` holds a library whose checksum matches the one written with it."""
    try:
        return (folder / CHECKSUM).read_text().strip() == _sha256(folder / LIBRARY)
    except OSError:
        return False


def _workspace(out):
    """A fresh temporary build folder beside ``out``; removes those of builds that died, and
    moves a corrupt ``out`` out of the way."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise VerilatorError(f"the build cache {out.parent} cannot be created "
                             f"({error.strerror}); set AVTA_CACHE to a writable folder") from None
    for stale in out.parent.glob("*.tmp*"):
        pid = stale.name.rsplit(".tmp", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    if out.exists() and not _intact(out):
        _discard(out)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "obj").mkdir(parents=True)
    except OSError as error:
        raise VerilatorError(f"the build cache {out.parent} is not writable ({error.strerror});"
                             f" set AVTA_CACHE to a writable folder") from None
    return tmp


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _discard(folder):
    """Remove a corrupt or incomplete build; renamed first, so that no process sees it half
    deleted and two processes never delete the same folder."""
    aside = folder.with_name(f"{folder.name}.corrupt{os.getpid()}")
    try:
        folder.rename(aside)
    except OSError:
        return              # another process moved it first
    shutil.rmtree(aside, ignore_errors=True)


def _publish(tmp, out):
    """Rename the finished build into place; when another process got there first with an
    intact build, keep theirs."""
    try:
        tmp.rename(out)
    except OSError:
        if not _intact(out):
            raise VerilatorError(f"cannot publish the tsim build {out}: it exists and is not "
                                 f"a complete build; remove it and try again") from None


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
