"""Layers point one way (docs/architecture.md, layers): each package imports only the layers
below it, so the runtime runs without a simulator, the RTL without the runtime, and no library
needs the command line."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Source folder → the package it installs as (pyproject.toml's package-dir).
FOLDERS = {"avta": "avta", "isa": "avta.isa", "hw": "avta.hw", "sim": "avta.sim",
           "runtime": "avta.runtime", "floorplan": "avta.floorplan", "synth": "avta.synth",
           "formal": "avta.formal"}

#: Package prefix → the prefixes it may import (besides itself); the most specific prefix wins.
ALLOWED = {
    "avta.isa": ("avta.errors", "avta.version"),
    "avta.runtime": ("avta.isa", "avta.errors", "avta.files"),
    "avta.floorplan": ("avta.isa", "avta.errors", "avta.files"),
    "avta.hw": ("avta.isa", "avta.version"),
    "avta.sim": ("avta.isa", "avta.hw", "avta.runtime", "avta.errors", "avta.version",
                 "avta.progress", "avta.files"),
    # Design-space exploration weighs the simulators' cycles against the floorplan's area.
    "avta.sim.sweep": ("avta.isa", "avta.hw", "avta.runtime", "avta.sim", "avta.floorplan",
                       "avta.errors", "avta.version", "avta.progress", "avta.files"),
    # Energy weighs the runs' events against a technology table; leakage needs the logic's
    # gate equivalents (the floorplan's calibrated model), the clock avta fpga's results or the
    # timing model calibrated on them (avta.synth.clock).
    "avta.sim.energy": ("avta.isa", "avta.runtime", "avta.sim", "avta.floorplan", "avta.synth",
                        "avta.errors", "avta.version", "avta.progress", "avta.files"),
    # Area from synthesis: the RTL through Yosys, memories as the floorplan's macros; results
    # cached in the one cache (avta.files.cache_root); avta fpga shows its minutes-long runs'
    # progress.
    "avta.synth": ("avta.isa", "avta.hw", "avta.floorplan", "avta.errors", "avta.version",
                   "avta.progress", "avta.files", "avta.tools"),
    # The proofs wrap the RTL blocks; they need no simulator, runtime or floorplan.
    "avta.formal": ("avta.hw", "avta.isa", "avta.errors", "avta.version", "avta.progress",
                    "avta.files", "avta.tools"),
    "avta.errors": (),
    "avta.version": (),
    "avta.progress": (),
    # Ground modules: writing outputs atomically, finding the tools installed beside Python.
    "avta.files": (),
    "avta.tools": ("avta.errors",),
}


def _module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    head = FOLDERS[parts[0]].split(".")
    tail = parts[1:]
    if tail and tail[-1] == "__init__":
        tail = tail[:-1]
    return ".".join(head + tail), path.name == "__init__.py"


def _imports(path):
    """Absolute names of the ``avta`` modules ``path`` imports (relative imports resolved)."""
    name, is_package = _module_name(path)
    package = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "avta"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "avta":
                found.add(target)
    return name, found


def _rule(module):
    matches = [p for p in ALLOWED if module == p or module.startswith(p + ".")]
    return max(matches, key=len) if matches else None


def _within(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def _sources():
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def _violations(paths):
    out = []
    for path in paths:
        module, imports = _imports(path)
        rule = _rule(module)
        if rule is None:        # the command line and the package root may use everything
            continue
        bad = [t for t in imports
               if not _within(t, rule) and not any(_within(t, ok) for ok in ALLOWED[rule])]
        if bad:
            out.append(f"{module} imports {', '.join(sorted(bad))}; {rule} may import only "
                       f"{', '.join(ALLOWED[rule]) or 'itself'}")
    return out


def test_imports_point_down():
    violations = _violations(_sources())
    assert not violations, "\n".join(violations)


def test_no_library_imports_the_command_line():
    users = [str(p.relative_to(ROOT)) for p in _sources()
             if _module_name(p)[0] != "avta.cli"
             and any(_within(t, "avta.cli") for t in _imports(p)[1])]
    assert not users, f"these import avta.cli: {users}; raise avta.errors.UserError instead"


def test_the_rules_can_fail(tmp_path, monkeypatch):
    """A runtime module that imports a simulator is caught."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    (folder / "leaky.py").write_text("from avta.sim.fsim import Fsim\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert _violations([folder / "leaky.py"]) == [
        "avta.runtime.leaky imports avta.sim.fsim; avta.runtime may import only avta.isa, "
        "avta.errors, avta.files"]


def test_the_ground_modules_load_nothing_heavy():
    """``import avta.errors`` (and the other ground modules) loads neither Amaranth nor numpy:
    the command line's lazy imports stay lazy."""
    import subprocess
    import sys
    code = ("import sys, avta.errors, avta.version, avta.progress, avta.files, avta.tools; "
            "print(sorted(m for m in ('amaranth', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
