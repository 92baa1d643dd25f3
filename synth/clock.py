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
* ``control``: the memory engine and the load stage (the registered read beat through a row
  writer's lane arithmetic into the pad walker's address, docs/architecture.md, timing on an
  FPGA): ``control_ns + control_ns_per_addr_bit · address bits of the deepest scratchpad``.

:data:`LANE_POINTS` and :data:`DESIGN_POINTS` are the placed points the coefficients are fitted
to (:func:`fit`; the defaults of :class:`TimingModel` are that fit, and a test checks it);
:data:`LANE_HELD_OUT` and :data:`DESIGN_HELD_OUT` are points the fit never sees
(:func:`errors`, docs/cli.md). All figures are nextpnr-ecp5's, seed 1, on the ECP5.
"""

import functools
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from avta.isa.memories import scratchpads
from avta.files import cache_root

__all__ = ["TimingModel", "LANE_POINTS", "LANE_HELD_OUT", "DESIGN_POINTS", "DESIGN_HELD_OUT",
           "fit", "errors", "Clock", "clock_of", "measured_clock", "record_measured",
           "design_fingerprint"]

#: (BLOCK_IN, MHz): ``avta bench gemm-fmax`` on the ECP5-85k, derived pipeline stages.
LANE_POINTS = ((4, 138.3), (16, 127.3), (64, 116.2))
#: Lanes the fit does not see (``python -m avta.sim.bench.gemm_fmax --block-in 8 32
#: --stages derived``).
LANE_HELD_OUT = ((8, 133.1), (32, 121.7))
#: (configuration, device, MHz): whole designs by ``avta fpga --config C --device D``, placed
#: before fetch's dispatch register and the ALU's forwarding before its operand register
#: (docs/architecture.md, timing on an FPGA). With them tiny is 60.0 MHz on the ECP5-85k and
#: 56.8 on the 25k, ``fpga`` 50.4 on the 85k: tiny's two placements lie 5.6 % apart, more than
#: the model's held-out bound, so the fit keeps these points (docs/cli.md, clock).
DESIGN_POINTS = (("tiny", "ecp5-85k", 55.1), ("fpga", "ecp5-85k", 50.6))
#: Whole designs the fit does not see: tiny placed on another device.
DESIGN_HELD_OUT = (("tiny", "ecp5-25k", 56.0),)


def address_bits(cfg):
    """Bits of a row address of the deepest scratchpad."""
    return max(pad.log_depth for pad in scratchpads(cfg).values())


@dataclass(frozen=True)
class TimingModel:
    """Path delays (ns) of the module docstring; the defaults are :func:`fit` of the points."""
    lane_ns: float = 6.522
    lane_ns_per_log2: float = 0.344
    control_ns: float = 14.921
    control_ns_per_addr_bit: float = 0.404

    def paths(self, cfg):
        """``{path: ns}`` of ``cfg``'s two modelled paths."""
        return {"gemm": self.lane_ns + self.lane_ns_per_log2 * math.log2(cfg.block_in),
                "control": self.control_ns + self.control_ns_per_addr_bit * address_bits(cfg)}

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
    log2(BLOCK_IN), then the control path's against the address bits (each whole design's
    period is its control path: its lane is faster by far)."""
    from avta.isa.config import load_config
    lane = _line([math.log2(b) for b, _ in lane_points], [1e3 / mhz for _, mhz in lane_points])
    control = _line([address_bits(load_config(c)) for c, _, _ in design_points],
                    [1e3 / mhz for _, _, mhz in design_points])
    return TimingModel(*(round(v, 3) for v in (*lane, *control)))


def errors(model=None):
    """Rows ``{point, role, measured, model, error}`` of every point, lane and whole design."""
    from avta.isa.config import load_config
    model = model or TimingModel()
    rows = []
    for role, points in (("calibrated", LANE_POINTS), ("held-out", LANE_HELD_OUT)):
        for block_in, mhz in points:
            ns = model.lane_ns + model.lane_ns_per_log2 * math.log2(block_in)
            rows.append({"point": f"GEMM lane, BLOCK_IN {block_in}", "role": role,
                         "measured": mhz, "model": 1e3 / ns, "error": 1e3 / ns / mhz - 1})
    for role, points in (("calibrated", DESIGN_POINTS), ("held-out", DESIGN_HELD_OUT)):
        for config, device, mhz in points:
            predicted = model.fmax_mhz(load_config(config))
            rows.append({"point": f"{config} on {device}", "role": role, "measured": mhz,
                         "model": predicted, "error": predicted / mhz - 1})
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
