"""Lowering to the graph: the network nodes (conv2d, depthwise, dense, add, pools) of imported
operators, and the graph inputs and host steps of the model's inputs. The arithmetic that turns
scales and zero points into weights, biases and requantizations is :mod:`.arithmetic`.

:class:`Lowering` owns the :class:`~avta.runtime.net.graph.GraphBuilder`, ``names`` (the
network names given so far), ``lazy`` (device input tensor → ``(model name, shape, dtype)`` of
a model input not yet read), ``made`` (``(device input tensor, host padding)`` → the graph
input made of it), ``host_inputs`` and ``host_outputs`` (the graph's host steps,
:mod:`..host_io`) and ``scales`` (each requantizing layer's
:class:`~.arithmetic.Scale`).
"""

import re

import numpy as np

from ..graph import GraphBuilder, Node
from ..host_io import HostInput
from .arithmetic import UnsupportedNode, add_like, conv_like, pool_like
from .reading import QT, device_ints, node_attrs


def gain(scale):
    """The ``gain`` of a layer's output (:class:`~.reading.QT`): ``1 / (1 + error)`` where the
    device approximates the layer's one multiplier by a power of two, else 1."""
    if scale.on_host or scale.exact or not scale.uniform:
        return 1.0
    return 1.0 / (1.0 + scale.error)


def ungroup(weights, group):
    """Grouped convolution weights ``[O, C/group, KH, KW]`` as the full ``[O, C, KH, KW]``
    whose weights outside each output's group are zero (docs/onnx.md)."""
    o, cg = weights.shape[:2]
    full = np.zeros((o, cg * group) + weights.shape[2:], np.int8)
    per = o // group
    for g in range(group):
        full[g * per:(g + 1) * per, g * cg:(g + 1) * cg] = weights[g * per:(g + 1) * per]
    return full


def depthwise(weights, group):
    """Whether a convolution of ``group`` groups with ``weights`` ``[O, C/group, KH, KW]`` is
    depthwise — one input channel per group and one output per input channel (``O = group``),
    a square kernel — and so becomes the network's ``depthwise`` node, whose layer runs on the
    GEMM core with diagonal weight blocks or with the ALU (docs/onnx.md); other groupings are
    a full convolution whose weights outside each group are zero (:func:`ungroup`)."""
    o, cg, kh, kw = weights.shape
    return group > 1 and cg == 1 and o == group and kh == kw


def conv_geometry(attrs, wshape):
    """``{"k", "stride", "pad"}`` of a convolution's or pool's attributes, or
    :class:`UnsupportedNode` where the network's windows cannot take them."""
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


class Lowering:
    """The importer's emission of network nodes (a mixin of :class:`~.walk.Importer`)."""

    def _start_lowering(self, name, host_requant, fixed_point):
        self.builder = GraphBuilder(name)
        self.host_requant, self.fixed_point = host_requant, fixed_point
        # 24-bit multipliers carry onnxruntime's own float32 ratios of the model's scales, and
        # the outputs keep the model's scale: the device then computes what onnxruntime does.
        self.ort_scales = fixed_point == 24
        self.names, self.lazy, self.made = set(), {}, {}
        self.host_inputs, self.host_outputs = {}, {}
        self.scales = []

    def _real(self, qt):
        """The scale a layer's multiplier is computed from: the tensor's real scale, or with
        24-bit multipliers the model's own (onnxruntime's)."""
        return qt.scale if self.ort_scales else qt.real

    def _gain(self, scale):
        """The gain of a layer's output (:func:`gain`); 1 with 24-bit multipliers."""
        return 1.0 if self.ort_scales and scale.fixed is not None else gain(scale)

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

    def _conv_or_dense(self, node, x, ints, sw, zw, bias, sy, zy, activation):
        """The conv2d or dense node of a convolution or matrix product of ``x`` by the integer
        weights ``ints`` (scale ``sw``, zero point ``zw``) with an int32 ``bias``."""
        name = self._name(node.name or node.output[0])
        op = node.op_type
        attrs = node_attrs(self.onnx, node)
        ints, moved = device_ints(ints)
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
            padded = conv_geometry(attrs, ints.shape)["pad"] > 0
        host_pad = 0
        if padded and x.zero not in (0, -128) and x.tensor in self.lazy:
            host_pad = conv_geometry(attrs, ints.shape)["pad"]   # the host pads with zx
            padded = False
        tensor = self._use(x, host_pad)
        weights, total, requant, pad_value, scale = conv_like(
            name, "dense" if ints.ndim == 2 else "conv2d", weights=ints, w_zero=zw,
            sx=self._real(x), zx=x.zero, sw=sw, sy=sy, zy=zy, bias=bias, activation=activation,
            padded=padded, host_requant=self.host_requant, fixed=self.fixed_point)
        self.scales.append(scale)
        if weights.ndim == 2:
            out = self.builder.add_node(Node(name, "dense", (tensor,), weights=weights,
                                             bias=total, requant=requant))
            return QT(out, (x.shape[0], weights.shape[0]), sy, zy, self._gain(scale))
        geometry = conv_geometry(attrs, ints.shape)
        group = attrs.get("group", 1)
        op = "conv2d"
        if depthwise(weights, group):
            op = "depthwise"
        elif group != 1:
            weights = ungroup(weights, group)
        conv_attrs = dict(stride=geometry["stride"], pad=geometry["pad"] - host_pad)
        if pad_value:
            conv_attrs["pad_value"] = pad_value
        out = self.builder.add_node(Node(name, op, (tensor,), attrs=conv_attrs,
                                         weights=weights, bias=total, requant=requant))
        return QT(out, self.builder.shape(out), sy, zy, self._gain(scale))

    def _add(self, node, a, b, sy, zy, activation):
        """The add node of ``a + b`` quantized to ``(sy, zy)``."""
        name = self._name(node.name or node.output[0])
        if a.shape != b.shape:
            raise UnsupportedNode(f"it adds shapes {list(a.shape)} and {list(b.shape)}; the "
                                  f"network's add takes one shape (no broadcasting)")
        shift_a, swap, requant, scale = add_like(name, sa=self._real(a), za=a.zero,
                                                 sb=self._real(b), zb=b.zero, sy=sy, zy=zy,
                                                 activation=activation, fixed=self.fixed_point)
        if swap:
            a, b = b, a
        self.scales.append(scale)
        if scale.fixed is not None:             # the inputs' multipliers, ALU SCL
            if len(shift_a) == 4:               # two factors each (24-bit import)
                attrs = dict(zip(("scale_a", "scale_a2", "scale_b", "scale_b2"), shift_a))
            else:
                attrs = {"scale_a": shift_a[0], "scale_b": shift_a[1]}
            out = self.builder.add_node(Node(name, "add", (self._use(a), self._use(b)),
                                             attrs=attrs, requant=requant))
            return QT(out, a.shape, sy, zy, self._gain(scale))
        attrs = {"shift_a": shift_a} if shift_a else {}
        out = self.builder.add_node(Node(name, "add", (self._use(a), self._use(b)), attrs=attrs,
                                         requant=requant))
        smaller = min(a.real, b.real)            # the input whose scale sets the shift
        return QT(out, a.shape, sy, zy, 1.0 / (2.0 ** -scale.shift / (smaller / sy)))

    def _pool(self, node, x, sy, zy, activation):
        """The max, average or global average pool node of ``x`` quantized to ``(sy, zy)``."""
        name = self._name(node.name or node.output[0])
        op = node.op_type.replace("QLinear", "")
        attrs = node_attrs(self.onnx, node)
        tensor = self._use(x)
        n, c, h, w = self.builder.shape(tensor)
        if op == "GlobalAveragePool":
            requant, scale = pool_like(name, "global_avg_pool", window=h * w,
                                       sx=self._real(x),
                                       zx=x.zero, sy=sy, zy=zy, activation=activation,
                                       host_requant=self.host_requant,
                                       fixed=self.fixed_point)
            self.scales.append(scale)
            out = self.builder.global_avg_pool(name, tensor, requant=requant)
            return QT(out, (n, c, 1, 1), sy, zy, self._gain(scale))
        kernel = attrs.get("kernel_shape")
        geometry = conv_geometry(attrs, (0, 0) + tuple(kernel))
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
            return QT(out, self.builder.shape(out), sy, zy, x.gain)
        if geometry["pad"]:
            raise UnsupportedNode("an average pool with padding: the divisor changes at "
                                  "the borders (count_include_pad) and the padding is 0, "
                                  "not the zero point")
        requant, scale = pool_like(name, "avg_pool", window=k[0] * k[0], sx=self._real(x),
                                   zx=x.zero, sy=sy, zy=zy, activation=activation,
                                   host_requant=self.host_requant, fixed=self.fixed_point)
        self.scales.append(scale)
        out = self.builder.avg_pool(name, tensor, k=k[0], stride=geometry["stride"],
                                    requant=requant)
        return QT(out, self.builder.shape(out), sy, zy, self._gain(scale))
