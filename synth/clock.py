"""The clock of a configuration: measured by ``avta fpga`` where it has run, otherwise a timing
model of the critical paths calibrated on placed and routed points (like the logic-area model is
calibrated on synthesis, :mod:`.calibrate`).

**Measured.** ``avta fpga`` records each whole-design Fmax it reports in ``<avta cache>/fpga/
clocks.json`` (:func:`record_measured`), keyed by everything that changes it (:func:`record_key`):
the design placed, ``vta_top`` inside the out-of-context wrapper (a hash of their RTLIL,
:func:`placed_fingerprint`), the flow (its version, the Yosys script, nextpnr's arguments and
both tools' versions), the device and the seed. A change of the RTL, the wrapper, the flow or a
tool retires the record, and nothing else does: not a docstring, a comment or the ISA's cycle
model beside the RTL, which a key of the sources' text retired (one placement of ``tiny``, one
entry of avta fpga's cache, was recorded under two such keys). :func:`measured_clock` reads
back the records whose key is today's, the best Fmax over the devices.

**Modelled** (:class:`TimingModel`): the clock period is the longer of two register-to-register
paths, in ns,

* ``gemm``: one GEMM lane, its BLOCK_IN products, adder tree with the derived pipeline and
  accumulator (``avta bench gemm-fmax``): ``lane_ns + lane_ns_per_log2 · log2(BLOCK_IN)``;
* ``control``: the paths that bind every whole design placed with this RTL, in the memory
  engine and its clients: tiny's from the beat register's payload through the row writers and
  a client's ``ready`` to the held beat register's enable, fpga's from the wrapper's port
  register to the reader's slot counter (docs/architecture.md, timing on an FPGA):
  ``control_ns``, one figure, since no scratchpad, GEMM or ALU is on them (``tiny`` and
  ``fpga``, their deepest scratchpads 8 and 12 address bits, lie 1.9 % apart, the faster the
  deeper).

:data:`LANE_POINTS` and :data:`DESIGN_POINTS` are the placed points the coefficients are fitted
to (:func:`fit`; the defaults of :class:`TimingModel` are that fit, and a test checks it);
:data:`LANE_HELD_OUT` and :data:`DESIGN_HELD_OUT` are points the fit never sees
(:func:`errors`, docs/cli.md). Each point names the command that measured it
(:attr:`LanePoint.command`, :attr:`DesignPoint.command`); all figures are nextpnr-ecp5's,
seed 1, on the ECP5.
"""

import functools
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from avta.errors import UserError
from avta.files import cache_root

__all__ = ["TimingModel", "LanePoint", "DesignPoint", "LANE_POINTS", "LANE_HELD_OUT",
           "DESIGN_POINTS", "DESIGN_HELD_OUT", "fit", "errors", "Clock", "clock_of",
           "measured_clock", "record_measured", "placed_fingerprint", "record_key"]


@dataclass(frozen=True)
class LanePoint:
    """One GEMM lane of ``block_in`` products (derived pipeline stages) placed alone on the
    ECP5-85k: nextpnr's Fmax ``mhz``."""
    block_in: int
    mhz: float

    @property
    def command(self):
        """The command that measures this point."""
        return f"python -m avta.sim.bench.gemm_fmax --block-in {self.block_in} --stages derived"


@dataclass(frozen=True)
class DesignPoint:
    """A whole design, shipped configuration ``config``, placed and routed by ``avta fpga`` on
    ``device`` (seed 1, the default): nextpnr's Fmax ``mhz``, with the RTL of commit ``rtl``."""
    config: str
    device: str
    mhz: float
    rtl: str

    @property
    def command(self):
        """The command that measures this point (on a tree with that commit's RTL)."""
        return f"avta fpga --config {self.config} --device {self.device}"


#: Lanes the fit sees.
LANE_POINTS = (LanePoint(4, 138.3), LanePoint(16, 127.3), LanePoint(64, 116.2))
#: Lanes the fit does not see.
LANE_HELD_OUT = (LanePoint(8, 133.1), LanePoint(32, 121.7))
#: Whole designs the fit sees: tiny, the design placed most often (and the slower of the two,
#: so the model errs towards a slower clock). Both points are of the RTL with fetch's read
#: commands from registers, the memory engine's RREADY registered and the load units' sums
#: formed before their handshakes (hw/ last changed by cf74d6d; placed on main at 4825026).
DESIGN_POINTS = (DesignPoint("tiny", "ecp5-85k", 65.68, "4825026"),)
#: Whole designs the fit does not see.
DESIGN_HELD_OUT = (DesignPoint("fpga", "ecp5-85k", 66.98, "4825026"),)


@dataclass(frozen=True)
class TimingModel:
    """Path delays (ns) of the module docstring; the defaults are :func:`fit` of the points."""
    lane_ns: float = 6.522
    lane_ns_per_log2: float = 0.344
    control_ns: float = 15.225

    def paths(self, cfg):
        """``{path: ns}`` of ``cfg``'s two modelled paths."""
        return {"gemm": self.lane_ns + self.lane_ns_per_log2 * math.log2(cfg.block_in),
                "control": self.control_ns}

    def period_ns(self, cfg):
        return max(self.paths(cfg).values())

    def fmax_mhz(self, cfg):
        return 1e3 / self.period_ns(cfg)


def _line(xs, ys):
    """Least-squares ``(intercept, slope)`` of ``ys`` against ``xs``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def fit(lane_points=LANE_POINTS, design_points=DESIGN_POINTS):
    """A :class:`TimingModel` fitted to the points: the lane's period by least squares against
    log2(BLOCK_IN), the control path as the mean period of the whole designs (each whole
    design's period is its control path: its lane is faster by far)."""
    lane = _line([math.log2(p.block_in) for p in lane_points], [1e3 / p.mhz for p in lane_points])
    control = sum(1e3 / p.mhz for p in design_points) / len(design_points)
    return TimingModel(*(round(v, 3) for v in (*lane, control)))


def errors(model=None):
    """Rows ``{point, role, measured, model, error, command}`` of every point, lane and whole
    design."""
    from avta.isa.config import load_config
    model = model or TimingModel()
    rows = []
    for role, points in (("calibrated", LANE_POINTS), ("held-out", LANE_HELD_OUT)):
        for p in points:
            ns = model.lane_ns + model.lane_ns_per_log2 * math.log2(p.block_in)
            rows.append({"point": f"GEMM lane, BLOCK_IN {p.block_in}", "role": role,
                         "measured": p.mhz, "model": 1e3 / ns, "error": 1e3 / ns / p.mhz - 1,
                         "command": p.command})
    for role, points in (("calibrated", DESIGN_POINTS), ("held-out", DESIGN_HELD_OUT)):
        for p in points:
            predicted = model.fmax_mhz(load_config(p.config))
            rows.append({"point": f"{p.config} on {p.device}", "role": role, "measured": p.mhz,
                         "model": predicted, "error": predicted / p.mhz - 1,
                         "command": p.command})
    return rows


# -- measured clocks ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _sources_hash():
    """A hash of what the placed design's RTLIL is generated from: the RTL's and the ISA's source
    files, the wrapper's (:func:`.fpga.wrapped_rtlil`), the version module (the VERSION
    register's value) and Amaranth's version."""
    import amaranth
    digest = hashlib.sha256(amaranth.__version__.encode() + b"\0")
    root = Path(__file__).resolve().parents[1]
    paths = [root / "avta" / "version.py", root / "synth" / "fpga" / "__init__.py",
             root / "synth" / "fpga" / "wrapper.py"]
    for folder in ("hw", "isa"):
        paths += sorted((root / folder).rglob("*.py"))
    for path in paths:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


_HASH = re.compile(r"[0-9a-f]{24}")


def _config_text(cfg):
    return json.dumps(cfg.to_dict(), sort_keys=True)


def placed_fingerprint(cfg):
    """The design ``avta fpga`` places for ``cfg``: a hash of the RTLIL of ``vta_top`` inside the
    out-of-context wrapper (:func:`.fpga.wrapped_rtlil`), so equal RTL in an equal wrapper is one
    key whatever else changed in the sources.

    Elaborating takes seconds (tiny 3, fpga 9), so the hash is remembered in ``<avta cache>/
    fpga/designs.json`` under :func:`_sources_hash` and the configuration's every field (which
    together determine the RTLIL); an entry that is not a hash is computed again."""
    memo_key = f"{_sources_hash()}/{hashlib.sha256(_config_text(cfg).encode()).hexdigest()[:24]}"
    memo = _read_json(_designs_path())
    known = memo.get(memo_key)
    if isinstance(known, str) and _HASH.fullmatch(known):
        return known
    fingerprint = _elaborated(cfg)
    memo = _read_json(_designs_path())      # another process may have written meanwhile
    memo[memo_key] = fingerprint
    _write_json(_designs_path(), memo)
    return fingerprint


#: Configuration (its fields as JSON) → the hash of the RTLIL this process elaborated for it:
#: the modules loaded do not change while it runs, whatever the files on disk do.
_ELABORATED = {}


def _elaborated(cfg):
    text = _config_text(cfg)
    if text not in _ELABORATED:
        from avta.hw.top import VtaTop
        from .fpga import wrapped_rtlil
        rtlil, _ = wrapped_rtlil(VtaTop(cfg=cfg), "vta_top")
        _ELABORATED[text] = hashlib.sha256(rtlil.encode()).hexdigest()[:24]
    return _ELABORATED[text]


def record_key(cfg, device, seed):
    """The key of ``avta fpga``'s Fmax of ``cfg`` on ``device`` (a name) with ``seed``: the
    :func:`placed_fingerprint`, a hash of the flow that places it (:data:`.fpga.flow.FLOW_VERSION`,
    the Yosys script, nextpnr's arguments, both tools' versions as the flow records them), the
    device and the seed. Raises :class:`~avta.errors.UserError` for a device that is not one,
    or when a tool is not installed (no record can then be checked)."""
    from .fpga import device as find_device
    from .fpga.flow import FLOW_VERSION, nextpnr_args, tool_versions, yosys_script
    flow = json.dumps([FLOW_VERSION, yosys_script(), nextpnr_args(find_device(device), seed),
                       tool_versions()], sort_keys=True)
    return (f"{placed_fingerprint(cfg)}/{hashlib.sha256(flow.encode()).hexdigest()[:24]}/"
            f"{device}/{seed}")


def _index_path():
    return cache_root() / "fpga" / "clocks.json"


def _designs_path():
    return cache_root() / "fpga" / "designs.json"


def _read_json(path):
    """The JSON object at ``path``, or ``{}`` when there is none or it is not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def record_measured(cfg, device, seed, fmax_mhz):
    """Record ``avta fpga``'s Fmax of ``cfg`` on ``device`` (a name) with ``seed``."""
    if not (isinstance(fmax_mhz, (int, float)) and math.isfinite(fmax_mhz) and fmax_mhz > 0):
        return
    from .fpga.flow import FLOW_VERSION, tool_versions
    key = record_key(cfg, device, seed)
    index = _read_json(_index_path())
    index[key] = {"config": cfg.name, "fields": cfg.to_dict(), "device": device, "seed": seed,
                  "fmax_mhz": float(fmax_mhz), "flow_version": FLOW_VERSION,
                  "tools": tool_versions()}
    _write_json(_index_path(), index)


@dataclass(frozen=True)
class Clock:
    """A configuration's clock: ``mhz``, and ``source`` (``"avta fpga on ecp5-25k"`` or
    ``"timing model"``) with the modelled ``paths`` (ns)."""
    mhz: float
    source: str
    paths: dict

    def to_dict(self):
        return {"mhz": round(self.mhz, 3), "source": self.source,
                "paths_ns": {k: round(v, 3) for k, v in self.paths.items()}}


def measured_clock(cfg):
    """The best recorded ``avta fpga`` Fmax of exactly this design, placed by today's wrapper,
    flow and tools, as a :class:`Clock`, or None. A record is taken only under its
    :func:`record_key` as it is today (one that does not say its device and seed, or whose
    values are not a positive frequency, is ignored). Only a configuration with a record of its
    name or its fields is elaborated to find its design's hash, and the tools are asked their
    versions only when a record of that design exists, so a configuration never placed costs
    neither."""
    index = _read_json(_index_path())
    fields = cfg.to_dict()
    if not any(isinstance(e, dict) and (e.get("config") == cfg.name or e.get("fields") == fields)
               for e in index.values()):
        return None
    prefix = placed_fingerprint(cfg) + "/"
    found = []
    for key, entry in index.items():
        if not (key.startswith(prefix) and isinstance(entry, dict)):
            continue
        device, seed, mhz = entry.get("device"), entry.get("seed"), entry.get("fmax_mhz")
        if not (isinstance(device, str) and isinstance(seed, int) and not isinstance(seed, bool)
                and isinstance(mhz, (int, float)) and math.isfinite(mhz) and mhz > 0):
            continue
        try:
            today = record_key(cfg, device, seed)
        except UserError:       # a device renamed since, or the tools uninstalled
            continue
        if key == today:
            found.append((mhz, device))
    if not found:
        return None
    mhz, device = max(found)
    return Clock(float(mhz), f"avta fpga on {device}", TimingModel().paths(cfg))


def clock_of(cfg, *, model=None, measured=True):
    """The :class:`Clock` of ``cfg``: measured when ``avta fpga`` has run it, else modelled."""
    clock = measured_clock(cfg) if measured else None
    if clock is not None:
        return clock
    model = model or TimingModel()
    return Clock(model.fmax_mhz(cfg), "timing model", model.paths(cfg))
