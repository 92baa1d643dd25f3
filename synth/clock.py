"""The clock of a configuration: measured by ``avta fpga`` where it has run, otherwise a timing
model of the critical paths calibrated on placed and routed points (like the logic-area model is
calibrated on synthesis, :mod:`.calibrate`).

**Measured.** ``avta fpga`` records each whole-design Fmax it reports in ``<avta cache>/fpga/
clocks.json`` (:func:`record_measured`), keyed by the configuration's every field, the
device, the seed and a hash of the RTL's and the ISA's source files, so a change of the design
retires the record. :func:`measured_clock` reads it back, the best Fmax over the devices.

**Modelled** (:class:`TimingModel`): the clock period is the longer of two register-to-register
paths, in ns,

* ``gemm``: one GEMM lane, its BLOCK_IN products, adder tree with the derived pipeline and
  accumulator (``avta bench gemm-fmax``): ``lane_ns + lane_ns_per_log2 · log2(BLOCK_IN)``;
* ``control``: the path that binds every whole design placed with this RTL, fetch's count of
  instructions fetched through its ring-space and instructions-left carry chains and the memory
  engine's reader to fetch's command address (docs/architecture.md, timing on an FPGA):
  ``control_ns``, one figure, since no scratchpad, GEMM or ALU is on it (``tiny`` and ``fpga``,
  their deepest scratchpads 8 and 12 address bits, lie 2.6 % apart, the faster the deeper).

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
from dataclasses import dataclass
from pathlib import Path

from avta.files import cache_root

__all__ = ["TimingModel", "LanePoint", "DesignPoint", "LANE_POINTS", "LANE_HELD_OUT",
           "DESIGN_POINTS", "DESIGN_HELD_OUT", "fit", "errors", "Clock", "clock_of",
           "measured_clock", "record_measured", "design_fingerprint"]


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
#: so the model errs towards a slower clock). Both points are of the RTL that registers the
#: compute loader's ACC write (commit 71412db; no change to hw/ or isa/ up to 9b26591).
DESIGN_POINTS = (DesignPoint("tiny", "ecp5-85k", 59.77, "71412db"),)
#: Whole designs the fit does not see.
DESIGN_HELD_OUT = (DesignPoint("fpga", "ecp5-85k", 61.35, "9b26591"),)


@dataclass(frozen=True)
class TimingModel:
    """Path delays (ns) of the module docstring; the defaults are :func:`fit` of the points."""
    lane_ns: float = 6.522
    lane_ns_per_log2: float = 0.344
    control_ns: float = 16.731

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
    """A hash of the RTL's and the ISA's source files (what the design is generated from)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for folder in ("hw", "isa"):
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def design_fingerprint(cfg):
    """What a measured clock depends on besides the device and seed: every configuration
    field and the sources the design is generated from."""
    text = json.dumps(cfg.to_dict(), sort_keys=True) + _sources_hash()
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _index_path():
    return cache_root() / "fpga" / "clocks.json"


def _read_index():
    path = _index_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_measured(cfg, device, seed, fmax_mhz):
    """Record ``avta fpga``'s Fmax of ``cfg`` on ``device`` (a name) with ``seed``."""
    if not (isinstance(fmax_mhz, (int, float)) and math.isfinite(fmax_mhz) and fmax_mhz > 0):
        return
    index = _read_index()
    index[f"{design_fingerprint(cfg)}/{device}/{seed}"] = {
        "config": cfg.name, "device": device, "seed": seed, "fmax_mhz": float(fmax_mhz)}
    path = _index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


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
    """The best recorded ``avta fpga`` Fmax of exactly this design, as a :class:`Clock`, or
    None. A record whose values are not a positive frequency is ignored."""
    prefix = design_fingerprint(cfg) + "/"
    found = []
    for key, entry in _read_index().items():
        if key.startswith(prefix) and isinstance(entry, dict):
            mhz = entry.get("fmax_mhz")
            if isinstance(mhz, (int, float)) and math.isfinite(mhz) and mhz > 0:
                found.append((mhz, entry.get("device", "?")))
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
