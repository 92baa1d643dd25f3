"""``avta import MODEL.onnx -o NET.yaml``: an int8-quantized ONNX model as a network
(docs/onnx.md).

Two forms of quantized model are read: QDQ (QuantizeLinear/DequantizeLinear around float
operators, what ``onnxruntime.quantization.quantize_static`` writes by default) and operator
form (QLinearConv, QLinearMatMul, QGemm, QLinearAdd, QLinearAveragePool,
QLinearGlobalAveragePool).
Conv (grouped and depthwise too), Gemm/MatMul, Add, Relu/Clip (fused into the node before),
MaxPool, AveragePool, GlobalAveragePool, Flatten/Reshape and Identity map onto the network
format; every other node is reported by name and op type (:class:`OnnxImportError`), never
dropped. The arithmetic of each operator is in :mod:`.onnx_lower`.

The graph's host steps (:mod:`.host_io`) make ``avta run`` take the model's own input (float32
for a QDQ model, quantized on the host) and write its own output (dequantized when the model
ends in DequantizeLinear). ``onnx`` is imported only here, when a model is imported: without
the optional extra ``pip install 'avta[onnx]'`` the command says so.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from avta.errors import UserError, check_output_file

from .graph import GraphBuilder, GraphError, Node
from .host_io import HostInput, HostOutput
from .onnx_lower import UnsupportedNode, add_like, conv_like, pool_like

__all__ = ["import_onnx", "Imported", "OnnxImportError", "cmd_import", "load_onnx"]

INSTALL_HINT = "pip install 'avta[onnx]'"
_OPERATOR_FORM = {"QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearAveragePool",
                  "QLinearGlobalAveragePool"}
_COMPUTE = {"Conv", "Gemm", "MatMul", "Add", "AveragePool", "GlobalAveragePool", "MaxPool"}
#: The ops the importer maps, as the error message lists them.
SUPPORTED = ", ".join(["QuantizeLinear", "DequantizeLinear", *sorted(_COMPUTE), "Relu", "Clip",
                       "Flatten", "Reshape", "Identity", "Constant", *sorted(_OPERATOR_FORM)])


class OnnxImportError(UserError):
    """A model that cannot be imported; ``unsupported`` lists ``(node name, op type, reason)``
    of every node that could not be mapped."""

    def __init__(self, message, unsupported=()):
        super().__init__(message)
        self.unsupported = list(unsupported)


def load_onnx():
    """The ``onnx`` module, or a :class:`UserError` that says how to install it."""
    try:
        import onnx
    except ImportError:
        raise UserError(f"importing ONNX models needs the onnx package: {INSTALL_HINT}") \
            from None
    return onnx


@dataclass
class _QT:
    """An int8 tensor on the device: its device tensor name, the model's shape of it, its scale
    in the model, its (device, int8) zero point, and ``gain``: the device's values minus the
    zero point are ``1/gain`` times the model's where a layer before approximated its scale
    (docs/onnx.md, "Scales"), so their real scale is ``scale · gain`` (:attr:`real`)."""
    tensor: str
    shape: tuple
    scale: float
    zero: int
    gain: float = 1.0

    @property
    def real(self):
        return self.scale * self.gain


@dataclass
class _Pending:
    """A float operator whose output waits for its QuantizeLinear (QDQ form)."""
    node: object
    activation: tuple = None


@dataclass
class Imported:
    """An imported model: the :class:`~avta.runtime.net.graph.Graph` and each requantizing
    layer's :class:`~avta.runtime.net.onnx_lower.Scale`."""
    graph: object
    scales: list = field(default_factory=list)

    def report(self):
        """A text table of the layers' scales: the real multiplier, the shift, the error."""
        lines = [f"{'layer':<28} {'op':<16} {'multiplier':>12} {'shift':>5} {'error':>8}  where"]
        for s in self.scales:
            where = "host" if s.on_host else "device"
            lines.append(f"{s.node:<28} {s.op:<16} {s.multiplier:>12.6g} {s.shift:>5} "
                         f"{s.error:>+8.2%}  {where}")
        worst = max((abs(s.error) for s in self.scales if not s.on_host), default=0.0)
        exact = sum(s.exact for s in self.scales)
        lines.append(f"{exact} of {len(self.scales)} requantizations are powers of two; the "
                     f"largest scale error on the device is {worst:.2%}")
        return "\n".join(lines)


def _np(onnx, tensor):
    return onnx.numpy_helper.to_array(tensor)


def _attrs(onnx, node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class _Importer:
    def __init__(self, onnx, model, batch, outputs, host_requant, name):
        self.onnx, self.model = onnx, model
        self.graph = model.graph
        self.batch = batch
        self.host_requant = host_requant
        self.builder = GraphBuilder(name)
        self.consts = {t.name: _np(onnx, t) for t in self.graph.initializer}
        self.q = {}             # int8 tensor name -> _QT
        self.deq = {}           # float tensor name -> _QT it dequantizes (QDQ)
        self.deq_const = {}     # float tensor name -> (ints, scale, zero point) of a constant
        self.pending = {}       # float tensor name -> _Pending
        self.float_inputs = {}  # float graph input name -> model shape
        self.scales, self.unsupported, self.failed = [], [], set()
        self.names = set()
        self.lazy = {}          # device input tensor -> (model name, shape, dtype)
        self.made = {}          # (device input tensor, host padding) -> its device tensor
        self.types = _integer_types(onnx, model)
        self.host_inputs, self.host_outputs = {}, {}
        self.wanted = list(outputs) if outputs else [o.name for o in self.graph.output]
        self._inputs()

    # -- names and shapes ----------------------------------------------------------------------

    def _name(self, text):
        """A network-format name for the ONNX name ``text`` (unique, no slashes)."""
        base = re.sub(r"[^A-Za-z0-9_.:+-]", "_", text or "node")
        if not re.match(r"[A-Za-z0-9_]", base):
            base = "_" + base
        name, i = base, 1
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def _model_shape(self, value_info):
        dims = value_info.type.tensor_type.shape.dim
        shape = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        if shape and shape[0] in (None, 0):
            shape[0] = self.batch or 1
        elif shape and self.batch is not None and shape[0] != self.batch:
            raise OnnxImportError(f"input {value_info.name!r} has the fixed batch {shape[0]}; "
                                  f"batch {self.batch} was asked for")
        if None in shape or len(shape) not in (2, 4):
            raise OnnxImportError(f"input {value_info.name!r} has shape {shape}; the importer "
                                  f"takes [N, C] or [N, C, H, W] with known sizes past the batch")
        return tuple(shape)

    def _inputs(self):
        onnx = self.onnx
        for value in self.graph.input:
            if value.name in self.consts:
                continue
            shape = self._model_shape(value)
            elem = value.type.tensor_type.elem_type
            if elem == onnx.TensorProto.FLOAT:
                self.float_inputs[value.name] = shape
            elif elem in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
                tensor = self._name(value.name)
                dtype = "int8" if elem == onnx.TensorProto.INT8 else "uint8"
                self.lazy[tensor] = (value.name, shape, dtype)
                self.q[value.name] = _QT(tensor, shape, None, None)
            else:
                raise OnnxImportError(f"input {value.name!r} is of ONNX type {elem}; the "
                                      f"importer takes float32, int8 or uint8 inputs")

    def _use(self, qt, pad=0):
        """``qt``'s device tensor, read by a node. A model input becomes a graph input at its
        first reader; the host pads it with its zero point when that reader is a convolution
        that pads it with another value than 0 or −128 (docs/onnx.md, "Arithmetic"). Readers
        that want it padded otherwise (or not at all) get another graph input, made by the
        host from the same model input."""
        if qt.tensor not in self.lazy:
            return qt.tensor
        if (qt.tensor, pad) in self.made:
            return self.made[qt.tensor, pad]
        name, shape, dtype = self.lazy[qt.tensor]
        first = not any(made == qt.tensor for made, _ in self.made)
        tensor = qt.tensor if first else self._name(f"{qt.tensor}_pad{pad}")
        n, c, h, w = shape + (1,) * (4 - len(shape))
        self.builder.input(tensor, (n, c, h + 2 * pad, w + 2 * pad))
        scale, zero = (qt.scale, qt.zero) if dtype == "float32" else (None, None)
        self.host_inputs[tensor] = HostInput(name, shape, dtype, scale, zero, pad=pad,
                                             pad_value=qt.zero if pad else 0)
        self.made[qt.tensor, pad] = tensor
        return tensor

    # -- constants -----------------------------------------------------------------------------

    def _const(self, name, what):
        if name not in self.consts:
            raise UnsupportedNode(f"its {what} {name!r} is not a constant")
        return self.consts[name]

    def _scalar(self, name, what):
        value = np.asarray(self._const(name, what))
        if value.size != 1:
            raise UnsupportedNode(f"its {what} {name!r} has {value.size} values; the importer "
                                  f"takes one per tensor here")
        return value.reshape(()).item()

    def _zero(self, name, tensor, default=np.uint8):
        """The zero point ``name`` of the integer ``tensor`` as the device's int8 (uint8 moved
        by −128). Without one it is 0 of ``tensor``'s type (ONNX's default; ``default`` when
        the model does not say the type). Types other than int8 and uint8 are refused: their
        values do not fit the device's int8."""
        if name:
            value = np.asarray(self._const(name, "zero point"))
            if value.size != 1:
                raise UnsupportedNode(f"its zero point {name!r} has {value.size} values; "
                                      f"activations take one per tensor")
        else:
            value = np.zeros((), self.types.get(tensor, default))
        if value.dtype not in (np.int8, np.uint8):
            raise UnsupportedNode(f"its tensor {tensor!r} is {value.dtype}; the device computes "
                                  f"int8 (and uint8, held as int8) activations only")
        return int(value.reshape(())) - (128 if value.dtype == np.uint8 else 0)

    def _out_zero(self, node, name):
        """The zero point ``name`` of an operator-form node's output; without one, 0 of the
        output's type, which is its input's where the model does not say."""
        return self._zero(name, node.output[0], self.types.get(node.input[0], np.uint8))

    @staticmethod
    def _device_ints(values):
        """Integer values as the device's int8 (uint8 moved by −128)."""
        values = np.asarray(values)
        if values.dtype == np.uint8:
            return values.astype(np.int16) - 128, 128
        return values.astype(np.int64), 0

    # -- the walk ------------------------------------------------------------------------------

    def run(self):
        producers = {o: n for n in self.graph.node for o in n.output}
        needed = self._needed(producers)
        for node in self.graph.node:
            if id(node) not in needed:
                continue
            if any(i in self.failed for i in node.input if i):
                self.failed.update(node.output)   # after an unsupported node: only its op
                if self._handler(node) is None:
                    self.unsupported.append((node.name, node.op_type, self._why(node)))
                continue
            try:
                self._node(node)
            except UnsupportedNode as error:
                blamed = getattr(error, "node", node)
                self.unsupported.append((blamed.name, blamed.op_type, error.reason))
                self.failed.update(node.output)
        outputs = [self._output(name) for name in self.wanted]
        if self.unsupported:
            lines = "\n".join(f"  {name or '(unnamed)'} ({op}): {why}"
                              for name, op, why in self.unsupported)
            raise OnnxImportError(f"{len(self.unsupported)} node(s) cannot be imported:\n"
                                  f"{lines}\nThe importer maps {SUPPORTED}; --outputs TENSOR "
                                  f"imports the part of the model that ends at TENSOR.",
                                  self.unsupported)
        try:
            graph = self.builder.build(outputs)
            graph = type(graph)(graph.name, graph.inputs, graph.nodes, graph.outputs,
                                host_inputs=self.host_inputs, host_outputs=self.host_outputs)
        except GraphError as error:
            raise OnnxImportError(f"the imported network is not valid: {error}") from None
        if not graph.nodes:
            raise OnnxImportError(f"the model's outputs ({', '.join(self.wanted)}) are its "
                                  f"inputs, quantized: there is no operator to run on the "
                                  f"device; --outputs names the tensors to import")
        return Imported(graph, self.scales)

    def _needed(self, producers):
        """The nodes the wanted outputs depend on; a wanted float tensor that a
        QuantizeLinear consumes is taken after it (its quantized value)."""
        known = set(self.consts) | {v.name for v in self.graph.input}
        for name in self.wanted:
            if name not in producers and name not in known:
                raise OnnxImportError(f"output {name!r} is not a tensor of the model")
        needed, stack = set(), list(self.wanted)
        consumers = {}
        for n in self.graph.node:
            for i in n.input:
                consumers.setdefault(i, []).append(n)
        extra = []
        for name in self.wanted:
            for c in consumers.get(name, []):
                if c.op_type in ("QuantizeLinear", "Relu", "Clip"):
                    extra.append(c.output[0])
                    for d in consumers.get(c.output[0], []):
                        if d.op_type in ("DequantizeLinear", "QuantizeLinear"):
                            extra.append(d.output[0])
        stack += extra
        while stack:
            tensor = stack.pop()
            node = producers.get(tensor)
            if node is None or id(node) in needed:
                continue
            needed.add(id(node))
            stack.extend(i for i in node.input if i)
        return needed

    def _handler(self, node):
        if node.domain not in ("", "ai.onnx", "com.microsoft"):
            return None
        return getattr(self, f"_op_{node.op_type}", None)

    @staticmethod
    def _why(node):
        domain = f" of domain {node.domain}" if node.domain not in ("", "ai.onnx") else ""
        return f"op {node.op_type}{domain} is not supported"

    def _node(self, node):
        handler = self._handler(node)
        if handler is None:
            raise UnsupportedNode(self._why(node))
        handler(node)

    # -- QDQ -----------------------------------------------------------------------------------

    def _op_Constant(self, node):
        value = _attrs(self.onnx, node).get("value")
        if value is None:
            raise UnsupportedNode("only Constant nodes with a tensor value are supported")
        self.consts[node.output[0]] = _np(self.onnx, value)

    def _op_DequantizeLinear(self, node):
        x, s, z = (list(node.input) + [""])[:3]
        out = node.output[0]
        if x in self.consts:
            scale = np.asarray(self._const(s, "scale"), np.float64)
            ints = np.asarray(self.consts[x])
            zero = np.asarray(self.consts[z]) if z else np.zeros((), ints.dtype)
            self.deq_const[out] = (ints, scale, zero, _attrs(self.onnx, node).get("axis", 1))
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

    def _op_QuantizeLinear(self, node):
        x, s, z = (list(node.input) + [""])[:3]
        out = node.output[0]
        scale, zero = float(self._scalar(s, "scale")), self._zero(z, out)
        if x in self.float_inputs:
            tensor = self._name(x)
            self.lazy[tensor] = (x, self.float_inputs[x], "float32")
            self.q[out] = _QT(tensor, self.float_inputs[x], scale, zero)
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
        self.pending[node.output[0]] = _Pending(node)

    _op_Conv = _op_Gemm = _op_MatMul = _op_Add = _float_op
    _op_AveragePool = _op_GlobalAveragePool = _float_op

    def _op_MaxPool(self, node):
        x = node.input[0]
        if x in self.q:                         # operator form: a max pool of int8 values
            qt = self.q[x]
            self.q[node.output[0]] = self._pool(node, qt, qt.scale, qt.zero, None)
        else:
            self._float_op(node)

    def _activation(self, node):
        if node.op_type == "Relu":
            return ("relu",)
        attrs = _attrs(self.onnx, node)
        lo, hi = attrs.get("min"), attrs.get("max")
        inputs = list(node.input) + ["", ""]
        if inputs[1]:
            lo = float(self._scalar(inputs[1], "min"))
        if inputs[2]:
            hi = float(self._scalar(inputs[2], "max"))
        return ("clip", lo, hi)

    def _op_Relu(self, node):
        x = node.input[0]
        if x not in self.pending or self.pending[x].activation is not None:
            raise UnsupportedNode(f"it is not fused: its input {x!r} is not the output of a "
                                  f"Conv, Gemm, MatMul, Add or pool awaiting quantization")
        pending = self.pending.pop(x)
        pending.activation = self._activation(node)
        self.pending[node.output[0]] = pending

    _op_Clip = _op_Relu

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
        table[node.output[0]] = _QT(qt.tensor, tuple(shape), qt.scale, qt.zero, qt.gain)

    def _op_Flatten(self, node):
        axis = _attrs(self.onnx, node).get("axis", 1)
        self._alias(node, lambda s: (int(np.prod(s[:axis])), int(np.prod(s[axis:]))))

    def _op_Reshape(self, node):
        target = [int(v) for v in np.asarray(self._const(node.input[1], "shape")).reshape(-1)]

        def reshape(shape):
            out = [shape[i] if v == 0 else v for i, v in enumerate(target)]
            if -1 in out:
                rest = int(np.prod([v for v in out if v != -1]))
                out[out.index(-1)] = int(np.prod(shape)) // max(rest, 1)
            return tuple(out)
        self._alias(node, reshape)

    def _op_Identity(self, node):
        x = node.input[0]
        if x in self.pending:
            self.pending[node.output[0]] = self.pending.pop(x)
        else:
            self._alias(node, lambda s: s)

    # -- emitting network nodes ------------------------------------------------------------------

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

    def _conv_or_dense(self, node, x, ints, sw, zw, bias, sy, zy, activation):
        name = self._name(node.name or node.output[0])
        op = node.op_type
        attrs = _attrs(self.onnx, node)
        ints, moved = self._device_ints(ints)
        zw = np.asarray(zw).astype(np.int64) - moved
        if bias is not None and x.gain != 1.0:   # the bias's unit is the model's sx·sw
            bias = np.rint(np.asarray(bias, np.float64) / x.gain).astype(np.int64)
        sw = np.asarray(sw, np.float64).reshape(-1)
        if op in ("Gemm", "MatMul", "QLinearMatMul", "QGemm"):
            if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 \
                    or attrs.get("beta", 1.0) != 1.0:
                raise UnsupportedNode("a Gemm with transA, alpha or beta maps onto no node")
            if ints.ndim != 2:
                raise UnsupportedNode(f"its weights have shape {list(ints.shape)}; a dense "
                                      f"layer's are 2-D")
            if not attrs.get("transB", 0):
                ints = ints.T
            padded = False
        else:
            padded = self._conv_geometry(attrs, ints.shape)["pad"] > 0
        host_pad = 0
        if padded and x.zero not in (0, -128) and x.tensor in self.lazy:
            host_pad = self._conv_geometry(attrs, ints.shape)["pad"]   # the host pads with zx
            padded = False
        tensor = self._use(x, host_pad)
        weights, total, requant, pad_value, scale = conv_like(
            name, "dense" if ints.ndim == 2 else "conv2d", weights=ints, w_zero=zw,
            sx=x.real, zx=x.zero, sw=sw, sy=sy, zy=zy, bias=bias, activation=activation,
            padded=padded, host_requant=self.host_requant)
        self.scales.append(scale)
        if weights.ndim == 2:
            out = self.builder.add_node(Node(name, "dense", (tensor,), weights=weights,
                                             bias=total, requant=requant))
            return _QT(out, (x.shape[0], weights.shape[0]), sy, zy, _gain(scale))
        geometry = self._conv_geometry(attrs, ints.shape)
        group = attrs.get("group", 1)
        if group != 1:
            weights = _ungroup(weights, group)
        node_attrs = dict(stride=geometry["stride"], pad=geometry["pad"] - host_pad)
        if pad_value:
            node_attrs["pad_value"] = pad_value
        out = self.builder.add_node(Node(name, "conv2d", (tensor,), attrs=node_attrs,
                                         weights=weights, bias=total, requant=requant))
        return _QT(out, self.builder.shape(out), sy, zy, _gain(scale))

    def _conv_geometry(self, attrs, wshape):
        kernel = attrs.get("kernel_shape", list(wshape[2:]))
        strides = attrs.get("strides", [1] * len(kernel))
        pads = attrs.get("pads", [0] * 2 * len(kernel))
        dilations = attrs.get("dilations", [1] * len(kernel))
        if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
            raise UnsupportedNode("auto_pad SAME_*: give explicit pads")
        if len(kernel) != 2 or any(d != 1 for d in dilations):
            raise UnsupportedNode(f"kernel {list(kernel)} with dilations {list(dilations)}: "
                                  f"the network takes 2-D windows without dilation")
        if len(set(strides)) != 1 or len(set(pads)) != 1:
            raise UnsupportedNode(f"strides {list(strides)} and pads {list(pads)} must be the "
                                  f"same on every side")
        return {"k": list(kernel), "stride": int(strides[0]), "pad": int(pads[0])}

    def _add(self, node, a, b, sy, zy, activation):
        name = self._name(node.name or node.output[0])
        if a.shape != b.shape:
            raise UnsupportedNode(f"it adds shapes {list(a.shape)} and {list(b.shape)}; the "
                                  f"network's add takes one shape (no broadcasting)")
        shift_a, swap, requant, scale = add_like(name, sa=a.real, za=a.zero, sb=b.real,
                                                 zb=b.zero, sy=sy, zy=zy,
                                                 activation=activation)
        if swap:
            a, b = b, a
        self.scales.append(scale)
        attrs = {"shift_a": shift_a} if shift_a else {}
        out = self.builder.add_node(Node(name, "add", (self._use(a), self._use(b)), attrs=attrs,
                                         requant=requant))
        smaller = min(a.real, b.real)            # the input whose scale sets the shift
        return _QT(out, a.shape, sy, zy, 1.0 / (2.0 ** -scale.shift / (smaller / sy)))

    def _pool(self, node, x, sy, zy, activation):
        name = self._name(node.name or node.output[0])
        op = node.op_type.replace("QLinear", "")
        attrs = _attrs(self.onnx, node)
        tensor = self._use(x)
        n, c, h, w = self.builder.shape(tensor)
        if op == "GlobalAveragePool":
            requant, scale = pool_like(name, "global_avg_pool", window=h * w, sx=x.real,
                                       zx=x.zero, sy=sy, zy=zy, activation=activation,
                                       host_requant=self.host_requant)
            self.scales.append(scale)
            out = self.builder.global_avg_pool(name, tensor, requant=requant)
            return _QT(out, (n, c, 1, 1), sy, zy, _gain(scale))
        kernel = attrs.get("kernel_shape")
        geometry = self._conv_geometry(attrs, (0, 0) + tuple(kernel))
        k = geometry["k"]
        if k[0] != k[1] or attrs.get("ceil_mode", 0):
            raise UnsupportedNode(f"kernel {k} (ceil_mode {attrs.get('ceil_mode', 0)}): the "
                                  f"network's pools take square windows, ceil_mode 0")
        if op == "MaxPool":
            if not (np.isclose(x.scale, sy, rtol=1e-6) and x.zero == zy):
                raise UnsupportedNode("its output is quantized with another scale or zero "
                                      "point than its input (a max pool only moves values)")
            if activation is not None:
                raise UnsupportedNode("an activation after a max pool maps onto no node")
            out = self.builder.max_pool(name, tensor, k=k[0], stride=geometry["stride"],
                                        pad=geometry["pad"])
            return _QT(out, self.builder.shape(out), sy, zy, x.gain)
        else:
            if geometry["pad"]:
                raise UnsupportedNode("an average pool with padding: the divisor changes at "
                                      "the borders (count_include_pad) and the padding is 0, "
                                      "not the zero point")
            requant, scale = pool_like(name, "avg_pool", window=k[0] * k[0], sx=x.real,
                                       zx=x.zero, sy=sy, zy=zy, activation=activation,
                                       host_requant=self.host_requant)
            self.scales.append(scale)
            out = self.builder.avg_pool(name, tensor, k=k[0], stride=geometry["stride"],
                                        requant=requant)
        return _QT(out, self.builder.shape(out), sy, zy, _gain(scale))

    # -- operator form -------------------------------------------------------------------------

    def _qt(self, name, scale, zero):
        if name not in self.q:
            raise UnsupportedNode(f"its input {name!r} is not an imported int8 tensor")
        qt = self.q[name]
        scale, zero = float(self._scalar(scale, "scale")), self._zero(zero, name)
        if qt.scale is None:
            qt.scale, qt.zero = scale, zero
        return _QT(qt.tensor, qt.shape, scale, zero, qt.gain)

    def _op_QLinearConv(self, node):
        i = list(node.input) + [""] * 9
        x = self._qt(i[0], i[1], i[2])
        ints, sw = self._const(i[3], "weights"), np.asarray(self._const(i[4], "scale"))
        zw = np.asarray(self._const(i[5], "zero point"))
        sy, zy = float(self._scalar(i[6], "scale")), self._out_zero(node, i[7])
        bias = None if not i[8] else np.asarray(self._const(i[8], "bias"), np.int64)
        self.q[node.output[0]] = self._conv_or_dense(node, x, ints, sw, zw, bias, sy, zy, None)

    def _op_QLinearMatMul(self, node):
        i = list(node.input)
        x = self._qt(i[0], i[1], i[2])
        ints, sw = self._const(i[3], "weights"), np.asarray(self._const(i[4], "scale"))
        zw = np.asarray(self._const(i[5], "zero point"))
        sy, zy = float(self._scalar(i[6], "scale")), self._out_zero(node, i[7])
        self.q[node.output[0]] = self._conv_or_dense(node, x, ints, sw, zw, None, sy, zy, None)

    def _op_QGemm(self, node):
        """com.microsoft QGemm (what quantize_static's operator form makes of a Gemm): A, its
        scale and zero point, B, its scale and zero point, the int32 bias C, then y's scale and
        zero point (without them the output is float, which maps onto no node)."""
        i = list(node.input) + [""] * 9
        if not i[7]:
            raise UnsupportedNode("a QGemm without y_scale has a float output")
        x = self._qt(i[0], i[1], i[2])
        ints, sw = self._const(i[3], "weights"), np.asarray(self._const(i[4], "scale"))
        zw = np.asarray(self._const(i[5], "zero point"))
        bias = None if not i[6] else np.asarray(self._const(i[6], "bias"), np.int64)
        sy, zy = float(self._scalar(i[7], "scale")), self._out_zero(node, i[8])
        self.q[node.output[0]] = self._conv_or_dense(node, x, ints, sw, zw, bias, sy, zy, None)

    def _op_QLinearAdd(self, node):
        i = list(node.input) + [""] * 8
        a, b = self._qt(i[0], i[1], i[2]), self._qt(i[3], i[4], i[5])
        sy, zy = float(self._scalar(i[6], "scale")), self._out_zero(node, i[7])
        self.q[node.output[0]] = self._add(node, a, b, sy, zy, None)

    def _op_QLinearAveragePool(self, node):
        i = list(node.input) + [""] * 5
        x = self._qt(i[0], i[1], i[2])
        sy, zy = float(self._scalar(i[3], "scale")), self._out_zero(node, i[4])
        self.q[node.output[0]] = self._pool(node, x, sy, zy, None)

    _op_QLinearGlobalAveragePool = _op_QLinearAveragePool

    # -- outputs -------------------------------------------------------------------------------

    def _int_dtype(self, name):
        """int8 or uint8: the element type of the model's integer output ``name``."""
        for value in list(self.graph.output) + list(self.graph.value_info):
            if value.name == name:
                elem = value.type.tensor_type.elem_type
                return "uint8" if elem == self.onnx.TensorProto.UINT8 else "int8"
        return "int8"

    def _output(self, name):
        """The device tensor of the model's output ``name`` and its host step."""
        qt, dtype = None, "float32"
        if name in self.deq:
            qt = self.deq[name]
        elif name in self.q:
            qt, dtype = self.q[name], self._int_dtype(name)
        else:
            for node in self.graph.node:            # a float tensor taken after its Q(/DQ)
                if name in node.input and node.op_type == "QuantizeLinear" \
                        and node.output[0] in self.q:
                    qt = self.q[node.output[0]]
        if qt is None:
            if name not in self.failed:
                self.unsupported.append((name, "output", "the output is not an imported int8 "
                                         "tensor nor its dequantized value"))
            return None
        self._use(qt)
        if qt.tensor in self.host_outputs:
            raise OnnxImportError(f"outputs {self.host_outputs[qt.tensor].name!r} and "
                                  f"{name!r} are the same tensor; ask for one")
        self.host_outputs[qt.tensor] = HostOutput(name, qt.shape, dtype, qt.real, qt.zero) \
            if dtype == "float32" else HostOutput(name, qt.shape, dtype)
        return qt.tensor


def _integer_types(onnx, model):
    """``{tensor name: numpy dtype}`` of the model's integer tensors, as the model declares them
    or ONNX's shape inference derives them (a tensor of an op inference does not know is left
    out)."""
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:                                   # inference is a help, not a must
        pass
    graph = model.graph
    types = {t.name: onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
             for t in graph.initializer}
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        elem = value.type.tensor_type.elem_type
        if elem not in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.FLOAT):
            try:
                types[value.name] = onnx.helper.tensor_dtype_to_np_dtype(elem)
            except (KeyError, ValueError):
                continue
    return types


def _gain(scale):
    """The ``gain`` of a layer's output (:class:`_QT`): ``1 / (1 + error)`` where the device
    approximates the layer's one multiplier by a power of two, else 1."""
    if scale.on_host or scale.exact or not scale.uniform:
        return 1.0
    return 1.0 / (1.0 + scale.error)


def _ungroup(weights, group):
    """Grouped convolution weights ``[O, C/group, KH, KW]`` as the full ``[O, C, KH, KW]``
    whose weights outside each output's group are zero (docs/onnx.md)."""
    o, cg = weights.shape[:2]
    full = np.zeros((o, cg * group) + weights.shape[2:], np.int8)
    per = o // group
    for g in range(group):
        full[g * per:(g + 1) * per, g * cg:(g + 1) * cg] = weights[g * per:(g + 1) * per]
    return full


def import_onnx(model, *, batch=None, outputs=None, host_requant=False, name=None):
    """Import ``model`` (a path or an ``onnx.ModelProto``) as an :class:`Imported` network of
    batch ``batch`` (default: the model's own, 1 where it is not fixed); ``outputs`` names the
    model tensors to produce (default: the model's outputs); ``host_requant`` keeps each layer
    whose scale is not a power of two on the host.
    An :class:`OnnxImportError` lists every node that cannot be imported."""
    onnx = load_onnx()
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise UserError(f"model file {path} does not exist")
        try:
            model = onnx.load(str(path))
        except Exception as error:                      # protobuf raises its own errors
            raise UserError(f"{path}: not an ONNX model ({error})") from None
        name = name or path.stem
    if batch is not None and batch < 1:
        raise UserError(f"batch {batch} must be at least 1")
    name = re.sub(r"[^A-Za-z0-9_.:+-]", "_", name or model.graph.name or "model")
    importer = _Importer(onnx, model, batch, outputs, host_requant, name)
    return importer.run()


def cmd_import(args):
    """Handler of ``avta import``: import, print the scales, write NET.yaml and NET.npz."""
    from .io import save
    check_output_file(args.output, "-o")
    if Path(args.output).suffix not in (".yaml", ".yml"):
        raise UserError(f"-o {args.output}: name the network file NAME.yaml (avta run takes "
                        f"a network by its .yaml or .yml suffix; the weights go to NAME.npz)")
    outputs = [o for o in (args.outputs or "").split(",") if o] or None
    imported = import_onnx(args.model, batch=args.batch, outputs=outputs,
                           host_requant=args.host_requant)
    yaml_path, npz_path = save(imported.graph, args.output)
    print(imported.graph.summary())
    print(imported.report())
    print(f"wrote {yaml_path} and {npz_path}")
    return 0
