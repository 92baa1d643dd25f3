"""Run cocotb tests on Verilator for an Amaranth component, with builds cached by content.

The Verilog of the component is written to ``<cache>/<top>-<hash>/``, where the hash covers
the Verilog text, the build arguments and where cocotb and Verilator are installed; a build whose
folder already exists is reused.
Waveforms only when ``AVTA_WAVES=1`` (cocotb's ``WAVES=1`` also works).
"""

import hashlib
import os
import sys
from pathlib import Path

from avta.hw.verilog import to_verilog

from ..verilator import cache_root, verilator_env

__all__ = ["run_cocotb"]


def run_cocotb(component, *, top, test_module, test_dir=None, build_args=(), extra_env=None,
               testcase=None, verilog=None, log_file=None):
    """Convert ``component`` to Verilog (or take ``verilog`` text), build it with Verilator
    (cached) and run cocotb tests.

    ``log_file``: append the build's and the simulator's output (cocotb's log, Verilator's
    report) to this file instead of this process's stdout, so a command printing figures keeps
    them apart from the simulator's lines.

    ``test_module`` is the module name of the cocotb tests, importable as is or found in
    ``test_dir``. Under pytest, a failing cocotb test makes this raise, so the calling pytest
    test fails; elsewhere it returns the path of cocotb's results XML.
    """
    verilator_env()
    from cocotb_tools.runner import get_runner

    text = verilog if verilog is not None else to_verilog(component, name=top)
    args = list(build_args)
    # Verilator's generated makefile names cocotb's and Verilator's files by absolute path, so
    # a build made from another virtual environment cannot be reused: the installs are keyed.
    import cocotb
    installs = f"{Path(cocotb.__file__).parent}\0{os.environ.get('VERILATOR_ROOT', '')}"
    digest = hashlib.sha256((text + "\0" + " ".join(args) + "\0" + installs).encode()
                            ).hexdigest()[:16]
    build_dir = cache_root() / "cocotb" / f"{top}-{digest}"
    build_dir.mkdir(parents=True, exist_ok=True)
    source = build_dir / f"{top}.v"
    if not source.exists() or source.read_text() != text:
        source.write_text(text)
    waves = os.environ.get("AVTA_WAVES") == "1"
    runner = get_runner("verilator")
    logs = {}
    if log_file is not None:
        log_file = Path(log_file)
        logs = {"build": log_file.with_name(log_file.name + ".build"),
                "test": log_file.with_name(log_file.name + ".test")}
    if test_dir is not None:
        test_dir = str(Path(test_dir).resolve())
        if test_dir not in sys.path:
            sys.path.insert(0, test_dir)
    try:
        runner.build(sources=[source], hdl_toplevel=top, build_dir=build_dir,
                     timescale=("1ns", "1ps"), build_args=args, waves=waves, always=False,
                     log_file=logs.get("build"))
        return runner.test(hdl_toplevel=top, test_module=test_module, build_dir=build_dir,
                           test_dir=build_dir, waves=waves, extra_env=extra_env or {},
                           testcase=testcase, log_file=logs.get("test"))
    finally:
        # cocotb's runner overwrites its log files: each run's are appended to log_file, a
        # failed build's too.
        for part in logs.values():
            if part.exists():
                with open(log_file, "a") as out:
                    out.write(part.read_text())
                part.unlink()
