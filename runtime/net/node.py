"""The nodes of a network graph: the node kinds, a checked :class:`Node`, and the shape a node
writes.

Every tensor is int8 and shaped ``[N, C, H, W]``; a graph has named inputs, nodes (each reads
one or two tensors and writes one) and named outputs. The node kinds and their meaning are the
numpy references of :mod:`avta.runtime.ops.reference`:

* ``conv2d`` (1 input): weights int8 ``[O, C, KH, KW]``, bias int32 ``[O]`` (optional), stride,
  pad, pad_value (what the padding holds: 0 or −128), requant; writes ``[N, O, OH, OW]``;
* ``depthwise`` (1): weights int8 ``[C, 1, KH, KW]``, bias int32 ``[C]`` (optional), stride,
  pad, pad_value, requant; ``[N, C, OH, OW]``;
* ``dense`` (1): weights int8 ``[O, K]`` with ``K = C·H·W`` (the input flattened), bias int32
  ``[O]`` (optional), requant; ``[N, O, 1, 1]``;
* ``max_pool`` (1): k, stride, pad; ``[N, C, OH, OW]``;
* ``avg_pool`` (1): k, stride, pad, requant; ``[N, C, OH, OW]``;
* ``global_avg_pool`` (1): requant; ``[N, C, 1, 1]``;
* ``add`` (2 of one shape): shift_a, requant (the residual add of ``a << shift_a`` and ``b``; its
  ReLU is the clip); the inputs' shape.

``OH = (H + 2·pad − KH) // stride + 1`` (``k`` for pools). A node's requantization
(:class:`~avta.runtime.ops.requant.Requant`) is ``clip((acc >> shift) + bias, lo, hi)``, then the
low 8 bits; a ReLU is the clip ``(0, 127)`` of the node that produces the tensor, a linear output
clips to ``(-128, 127)``.

A :class:`Node` checks what needs no other node when it is made (kind, names, attributes,
dtypes and ranks); :func:`infer_shape` checks that it fits its inputs. A :class:`GraphError`
names the node and the rule it breaks.
"""

import re
import weakref
from dataclasses import dataclass, field

import numpy as np

from avta.errors import UserError

from ..ops.conv_plan import output_extent
from ..ops.requant import Requant

__all__ = ["GraphError", "OpSpec", "OPS", "ATTR_VALUES", "QUIET_ATTRS", "Node", "check_name",
           "infer_shape", "node_macs"]


class GraphError(UserError):
    """A network description that breaks a rule; the message names the node (or tensor) and
    the rule."""


@dataclass(frozen=True)
class OpSpec:
    """What a node kind takes: how many inputs, its attributes with their defaults (``None``:
    required), whether it has weights, an optional bias, and a requantization."""
    inputs: int
    attrs: dict = field(default_factory=dict)
    weights: bool = False
    bias: bool = False
    requant: bool = False


#: The node kinds (see the module's list).
OPS = {
    "conv2d": OpSpec(1, {"stride": 1, "pad": 0, "pad_value": 0}, weights=True, bias=True,
                     requant=True),
    "depthwise": OpSpec(1, {"stride": 1, "pad": 0, "pad_value": 0}, weights=True, bias=True,
                        requant=True),
    "dense": OpSpec(1, {}, weights=True, bias=True, requant=True),
    "max_pool": OpSpec(1, {"k": None, "stride": None, "pad": 0}),
    "avg_pool": OpSpec(1, {"k": None, "stride": None, "pad": 0}, requant=True),
    "global_avg_pool": OpSpec(1, {}, requant=True),
    "add": OpSpec(2, {"shift_a": 0, "scale_a": 0, "scale_b": 0, "scale_a2": 0, "scale_b2": 0},
                  requant=True),
}

#: Attributes whose values are not ``>= 1``: their allowed values. ``pad_value`` is what a
#: convolution's padding holds (0, or −128 for an input whose zero point is −128);
#: ``shift_a`` is a left shift of an add's first input (inputs at scales 2^k apart);
#: ``scale_a`` and ``scale_b`` are integer multipliers of its inputs (0: none; with ALU SCL),
#: ``scale_a2`` and ``scale_b2`` second Q15 factors after them (⌊x · m · m2 / 2^15⌋; 0: none).
ATTR_VALUES = {"pad_value": (0, -128), "shift_a": range(0, 24), "scale_a": range(0, 1 << 15),
               "scale_b": range(0, 1 << 15), "scale_a2": range(0, 1 << 15),
               "scale_b2": range(0, 1 << 15)}
#: Attributes that came later: a node's ``attrs`` holds them only when they differ from the
#: default, so older files, and the writer's output for older networks, stay as they were.
QUIET_ATTRS = ("pad_value", "shift_a", "scale_a", "scale_b", "scale_a2", "scale_b2")

#: Names of nodes and tensors: they become keys of the weights file, so no spaces or slashes.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+-]*\Z")


def check_name(name, what):
    if not isinstance(name, str) or not _NAME.match(name):
        raise GraphError(f"{what} name {name!r} is not allowed: use letters, digits and "
                         f"'_', '.', ':', '+', '-' (no spaces or slashes)")


@dataclass(frozen=True, eq=False)
class Node:
    """One operator: ``op`` (a key of :data:`OPS`) reads the tensors ``inputs`` and writes
    ``output`` (by default the node's name).

    ``attrs`` holds the kind's attributes (stride, pad, k), completed with their defaults;
    ``weights`` and ``bias`` are numpy arrays (int8 and int32) or ``None``; ``requant`` is the
    node's :class:`Requant` (``Requant()`` when the kind has one and none is given, ``None``
    when it has none). The constructor checks what needs no other node (kind, names, attributes,
    dtypes and ranks); :class:`Graph` checks the rest."""
    name: str
    op: str
    inputs: tuple
    output: str = None
    attrs: dict = field(default_factory=dict)
    weights: np.ndarray = None
    bias: np.ndarray = None
    requant: Requant = None

    def __post_init__(self):
        check_name(self.name, "node")
        where = f"node {self.name!r}"
        spec = OPS.get(self.op)
        if spec is None:
            raise GraphError(f"{where}: unknown op {self.op!r}; the ops are {', '.join(OPS)}")
        where = f"{self.op} node {self.name!r}"
        inputs = (self.inputs,) if isinstance(self.inputs, str) else tuple(self.inputs)
        if len(inputs) != spec.inputs:
            raise GraphError(f"{where} has {len(inputs)} input(s) {list(inputs)}; {self.op} "
                             f"takes {spec.inputs}")
        for name in inputs:
            check_name(name, f"{where}: input tensor")
        object.__setattr__(self, "inputs", inputs)
        output = self.name if self.output is None else self.output
        check_name(output, f"{where}: output tensor")
        object.__setattr__(self, "output", output)

        attrs = dict(self.attrs or {})
        unknown = sorted(set(attrs) - set(spec.attrs))
        if unknown:
            raise GraphError(f"{where}: unknown attribute(s) {unknown}; {self.op} takes "
                             f"{sorted(spec.attrs) or 'none'}")
        for key, default in spec.attrs.items():
            if key not in attrs:
                if default is None and not (key == "stride" and "k" in attrs):
                    raise GraphError(f"{where}: attribute {key!r} is missing")
                attrs[key] = attrs["k"] if default is None else default
            value = attrs[key]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise GraphError(f"{where}: attribute {key}={value!r} must be an integer")
            attrs[key] = int(value)
            allowed = ATTR_VALUES.get(key)
            if allowed is not None:
                if attrs[key] not in allowed:
                    raise GraphError(f"{where}: attribute {key}={value} must be one of "
                                     f"{_describe(allowed)}")
                continue
            low = 0 if key == "pad" else 1
            if attrs[key] < low:
                raise GraphError(f"{where}: attribute {key}={value} must be >= {low}")
        for key in QUIET_ATTRS:             # at their defaults they are not there at all
            if key in attrs and attrs[key] == spec.attrs[key]:
                del attrs[key]
        for second, first in (("scale_a2", "scale_a"), ("scale_b2", "scale_b")):
            if attrs.get(second) and not attrs.get(first):
                raise GraphError(f"{where}: attribute {second}={attrs[second]} is a second "
                                 f"factor after {first}, which is 0")
        if "k" in attrs and attrs["pad"] > attrs["k"] // 2:
            raise GraphError(f"{where}: pad {attrs['pad']} is more than half the window "
                             f"k={attrs['k']}; a window could lie in the padding only")
        object.__setattr__(self, "attrs", attrs)

        self._check_array("weights", spec.weights, np.int8,
                          2 if self.op == "dense" else 4, required=True)
        self._check_array("bias", spec.bias, np.int32, 1, required=False)
        if spec.requant:
            requant = Requant() if self.requant is None else self.requant
            if not isinstance(requant, Requant):
                raise GraphError(f"{where}: requant must be a Requant, not {requant!r}")
            object.__setattr__(self, "requant", requant)
        elif self.requant is not None:
            raise GraphError(f"{where}: {self.op} has no requantization (it only moves int8 "
                             f"values), but requant {self.requant} is given")

    def _check_array(self, what, allowed, dtype, ndim, *, required):
        where = f"{self.op} node {self.name!r}"
        value = getattr(self, what)
        if not allowed:
            if value is not None:
                raise GraphError(f"{where}: {self.op} takes no {what}")
            return
        if value is None:
            if required:
                raise GraphError(f"{where}: its {what} are missing ({self.op} needs {what})")
            return
        value = np.asarray(value)
        if value.dtype != dtype:
            raise GraphError(f"{where}: {what} are {value.dtype}; they must be "
                             f"{np.dtype(dtype).name}")
        if value.ndim != ndim:
            raise GraphError(f"{where}: {what} have shape {list(value.shape)}; {self.op} "
                             f"{what} have {ndim} dimensions")
        if _frozen.get(id(value)) is not value:
            # The node keeps its own read-only copy, so no caller's array can change it; an
            # array a node already holds is shared (Node.replace, a graph's copies).
            value = value.copy()
            value.setflags(write=False)
            _frozen[id(value)] = value
        object.__setattr__(self, what, value)

    @property
    def spec(self):
        return OPS[self.op]

    def replace(self, **changes):
        """A copy of the node with some fields changed (checked again)."""
        fields = dict(name=self.name, op=self.op, inputs=self.inputs, output=self.output,
                      attrs=self.attrs, weights=self.weights, bias=self.bias,
                      requant=self.requant)
        fields.update(changes)
        return Node(**fields)

    def __eq__(self, other):
        if not isinstance(other, Node):
            return NotImplemented
        return (self.name, self.op, self.inputs, self.output, self.attrs, self.requant) == \
            (other.name, other.op, other.inputs, other.output, other.attrs, other.requant) \
            and _same_array(self.weights, other.weights) and _same_array(self.bias, other.bias)

    __hash__ = None

    def __repr__(self):
        extra = "".join(f", {k}={v}" for k, v in self.attrs.items())
        if self.weights is not None:
            extra += f", weights={list(self.weights.shape)}"
        if self.bias is not None:
            extra += f", bias={list(self.bias.shape)}"
        if self.requant is not None:
            extra += f", requant={self.requant}"
        return f"Node({self.name!r}, {self.op}, {list(self.inputs)} -> {self.output!r}{extra})"


def _describe(allowed):
    if isinstance(allowed, range):
        return f"{allowed.start}..{allowed.stop - 1}"
    return ", ".join(map(str, allowed))


def _window_output(h, w, kh, kw, attrs):
    """Output height and width of a ``kh × kw`` window over ``h × w`` with the node's padding
    and stride."""
    return (output_extent(h, kh, attrs["pad"], attrs["stride"]),
            output_extent(w, kw, attrs["pad"], attrs["stride"]))


#: The arrays nodes copied and froze, by ``id``: never written again, so shared, not copied.
_frozen = weakref.WeakValueDictionary()


def _same_array(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def infer_shape(node, shapes):
    """The output shape of ``node`` given its inputs' shapes (a list of 4-tuples); a
    :class:`GraphError` naming the node and the rule when they do not fit."""
    where = f"{node.op} node {node.name!r}"
    (n, c, h, w), a = shapes[0], node.attrs
    op = node.op
    if op == "conv2d":
        o, wc, kh, kw = node.weights.shape
        if wc != c:
            raise GraphError(f"{where}: weights [O, C, KH, KW] = {list(node.weights.shape)} have "
                             f"C={wc} but input {node.inputs[0]!r} has C={c}; they must be equal")
        out = (n, o, *_window_output(h, w, kh, kw, a))
    elif op == "depthwise":
        wc, one, kh, kw = node.weights.shape
        if wc != c or one != 1:
            raise GraphError(f"{where}: weights [C, 1, KH, KW] = {list(node.weights.shape)} do "
                             f"not fit input {node.inputs[0]!r} with C={c}; they must be "
                             f"[{c}, 1, KH, KW]")
        out = (n, c, *_window_output(h, w, kh, kw, a))
    elif op == "dense":
        o, k = node.weights.shape
        if k != c * h * w:
            raise GraphError(f"{where}: weights [O, K] = {list(node.weights.shape)} have K={k} "
                             f"but input {node.inputs[0]!r} {list(shapes[0])} flattens to "
                             f"K=C*H*W={c * h * w}; they must be equal")
        out = (n, o, 1, 1)
    elif op in ("max_pool", "avg_pool"):
        out = (n, c, *_window_output(h, w, a["k"], a["k"], a))
    elif op == "global_avg_pool":
        out = (n, c, 1, 1)
    elif op == "add":
        if shapes[0] != shapes[1]:
            raise GraphError(f"{where}: inputs {node.inputs[0]!r} {list(shapes[0])} and "
                             f"{node.inputs[1]!r} {list(shapes[1])} differ; add needs one shape")
        out = tuple(shapes[0])
    else:                                                    # pragma: no cover (Node checks)
        raise GraphError(f"{where}: unknown op")
    if out[2] < 1 or out[3] < 1:
        raise GraphError(f"{where}: input {node.inputs[0]!r} {list(shapes[0])} is too small; "
                         f"the output would be {out[2]}x{out[3]}")
    if node.bias is not None and node.bias.shape != (out[1],):
        raise GraphError(f"{where}: bias has shape {list(node.bias.shape)}; it must be "
                         f"[{out[1]}] (one per output channel)")
    return out


def node_macs(node, shapes):
    """Multiply-accumulates of ``node`` given its inputs' shapes: ``N·O·OH·OW·C·KH·KW`` for
    conv2d, ``N·C·OH·OW·KH·KW`` for depthwise, ``N·O·K`` for dense; pools and adds multiply
    nothing (0)."""
    out = infer_shape(node, shapes)
    if node.op == "conv2d" or node.op == "depthwise":
        return int(np.prod(out)) * int(np.prod(node.weights.shape[1:]))
    if node.op == "dense":
        return out[0] * int(np.prod(node.weights.shape))
    return 0
