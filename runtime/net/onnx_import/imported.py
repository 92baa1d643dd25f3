"""What an import returns: the network and each requantizing layer's scale, with the table
``avta import`` prints of them."""

import math
from dataclasses import dataclass, field

#: The largest error the nearest power of two makes of one multiplier: 2^±0.5, about ±41 %.
#: Per-channel weights (one shift for every channel) and an add (two inputs' scales) can err
#: beyond it; the report says which layers do.
POWER_OF_TWO_BOUND = math.sqrt(2.0) - 1.0


@dataclass
class Imported:
    """An imported model: the :class:`~avta.runtime.net.graph.Graph` and each requantizing
    layer's :class:`~avta.runtime.net.onnx_import.arithmetic.Scale`."""
    graph: object
    scales: list = field(default_factory=list)

    def report(self):
        """A text table of the layers' scales: the real multiplier, the shift, the error."""
        lines = [f"{'layer':<28} {'op':<16} {'multiplier':>12} {'shift':>5} {'fixed':>6} "
                 f"{'error':>10}  where"]
        for s in self.scales:
            where = "host" if s.on_host else "device"
            fixed = "" if s.fixed is None else \
                f"×{len(s.fixed)}" if isinstance(s.fixed, tuple) else s.fixed
            lines.append(f"{s.node:<28} {s.op:<16} {s.multiplier:>12.6g} {s.shift:>5} "
                         f"{fixed:>6} {error_text(s.error, s.fixed is not None):>10}  {where}")
        worst = max((abs(s.error) for s in self.scales if not s.on_host), default=0.0)
        exact = sum(s.exact for s in self.scales)
        fixed = sum(s.fixed is not None for s in self.scales)
        lines.append(f"{exact} of {len(self.scales)} requantizations are powers of two, {fixed} "
                     f"fixed-point (SCL); the largest scale error on the device is "
                     f"{error_text(worst, fixed > 0).lstrip('+')}")
        beyond = self.beyond_bound()
        if beyond:
            lines.append(f"warning: {len(beyond)} layer(s) err beyond ±41 % on the device "
                         f"({', '.join(s.node for s in beyond[:4])}"
                         f"{', …' if len(beyond) > 4 else ''}: per-channel weights or an add "
                         f"of differently scaled inputs); their outputs can be far from "
                         f"onnxruntime's. Import with --fixed-point (a configuration with "
                         f"ALU_SCALE: 1) or --host-requant for exact scales (docs/onnx.md)")
        return "\n".join(lines)

    def beyond_bound(self):
        """The device layers whose power-of-two scale errs beyond :data:`POWER_OF_TWO_BOUND`."""
        return [s for s in self.scales if not s.on_host and s.fixed is None
                and abs(s.error) > POWER_OF_TWO_BOUND + 1e-12]


def error_text(error, ppm=False):
    """A relative error as a percentage, or in parts per million when under 0.01 % (or
    ``ppm``, a fixed-point multiplier's)."""
    if (error != 0.0 or ppm) and abs(error) < 1e-4:
        return f"{error * 1e6:+.1f} ppm"
    return f"{error:+.2%}"
