"""Per-layer shifts that keep activations in range, and a report of how activations spread.

:func:`calibrate` walks a graph in topological order on a calibration input: for each node with
a requantization it looks at the exact accumulators (:func:`~avta.runtime.net.reference.
accumulate`) and picks the smallest shift that brings the given percentile (99.9 % by default)
of what the clip limits — the output's magnitude, or for a ReLU (``lo >= 0``) its upper tail —
within the clip's upper bound. With the bias added after the shift this puts the percentile in
about the top octave of the range (64–127 for an int8 clip), so a layer neither saturates (about
0.1 % at the bound) nor collapses to zeros; the next node is then calibrated on this node's
requantized output.

:func:`activation_spread` reports, per node, the fraction of outputs at each clip bound, the
fraction of zeros and the standard deviation; :func:`unhealthy` lists the nodes outside given
thresholds.
"""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..ops.requant import SHIFT_MAX
from .reference import _feeds, accumulate, requantize

__all__ = ["choose_shift", "calibrate", "Spread", "activation_spread", "unhealthy",
           "spread_table"]

#: The lowest shift calibration picks (a left shift by 8 multiplies by 256).
CAL_SHIFT_MIN = -8
#: The int8 range, the bounds of a node without a clip.
INT8 = (-128, 127)


def _shifted(acc, shift):
    return acc >> shift if shift >= 0 else acc << -shift


def choose_shift(acc, bias=None, clip=None, percentile=99.9):
    """The smallest shift ``s`` (``CAL_SHIFT_MIN..31``) for which the ``percentile`` of
    ``(acc >> s) + bias`` — of its magnitude, or of the values themselves when the clip's lower
    bound is ``>= 0`` (a ReLU: negative values are meant to become 0) — is at most the clip's
    upper bound (127 without a clip); 0 when that percentile of ``acc`` is 0. ``acc``: int64
    accumulators; ``bias`` broadcastable."""
    lo, hi = INT8 if clip is None else clip
    acc = np.asarray(acc, dtype=np.int64)
    bias = 0 if bias is None else np.asarray(bias, dtype=np.int64)

    def level(shift):
        out = _shifted(acc, shift) + bias
        return float(np.percentile(out if lo >= 0 else np.abs(out), percentile))

    top = float(np.percentile(np.abs(acc), percentile))
    if top == 0:                          # (nearly) all zeros: no shift helps, keep none
        return 0
    guess = math.ceil(math.log2((top + 1) / (hi + 1)))
    shift = min(max(guess, CAL_SHIFT_MIN), SHIFT_MAX)
    while shift > CAL_SHIFT_MIN and level(shift - 1) <= hi:
        shift -= 1
    while shift < SHIFT_MAX and level(shift) > hi:
        shift += 1
    return shift


def _last_uses(graph):
    last = {}
    for i, node in enumerate(graph.nodes):
        for tensor in node.inputs:
            last[tensor] = i
    return last


def _walk(graph, x, visit):
    """Run ``graph`` on ``x``, node by node: ``visit(node, inputs, acc)`` returns the node to use
    (possibly a recalibrated copy) and the node's output is its requantized accumulators.
    Tensors are dropped after their last use."""
    values, last = _feeds(graph, x), _last_uses(graph)
    for i, node in enumerate(graph.nodes):
        inputs = [values[t] for t in node.inputs]
        acc = accumulate(node, inputs)
        node = visit(node, inputs, acc)
        values[node.output] = requantize(node, acc)
        for tensor in set(node.inputs):
            if last[tensor] == i:
                del values[tensor]


def calibrate(graph, x, *, percentile=99.9, only=None):
    """A copy of ``graph`` whose nodes with a requantization (or those named in ``only``) have
    the shift :func:`choose_shift` picks on the calibration input ``x`` (as for
    :func:`~avta.runtime.net.reference.run_reference`); clips and biases are kept."""
    chosen = {}

    def visit(node, inputs, acc):
        if node.requant is None or (only is not None and node.name not in only):
            return node
        bias = None if node.bias is None else node.bias.reshape(1, -1, 1, 1)
        shift = choose_shift(acc, bias, node.requant.clip, percentile)
        chosen[node.name] = node.replace(requant=dataclasses.replace(node.requant, shift=shift))
        return chosen[node.name]

    _walk(graph, x, visit)
    return graph.replace_nodes(chosen)


@dataclass(frozen=True)
class Spread:
    """How one node's int8 output spreads: ``bounds`` are its clip (the int8 range without
    one), ``at_low``/``at_high`` the fractions of outputs equal to each bound, ``zeros`` the
    fraction of zeros (for a ReLU, ``at_low`` is the same), ``std`` and ``mean`` of the values,
    ``shift`` the node's shift (``None`` without requantization)."""
    node: str
    op: str
    shape: tuple
    bounds: tuple
    at_low: float
    at_high: float
    zeros: float
    std: float
    mean: float
    shift: int = None

    @property
    def relu(self):
        return self.bounds[0] >= 0

    @property
    def saturated(self):
        """Outputs pinned at a bound that is not the ReLU's zero."""
        return self.at_high + (0.0 if self.relu else self.at_low)


def activation_spread(graph, x):
    """One :class:`Spread` per node, in topological order, for the input ``x``."""
    spreads = []

    def visit(node, inputs, acc):
        out = requantize(node, acc).astype(np.int64)
        lo, hi = INT8 if node.requant is None or node.requant.clip is None \
            else node.requant.clip
        spreads.append(Spread(node.name, node.op, out.shape, (lo, hi),
                              float(np.mean(out == lo)), float(np.mean(out == hi)),
                              float(np.mean(out == 0)), float(out.std()), float(out.mean()),
                              None if node.requant is None else node.requant.shift))
        return node

    _walk(graph, x, visit)
    return spreads


def unhealthy(spreads, *, max_saturated=0.01, max_zeros=0.8, min_std=4.0):
    """The spreads (with a reason each) of nodes whose outputs saturate (more than
    ``max_saturated`` at a bound other than a ReLU's 0), collapse (more than ``max_zeros``
    zeros) or barely vary (std below ``min_std``): ``[(Spread, reason), …]``."""
    bad = []
    for s in spreads:
        if s.saturated > max_saturated:
            bad.append((s, f"{s.saturated:.1%} saturated"))
        if s.zeros > max_zeros:
            bad.append((s, f"{s.zeros:.1%} zeros"))
        if s.std < min_std:
            bad.append((s, f"std {s.std:.2f}"))
    return bad


def spread_table(spreads):
    """A text table of :func:`activation_spread`'s result."""
    lines = [f"{'node':<28} {'op':<16} {'shift':>5} {'low':>7} {'high':>7} {'zeros':>7} "
             f"{'std':>6} {'mean':>7}"]
    for s in spreads:
        shift = "" if s.shift is None else s.shift
        lines.append(f"{s.node:<28} {s.op:<16} {shift:>5} {s.at_low:>7.2%} {s.at_high:>7.2%} "
                     f"{s.zeros:>7.2%} {s.std:>6.1f} {s.mean:>7.1f}")
    return "\n".join(lines)

