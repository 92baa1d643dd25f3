"""The QDQ form: float operators between DequantizeLinear and QuantizeLinear, as
``onnxruntime.quantization.quantize_static`` writes them by default (docs/onnx.md).

A float operator (Conv, Gemm, MatMul, Add, a pool) is held as :class:`Pending` until the
QuantizeLinear of its output gives the output's scale and zero point; a Relu or Clip between
is fused into it; then :mod:`.lowering` emits its network node. :class:`QdqForm` owns
``deq`` (float tensor name → the :class:`~.reading.QT` it dequantizes), ``deq_const`` (float
tensor name → ``(ints, scale, zero point, axis)`` of a dequantized constant: weights and
biases) and ``pending`` (float tensor name → :class:`Pending`).

:data:`HANDLERS` maps each op type this form reads to its handler ``(importer, node)``; the
shape-only ops (Flatten, Reshape, Identity), Constant and MaxPool of int8 serve the operator
form too.
"""

from dataclasses import dataclass

import numpy as np

from .arithmetic import UnsupportedNode
from .reading import QT, node_attrs, tensor_value


@dataclass
class Pending:
    """A float operator whose output waits for its QuantizeLinear, with the activation
    (``("relu",)`` or ``("clip", lo, hi)``) fused into it, if any."""
    node: object
    activation: tuple = None


class QdqForm:
    """The importer's handlers of the QDQ form (a mixin of :class:`~.walk.Importer`)."""

    def _start_qdq(self):
        self.deq, self.deq_const, self.pending = {}, {}, {}

    def _constant(self, node):
        value = node_attrs(self.onnx, node).get("value")
        if value is None:
            raise UnsupportedNode("only Constant nodes with a tensor value are supported")
        self.consts[node.output[0]] = tensor_value(self.onnx, value)

    def _dequantize_linear(self, node):
        x, s, z = (list(node.input) + [""])[:3]
        out = node.output[0]
        if x in self.consts:
            scale = np.asarray(self._const(s, "scale"), np.float64)
            ints = np.asarray(self.consts[x])
            zero = np.asarray(self.consts[z]) if z else np.zeros((), ints.dtype)
            self.deq_const[out] = (ints, scale, zero, node_attrs(self.onnx, node).get("axis", 1))
            return
        if x not in self.q:
            raise UnsupportedNode(f"it dequantizes {x!r}, which is neither a constant nor an "
                                  f"imported int8 tensor")
        qt = self.q[x]
        scale, zero = float(self._scalar(s, "scale")), self._zero(z, x)
        if qt.scale is None:                    # an int8/uint8 graph input meets its scale
            qt.scale, qt.zero = scale, zero
        elif not (np.isclose(qt.scale, scale, rtol=1e-6) and qt.zero == zero):
            raise UnsupportedNode(f"it dequantizes {x!r} with scale {scale} and zero point "
                                  f"{zero}, but that tensor was quantized with {qt.scale} and "
                                  f"{qt.zero}")
        self.deq[out] = qt

    def _quantize_linear(self, node):
        x, s, z = (list(node.input) + [""])[:3]
        out = node.output[0]
        scale, zero = float(self._scalar(s, "scale")), self._zero(z, out)
        if x in self.float_inputs:
            tensor = self._name(x)
            self.lazy[tensor] = (x, self.float_inputs[x], "float32")
            self.q[out] = QT(tensor, self.float_inputs[x], scale, zero)
        elif x in self.pending:
            pending = self.pending.pop(x)
            try:
                self.q[out] = self._emit(pending, scale, zero)
            except UnsupportedNode as error:
                error.node = pending.node       # blame the operator, not its QuantizeLinear
                raise
        elif x in self.deq and np.isclose(self.deq[x].scale, scale, rtol=1e-6) \
                and self.deq[x].zero == zero:
            self.q[out] = self.deq[x]
        elif x in self.deq:
            raise UnsupportedNode("it requantizes a tensor to another scale with no operator "
                                  "between (no network node does only that)")
        else:
            raise UnsupportedNode(f"it quantizes {x!r}, which is not a float model input nor "
                                  f"the output of an imported operator")

    def _float_op(self, node):
        for i in node.input:
            if i and i not in self.deq and i not in self.deq_const:
                raise UnsupportedNode(f"its input {i!r} is not dequantized from int8 (a float "
                                      f"operator between quantized ones)")
        self.pending[node.output[0]] = Pending(node)

    def _max_pool(self, node):
        x = node.input[0]
        if x in self.q:                         # operator form: a max pool of int8 values
            qt = self.q[x]
            self.q[node.output[0]] = self._pool(node, qt, qt.scale, qt.zero, None)
        else:
            self._float_op(node)

    def _activation(self, node):
        if node.op_type == "Relu":
            return ("relu",)
        attrs = node_attrs(self.onnx, node)
        lo, hi = attrs.get("min"), attrs.get("max")
        inputs = list(node.input) + ["", ""]
        if inputs[1]:
            lo = float(self._scalar(inputs[1], "min"))
        if inputs[2]:
            hi = float(self._scalar(inputs[2], "max"))
        return ("clip", lo, hi)

    def _fuse_activation(self, node):
        """Relu or Clip: fused into the pending operator before it."""
        x = node.input[0]
        if x not in self.pending or self.pending[x].activation is not None:
            raise UnsupportedNode(f"it is not fused: its input {x!r} is not the output of a "
                                  f"Conv, Gemm, MatMul, Add or pool awaiting quantization")
        pending = self.pending.pop(x)
        pending.activation = self._activation(node)
        self.pending[node.output[0]] = pending

    def _alias(self, node, shape_of):
        x = node.input[0]
        table = self.deq if x in self.deq else self.q if x in self.q else None
        if table is None:
            raise UnsupportedNode(f"its input {x!r} is not an imported int8 tensor")
        qt = table[x]
        shape = shape_of(qt.shape)
        if shape[0] != qt.shape[0] or int(np.prod(shape)) != int(np.prod(qt.shape)) \
                or len(shape) not in (2, 4) or (len(shape) == 4 and shape != qt.shape):
            raise UnsupportedNode(f"it reshapes {list(qt.shape)} to {list(shape)}; only "
                                  f"flattening to [N, C·H·W] maps onto the network")
        table[node.output[0]] = QT(qt.tensor, tuple(shape), qt.scale, qt.zero, qt.gain)

    def _flatten(self, node):
        axis = node_attrs(self.onnx, node).get("axis", 1)
        self._alias(node, lambda s: (int(np.prod(s[:axis])), int(np.prod(s[axis:]))))

    def _reshape(self, node):
        target = [int(v) for v in np.asarray(self._const(node.input[1], "shape")).reshape(-1)]

        def reshape(shape):
            out = [shape[i] if v == 0 else v for i, v in enumerate(target)]
            if -1 in out:
                rest = int(np.prod([v for v in out if v != -1]))
                out[out.index(-1)] = int(np.prod(shape)) // max(rest, 1)
            return tuple(out)
        self._alias(node, reshape)

    def _identity(self, node):
        x = node.input[0]
        if x in self.pending:
            self.pending[node.output[0]] = self.pending.pop(x)
        else:
            self._alias(node, lambda s: s)

    def _emit(self, pending, sy, zy):
        """The network node of a QDQ float operator whose output is quantized to (sy, zy)."""
        node = pending.node
        inputs = list(node.input)
        if node.op_type in ("Conv", "Gemm", "MatMul"):
            x = self.deq[inputs[0]]
            if inputs[1] not in self.deq_const:
                raise UnsupportedNode(f"its weights {inputs[1]!r} are not a dequantized "
                                      f"constant")
            ints, sw, zw, axis = self.deq_const[inputs[1]]
            bias = None
            if len(inputs) > 2 and inputs[2]:
                bias = self._bias(inputs[2], x.scale, sw)
            return self._conv_or_dense(node, x, ints, sw, zw, bias, sy, zy, pending.activation)
        if node.op_type == "Add":
            a, b = (self._tensor_input(node, i) for i in inputs[:2])
            return self._add(node, a, b, sy, zy, pending.activation)
        x = self.deq[inputs[0]]
        return self._pool(node, x, sy, zy, pending.activation)

    def _tensor_input(self, node, name):
        if name in self.deq:
            return self.deq[name]
        raise UnsupportedNode(f"its input {name!r} is a constant; the network's add takes two "
                              f"tensors")

    def _bias(self, name, sx, sw):
        """The bias as int32 in units of ``sx · sw`` (a quantized bias whose scale is that, as
        quantize_static writes it, or one rescaled to it)."""
        if name in self.deq_const:
            ints, sb, zb, _ = self.deq_const[name]
            real = (ints.astype(np.float64) - zb.astype(np.float64)) * sb
        else:
            real = np.asarray(self._const(name, "bias"), np.float64)
            sb, ints = None, None
        unit = np.float64(sx) * np.asarray(sw, np.float64)
        if sb is not None and np.allclose(sb, unit, rtol=1e-6, atol=0):
            return ints.astype(np.int64) - zb.astype(np.int64)
        return np.rint(real / unit).astype(np.int64)


#: op type → handler of the QDQ form, in the order the error message lists them (the float
#: operators sorted).
HANDLERS = {
    "QuantizeLinear": QdqForm._quantize_linear,
    "DequantizeLinear": QdqForm._dequantize_linear,
    **{op: QdqForm._float_op for op in ("Add", "AveragePool", "Conv", "Gemm",
                                        "GlobalAveragePool", "MatMul")},
    "MaxPool": QdqForm._max_pool,
    "Relu": QdqForm._fuse_activation,
    "Clip": QdqForm._fuse_activation,
    "Flatten": QdqForm._flatten,
    "Reshape": QdqForm._reshape,
    "Identity": QdqForm._identity,
    "Constant": QdqForm._constant,
}
