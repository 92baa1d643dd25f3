"""Build the tsim shared library: Verilated top + ``harness.cpp``, cached by content hash.

The harness sources are copied into the build folder beside the header generated from Python
(:mod:`.harness_header`), so a build folder holds exactly what was compiled. The cache key
covers the Verilog text, the harness sources, the generated header, the data width, the
Verilator version and the waveform format compiled in (if any); a library already built for the
same key is reused, so only a change to the design, the harness or the facts it shares with
Python costs a Verilator build.
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from ..verilator import (VerilatorError, cache_root, run_verilator, verilator_env,
                         verilator_version)
from .harness_header import HEADER_NAME, harness_header

__all__ = ["build_library", "HARNESS"]

HARNESS = Path(__file__).with_name("harness.cpp")
#: The trace manager's half of the harness, compiled in for designs with trace ports.
EVENTS = Path(__file__).with_name("events.h")
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


def build_library(verilog_text, *, data_bits, trace=None, events=False, jobs=None):
    """Path of ``libtsim.so`` for this Verilog (top module ``vta_top``), building it if needed.

    ``trace`` is ``None``, ``"vcd"`` or ``"fst"``: compile waveform tracing in. ``events``: the
    design has trace ports (``top_verilog(cfg, trace=True)``); compile the trace manager in.
    """
    if trace is not None and trace not in TRACE_FORMATS:
        raise ValueError(f"trace must be one of {sorted(TRACE_FORMATS)} or None, not {trace!r}")
    env = verilator_env()
    sources = {path.name: path.read_text() for path in (HARNESS, EVENTS)}
    sources[HEADER_NAME] = harness_header()
    key = "\0".join([verilog_text, sources[HARNESS.name],
                     sources[EVENTS.name] if events else "", sources[HEADER_NAME],
                     str(data_bits), str(verilator_version()), str(trace), MODEL_OPT])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    out = cache_root() / "tsim" / f"{digest}{'-' + trace if trace else ''}"
    lib = out / "libtsim.so"
    if lib.exists():
        return lib
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "obj").mkdir(parents=True)
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
    run_verilator(args, cwd=tmp)
    root = Path(env.get("VERILATOR_ROOT", ""))
    include = root / "include" if root.name else Path(shutil.which("verilator")).parent.parent \
        / "share" / "verilator" / "include"
    cmd = ["g++", "-std=c++20", "-O2", "-shared", "-fPIC", f"-DTSIM_DATA_BITS={data_bits}",
           *([f"-D{TRACE_FORMATS[trace][1]}"] if trace else []),
           *(["-DTSIM_EVENTS"] if events else []),
           "-I.", f"-I{include}", f"-I{include / 'vltstd'}", "-Iobj", HARNESS.name,
           f"obj/V{TOP}__ALL.a", "obj/libverilated.a", "-o", "libtsim.so", "-lpthread",
           "-latomic"]
    if trace == "fst":
        cmd.append("-lz")
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    if proc.returncode != 0:
        raise VerilatorError(f"compiling the tsim harness failed:\n{' '.join(cmd)}\n"
                             f"{proc.stdout}{proc.stderr}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return lib
