"""Calibrating the floorplan's logic-area model against synthesis.

:data:`CALIBRATION` configurations are synthesized (:func:`~.yosys.synthesize`, cached) and
the coefficients of :class:`avta.floorplan.vta.LogicModel` fitted per block (gemm, alu, ctrl)
by least squares on *relative* error, so a small configuration weighs as much as a large one.
:data:`HELD_OUT` configurations are not used by the fit; the error table reports the model's
error on both. ``avta area --calibrate`` runs it (docs/cli.md).
"""

from dataclasses import dataclass

import numpy as np

from avta.floorplan.vta import LOGIC_TERMS, LogicModel
from avta.floorplan.vta.logic import quantities
from avta.isa.config import Config, load_config

from .report import BLOCKS, synth_report
from .yosys import synthesize

__all__ = ["CALIBRATION", "HELD_OUT", "point_config", "fit", "calibrate", "Calibration"]

#: (name, base configuration, keys changed): the points the model is fitted to. They vary the
#: GEMM shape (MACs and output lanes apart) and the AXI width, on tiny's small scratchpads.
CALIBRATION = (
    ("tiny", "tiny", {}),
    ("cal_1x8x8_axi128", "tiny", {"LOG_BLOCK_IN": 3, "LOG_BLOCK_OUT": 3, "AXI_DATA_BITS": 128}),
    ("cal_1x4x16_axi64", "tiny", {"LOG_BLOCK_IN": 2, "LOG_BLOCK_OUT": 4}),
    ("default", "default", {}),
)
#: Points the fit never sees: batch 2 with a 256-bit bus, a combination no calibration point
#: has, and the shipped ``wide`` (1x32x32, 256-bit bus: four times default's MACs; its
#: synthesis takes about 25 minutes on two cores, once).
HELD_OUT = (
    ("held_2x8x8_axi256", "tiny", {"LOG_BATCH": 1, "LOG_BLOCK_IN": 3, "LOG_BLOCK_OUT": 3,
                                   "AXI_DATA_BITS": 256}),
    ("wide", "wide", {}),
)


def point_config(name, base, changes):
    """The configuration of one calibration point."""
    return Config.from_dict(load_config(base).to_dict() | changes, name=name)


def fit(samples):
    """A :class:`LogicModel` fitted to ``samples``, a list of ``(cfg, {block: GE})``.

    Each block's coefficients minimise the sum of squared relative errors; a coefficient the
    least squares would make negative is dropped (set to 0) and the rest fitted again. A term
    whose quantity is 0 at every point (SCL's lanes when no point has ``ALU_SCALE`` 1 or 2) keeps
    the default model's coefficient.
    """
    values = {}
    for block in BLOCKS:
        terms = [(field, q) for field, q in LOGIC_TERMS[block]
                 if any(quantities(cfg)[q] for cfg, _ in samples)]
        for field, q in LOGIC_TERMS[block]:
            if (field, q) not in terms:
                values[field] = getattr(LogicModel(), field)
        while True:
            a = np.array([[quantities(cfg)[q] for _, q in terms] for cfg, _ in samples], float)
            y = np.array([ge[block] for _, ge in samples], float)
            coef, *_ = np.linalg.lstsq(a / y[:, None], np.ones(len(y)), rcond=None)
            if (coef >= 0).all() or len(terms) == 1:
                break
            terms.pop(int(np.argmin(coef)))
        for (field, _), c in zip(terms, coef):
            values[field] = max(0, int(round(c)))
        for field, _ in LOGIC_TERMS[block]:
            values.setdefault(field, 0)
    return LogicModel(**values)


@dataclass
class Calibration:
    """The fitted model and its error on every point."""
    model: LogicModel
    rows: list          # one per point and block: config, role, block, synth/model GE, error
    seconds: dict       # synthesis wall time per point (0 when cached)

    def table(self):
        out = [f"  {'config':<20}{'role':<11}{'shape':<8}{'AXI':>5}{'block':>7}{'synth GE':>11}"
               f"{'model GE':>11}{'error':>9}"]
        for r in self.rows:
            out.append(f"  {r['config']:<20}{r['role']:<11}{r['shape']:<8}{r['axi']:>5}"
                       f"{r['block']:>7}{r['synth_ge']:>11,.0f}{r['model_ge']:>11,.0f}"
                       f"{r['error']:>9.1%}")
        return out


def calibrate(technology, *, calibration=CALIBRATION, held_out=HELD_OUT, log=None):
    """Synthesize (or read from the cache) every point, fit, and measure the errors."""
    samples, seconds = {}, {}
    for role, points in (("calibrated", calibration), ("held-out", held_out)):
        for name, base, changes in points:
            cfg = point_config(name, base, changes)
            result = synthesize(cfg, technology, log=log)
            seconds[name] = 0.0 if result.cached else result.seconds
            report = synth_report(cfg, technology, result)
            samples[name] = (role, cfg, {b: report.blocks[b]["ge"] for b in BLOCKS})
    model = fit([(cfg, ge) for role, cfg, ge in samples.values() if role == "calibrated"])
    rows = []
    for name, (role, cfg, ge) in samples.items():
        for block in (*BLOCKS, "total"):
            synth = sum(ge.values()) if block == "total" else ge[block]
            predicted = sum(model.block(cfg, b) for b in BLOCKS) if block == "total" \
                else model.block(cfg, block)
            rows.append({"config": name, "role": role, "shape": cfg.shape_name.split()[0],
                         "axi": cfg.axi_data_bits, "block": block, "synth_ge": synth,
                         "model_ge": predicted, "error": predicted / synth - 1})
    return Calibration(model, rows, seconds)
