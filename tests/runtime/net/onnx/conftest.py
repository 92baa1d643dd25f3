"""Fixtures of the ONNX importer's tests (``avta.runtime.net.onnx_import``): small quantized
models written with onnx.helper in both forms, onnxruntime as the reference, and a check that
tells rounding ties from errors.

:class:`QDQ` writes a model in QDQ form (QuantizeLinear/DequantizeLinear around float ops, as
``quantize_static`` writes it), :class:`QOp` one in operator form (QLinearConv, QLinearMatMul,
QLinearAdd, …). Both take every scale and zero point from the test, so the tests choose powers
of two where the result must be exact.
"""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from avta.isa.config import Config, load_config  # noqa: E402
from avta.runtime.net import accumulate, from_device, run_reference, to_device  # noqa: E402
from avta.runtime.net.executor import dram_bytes, run_network  # noqa: E402

_TYPES = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


class _Model:
    """What both forms share: initializers, nodes, unique names, the model."""

    def __init__(self, shape, scale, zero, dtype=np.int8):
        self.nodes, self.inits, self.count = [], [], 0
        self.dtype = dtype
        self.input_shape = tuple(shape)
        self.inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                     ["N"] + list(shape[1:]))]

    def name(self, base):
        self.count += 1
        return f"{base}{self.count}"

    def const(self, base, value):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, base, domain=None, **attrs):
        out = self.name(base)
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.name(op), domain=domain,
                                           **attrs))
        return out

    def model(self, output):
        graph = helper.make_graph(self.nodes, "test", self.inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                                  self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = 8
        return model

    def zp(self, zero):
        return np.array(zero, self.dtype)


class QDQ(_Model):
    """A model in QDQ form; a tensor is ``(float name, scale, zero point)``."""

    def __init__(self, shape, scale, zero, dtype=np.int8):
        super().__init__(shape, scale, zero, dtype)
        self.x = self._qdq("x", scale, zero)

    def _qdq(self, tensor, scale, zero):
        s, z = self.const("s", np.float32(scale)), self.const("z", self.zp(zero))
        q = self.node("QuantizeLinear", [tensor, s, z], "q")
        return self.node("DequantizeLinear", [q, s, z], "dq"), scale, zero

    def _weights(self, ints, scale):
        ints = np.asarray(ints)
        s = self.const("ws", np.asarray(scale, np.float32))
        z = self.const("wz", np.zeros(np.shape(scale), ints.dtype))
        kwargs = {"axis": 0} if np.ndim(scale) else {}
        w = self.const("w", ints)
        return self.node("DequantizeLinear", [w, s, z], "wdq", **kwargs)

    def _bias(self, bias, scale):
        b = self.const("b", np.asarray(bias, np.int32))
        s = self.const("bs", np.asarray(scale, np.float32))
        return self.node("DequantizeLinear", [b, s], "bdq")

    def _out(self, y, scale, zero, act):
        if act == "relu":
            y = self.node("Relu", [y], "relu")
        elif act is not None:
            y = self.node("Clip", [y, self.const("lo", np.float32(act[0])),
                                   self.const("hi", np.float32(act[1]))], "clip")
        return self._qdq(y, scale, zero)

    def conv(self, x, w, ws, bias, ys, yz, *, stride=1, pad=0, group=1, act=None):
        inputs = [x[0], self._weights(w, ws)]
        if bias is not None:
            inputs.append(self._bias(bias, x[1] * np.asarray(ws)))
        y = self.node("Conv", inputs, "conv", strides=[stride] * 2, pads=[pad] * 4,
                      group=group, kernel_shape=list(np.shape(w)[2:]))
        return self._out(y, ys, yz, act)

    def gemm(self, x, w, ws, bias, ys, yz, *, act=None, matmul=False):
        """``w`` is ``[K, O]`` (ONNX's B)."""
        if matmul:
            y = self.node("MatMul", [x[0], self._weights(w, ws)], "mm")
        else:
            inputs = [x[0], self._weights(w, ws)]
            if bias is not None:
                inputs.append(self._bias(bias, x[1] * ws))
            y = self.node("Gemm", inputs, "gemm")
        return self._out(y, ys, yz, act)

    def add(self, a, b, ys, yz, *, act=None):
        return self._out(self.node("Add", [a[0], b[0]], "add"), ys, yz, act)

    def max_pool(self, x, k, stride, pad=0):
        y = self.node("MaxPool", [x[0]], "mp", kernel_shape=[k, k], strides=[stride] * 2,
                      pads=[pad] * 4)
        return self._qdq(y, x[1], x[2])

    def avg_pool(self, x, k, stride, ys, yz):
        y = self.node("AveragePool", [x[0]], "ap", kernel_shape=[k, k], strides=[stride] * 2)
        return self._qdq(y, ys, yz)

    def global_avg_pool(self, x, ys, yz):
        return self._qdq(self.node("GlobalAveragePool", [x[0]], "gap"), ys, yz)

    def flatten(self, x):
        return (self.node("Flatten", [x[0]], "flat", axis=1),) + x[1:]

    def build(self, y):
        return self.model(y[0])


class QOp(_Model):
    """A model in operator form; a tensor is ``(int8 name, scale name, zero name, scale,
    zero)``. The input is quantized once, the output dequantized once."""

    def __init__(self, shape, scale, zero, dtype=np.int8):
        super().__init__(shape, scale, zero, dtype)
        self.x = self._q("x", scale, zero)

    def _sz(self, scale, zero):
        return self.const("s", np.float32(scale)), self.const("z", self.zp(zero))

    def _q(self, tensor, scale, zero):
        s, z = self._sz(scale, zero)
        return self.node("QuantizeLinear", [tensor, s, z], "q"), s, z, scale, zero

    def _new(self, op, inputs, scale, zero, domain=None, **attrs):
        s, z = self._sz(scale, zero)
        return self.node(op, inputs + [s, z], "y", domain=domain, **attrs), s, z, scale, zero

    def conv(self, x, w, ws, bias, ys, yz, *, stride=1, pad=0, group=1, act=None):
        s, z = self.const("ws", np.asarray(ws, np.float32)), \
            self.const("wz", np.zeros(np.shape(ws), np.asarray(w).dtype))
        y = list(self._new("QLinearConv", [x[0], x[1], x[2], self.const("w", w), s, z],
                           ys, yz, strides=[stride] * 2, pads=[pad] * 4, group=group,
                           kernel_shape=list(np.shape(w)[2:])))
        if bias is not None:     # QLinearConv's bias is its last input, after y's scale/zero
            self.nodes[-1].input.append(self.const("b", np.asarray(bias, np.int32)))
        return tuple(y)

    def gemm(self, x, w, ws, bias, ys, yz, *, act=None, matmul=True):
        s, z = self.const("ws", np.float32(ws)), self.const("wz", np.zeros((), w.dtype))
        return self._new("QLinearMatMul", [x[0], x[1], x[2], self.const("w", w), s, z], ys, yz)

    def add(self, a, b, ys, yz, *, act=None):
        return self._new("QLinearAdd", [a[0], a[1], a[2], b[0], b[1], b[2]], ys, yz,
                         domain="com.microsoft")

    def max_pool(self, x, k, stride, pad=0):
        y = self.node("MaxPool", [x[0]], "mp", kernel_shape=[k, k], strides=[stride] * 2,
                      pads=[pad] * 4)
        return (y,) + x[1:]

    def avg_pool(self, x, k, stride, ys, yz):
        return self._new("QLinearAveragePool", list(x[:3]), ys, yz, domain="com.microsoft",
                         kernel_shape=[k, k], strides=[stride] * 2)

    def global_avg_pool(self, x, ys, yz):
        return self._new("QLinearGlobalAveragePool", list(x[:3]), ys, yz,
                         domain="com.microsoft", channels_last=0)

    def flatten(self, x):
        return (self.node("Flatten", [x[0]], "flat", axis=1),) + x[1:]

    def build(self, y):
        return self.model(self.node("DequantizeLinear", list(y[:3]), "out"))


def run_ort(model, x, outputs=None):
    """onnxruntime's outputs of ``model`` for the float input ``x``."""
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(outputs, {session.get_inputs()[0].name: x})


def run_device(graph, x, config="tiny", target="fsim"):
    """The model's outputs (by model name) of ``graph`` run on ``target`` (``config`` a
    shipped name or a :class:`Config`) for the model's input ``x``; the device's int8 outputs must equal the numpy reference's."""
    from avta.sim.targets import make_device
    cfg = config if isinstance(config, Config) else load_config(config)
    device = make_device(cfg, target, dram_bytes(cfg, graph))
    xd = to_device(graph, x)
    run = run_network(device, graph, xd)
    reference = run_reference(graph, xd, keep=False)
    for name, value in reference.items():
        assert np.array_equal(run.outputs[name], value), f"{name}: device != numpy reference"
    return from_device(graph, run.outputs), run


def ties(graph, x):
    """Where the output node's exact result lies half-way between two integers (before its
    shift): there the device rounds up and onnxruntime to even. A bool mask of the output."""
    values = run_reference(graph, to_device(graph, x))
    node = graph.nodes[-1]
    q = node.requant
    if q is None or q.shift <= 0 or q.scale is not None:
        return np.zeros(graph.shapes[node.output], bool)
    acc = accumulate(node, [values[t] for t in node.inputs])
    if node.bias is not None and q.bias_first:
        acc = acc + node.bias.astype(np.int64).reshape(1, -1, 1, 1)
    return ((acc + q.offset) % (1 << q.shift)) == 0


def assert_matches_ort(graph, x, ours, ort_out, scale):
    """``ours`` equals onnxruntime's ``ort_out`` except at rounding ties, where it is one
    step (``scale``) above; returns the number of ties that differed."""
    mask = ties(graph, x).reshape(ours.shape)
    diff = np.rint((ours.astype(np.float64) - ort_out) / scale)
    assert np.array_equal(ours[~mask], ort_out[~mask]), \
        f"{int((diff[~mask] != 0).sum())} values differ away from ties"
    assert set(np.unique(diff[mask])) <= {0.0, 1.0}
    return int((diff != 0).sum())


#: Scale ratios a quantizer makes (the fixed-point tests): nothing here is a power of two.
SX, SW, SY = 0.0371, 0.00493, 0.0611


def random_float_input(rng, shape, zero, scale=SX):
    """A float input whose values are int8 steps ``(q − zero) · scale``."""
    q = rng.integers(-128, 128, shape)
    return ((q - zero) * scale).astype(np.float32)


def random_weights(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def conv_add_pool(rng):
    """A QDQ model of the fixed-point tests on a 1×4×6×6 input: a 3×3 convolution with
    per-channel weight scales and a 1×1 one, added at another scale, then a global average
    pool."""
    m = QDQ((1, 4, 6, 6), SX, -128)
    a = m.conv(m.x, random_weights(rng, (4, 4, 3, 3)), SW * np.exp(rng.uniform(-1, 1, 4)), None,
               0.05, 3, pad=1)
    b = m.conv(m.x, random_weights(rng, (4, 4, 1, 1)), SW, None, 0.05 * 1.37, -7)
    return m.build(m.global_avg_pool(m.add(a, b, SY * 1.9, 11), SY, 2))


@pytest.fixture
def onnx_kit():
    """The model writers and checks of this folder, as one namespace."""
    class Kit:
        pass
    kit = Kit()
    kit.QDQ, kit.QOp, kit.run_ort, kit.run_device = QDQ, QOp, run_ort, run_device
    kit.ties, kit.assert_matches_ort = ties, assert_matches_ort
    #: What the fixed-point tests share: ``SX, SW, SY, input(rng, shape, zero), weights(rng,
    #: shape)``.
    kit.fixed_point = (SX, SW, SY, random_float_input, random_weights)
    kit.conv_add_pool = conv_add_pool
    return kit


# -- real models: scikit-learn's digits, trained, converted, quantized by onnxruntime ---------

@pytest.fixture(scope="session", params=["QDQ", "QOperator"])
def digits_mlp(request, tmp_path_factory):
    """The digits MLP of :mod:`avta.runtime.net.onnx_examples`, quantized by quantize_static in
    each form: ``(quantized model, x, y, logits tensor name)``."""
    pytest.importorskip("sklearn")
    pytest.importorskip("skl2onnx")
    from avta.runtime.net import onnx_examples as ex
    x, y = ex.digits()
    path = ex.digits_mlp(tmp_path_factory.mktemp("digits"), x, y, form=request.param)
    model = onnx.load(path)
    return model, x, y, ex.logits_tensor(model)


@pytest.fixture(scope="session", params=["QDQ", "QOperator"])
def digits_cnn(request, tmp_path_factory):
    """The small CNN of :mod:`avta.runtime.net.onnx_examples` quantized by quantize_static in
    each form: ``(quantized model, images [N, 1, 8, 8], y)``."""
    pytest.importorskip("sklearn")
    from avta.runtime.net import onnx_examples as ex
    x, y = ex.digits()
    model = onnx.load(ex.small_cnn(tmp_path_factory.mktemp("cnn"), x, y, form=request.param))
    return model, x.reshape(-1, 1, 8, 8), y
