"""Real quantized models to import (docs/onnx.md): a classifier trained by scikit-learn on
its bundled 8×8 digits (no download), converted by skl2onnx, a small CNN written with
onnx.helper, a ResNet-18-shaped network with random weights (batch norm folded) and MobileNet's
depthwise-separable blocks; all quantized by onnxruntime's own ``quantize_static`` (int8, in QDQ
form or in operator form) on calibration images. The tests and ``avta bench onnx-digits`` use
them.

Everything here needs the optional extra: ``pip install 'avta[onnx]'``.
"""

import warnings
from pathlib import Path

import numpy as np

from avta.errors import UserError

from .onnx_import import INSTALL_HINT, load_onnx

__all__ = ["digits", "quantize", "digits_mlp", "small_cnn", "resnet18_like", "mobilenet_block",
           "logits_tensor", "FORMS"]

#: quantize_static's two formats: QuantizeLinear/DequantizeLinear around float operators, or
#: QLinearConv, QGemm, … operators.
FORMS = ("QDQ", "QOperator")


def _need(module):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise UserError(f"the example models need {module.split('.')[0]}: {INSTALL_HINT}") \
            from None


class _Reader:
    """quantize_static's calibration data: batches by the model's input name."""

    def __init__(self, name, x, batch=64):
        self.batches = iter([{name: x[i:i + batch]} for i in range(0, len(x), batch)])

    def get_next(self):
        return next(self.batches, None)


def digits():
    """scikit-learn's bundled digits: ``x`` float32 ``[1797, 64]`` in [0, 1], labels ``y``."""
    datasets = _need("sklearn.datasets")
    x, y = datasets.load_digits(return_X_y=True)
    return (x / 16).astype(np.float32), y


def quantize(model, folder, calibration, *, name="model", form="QDQ", per_channel=False):
    """``model`` after onnxruntime's ``quant_pre_process`` and ``quantize_static`` (``form``
    QDQ or QOperator, int8 activations and weights, calibrated on ``calibration``), saved in
    ``folder`` as ``NAME.qdq.onnx`` or ``NAME.qoperator.onnx``; returns that path."""
    if form not in FORMS:
        raise UserError(f"form {form!r} is not one of {', '.join(FORMS)}")
    onnx = load_onnx()
    quantization = _need("onnxruntime.quantization")
    shape_inference = _need("onnxruntime.quantization.shape_inference")
    folder = Path(folder)
    raw, pre, out = (folder / f"{name}{suffix}.onnx"
                     for suffix in ("", ".pre", "." + form.lower()))
    onnx.save(model, raw)
    shape_inference.quant_pre_process(str(raw), str(pre), skip_symbolic_shape=True)
    quantization.quantize_static(
        str(pre), str(out), _Reader(model.graph.input[0].name, calibration),
        quant_format=getattr(quantization.QuantFormat, form),
        activation_type=quantization.QuantType.QInt8, weight_type=quantization.QuantType.QInt8,
        per_channel=per_channel)
    return out


def digits_mlp(folder, x, y, *, hidden=32, seed=0, form="QDQ"):
    """An MLPClassifier (64-``hidden``-10) trained on ``x, y``, converted by skl2onnx (opset
    17, no ZipMap) and quantized on every 7th image; the path of the quantized model. It ends
    in Softmax and ArgMax, which the accelerator does not run: import it up to
    :func:`logits_tensor`."""
    neural_network = _need("sklearn.neural_network")
    exceptions = _need("sklearn.exceptions")
    skl2onnx = _need("skl2onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exceptions.ConvergenceWarning)
        clf = neural_network.MLPClassifier(hidden_layer_sizes=(hidden,), max_iter=300,
                                           random_state=seed).fit(x, y)
    model = skl2onnx.to_onnx(clf, x[:1], options={id(clf): {"zipmap": False}},
                             target_opset=17)
    return quantize(model, folder, x[::7], name="digits_mlp", form=form)


def logits_tensor(model):
    """The logits of a quantized classifier, which its Softmax reads (``--outputs`` of ``avta
    import``): in operator form the int8 input of QLinearSoftmax, in QDQ form the float tensor
    before the QuantizeLinear whose DequantizeLinear the Softmax reads."""
    nodes = list(model.graph.node)
    softmax = next(n for n in nodes if n.op_type in ("Softmax", "QLinearSoftmax"))
    if softmax.op_type == "QLinearSoftmax":
        return softmax.input[0]
    dq = next(n for n in nodes if n.output[0] == softmax.input[0])
    q = next(n for n in nodes if n.output[0] == dq.input[0])
    return q.input[0]


def _run(model, x):
    ort = _need("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def small_cnn(folder, x, y, *, seed=0, form="QDQ"):
    """A small CNN written with onnx.helper on the 8×8 digits (input ``[N, 1, 8, 8]``): Conv
    1→8 3×3 pad 1 + Relu, MaxPool 2, Conv 8→16 3×3 pad 1 + Relu, GlobalAveragePool, Flatten,
    Gemm 16→10. The convolutions are seeded random; the Gemm is a logistic regression fitted on
    their features, so the model classifies (about 69 %). Quantized on every 7th image; the
    path of the quantized model."""
    onnx = load_onnx()
    linear_model = _need("sklearn.linear_model")
    helper, numpy_helper, tensor = onnx.helper, onnx.numpy_helper, onnx.TensorProto
    rng = np.random.default_rng(seed)
    arrays = {"w1": rng.normal(0, 0.5, (8, 1, 3, 3)), "b1": rng.normal(0, 0.1, 8),
              "w2": rng.normal(0, 0.2, (16, 8, 3, 3)), "b2": rng.normal(0, 0.1, 16)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1] * 4,
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1] * 4,
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["features"], name="flatten")]

    def model(output, width):
        graph = helper.make_graph(
            nodes, "small_cnn",
            [helper.make_tensor_value_info("x", tensor.FLOAT, ["N", 1, 8, 8])],
            [helper.make_tensor_value_info(output, tensor.FLOAT, ["N", width])],
            [numpy_helper.from_array(np.asarray(a, np.float32), n) for n, a in arrays.items()])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m
    images = x.reshape(-1, 1, 8, 8)
    (features,) = _run(model("features", 16), images)
    head = linear_model.LogisticRegression(max_iter=2000).fit(features, y)
    arrays.update(wf=head.coef_.T, bf=head.intercept_)
    nodes.append(helper.make_node("Gemm", ["features", "wf", "bf"], ["logits"], name="fc"))
    return quantize(model("logits", 10), folder, images[::7], name="small_cnn", form=form)


#: ResNet-18's stages: (output channels, stride of the first block).
_RESNET18_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


def resnet18_like(folder, *, size=64, seed=0, form="QDQ", per_channel=True, calibration=32,
                  classes=1000):
    """ResNet-18's graph (torchvision's: 7×7/2 stem, 3×3/2 max pool, four stages of two basic
    blocks with 1×1/2 projections, global average pool, dense) written with onnx.helper, with
    seeded random weights and biases (batch norm folded into them: He-scaled convolutions, the
    second of each block halved so that the residual sums stay in range), input ``[N, 3, size,
    size]``, quantized on ``calibration`` random images (normal, seeded) with per-channel
    weights by default; ``(path of the quantized model, float32 model)``."""
    helper = load_onnx().helper
    rng = np.random.default_rng(seed)
    arrays, nodes = {}, []

    def conv(x, name, cin, cout, k, stride, *, gain=1.0, relu=True):
        std = gain * np.sqrt(2.0 / (cin * k * k))
        arrays[f"{name}.w"] = rng.normal(0, std, (cout, cin, k, k))
        arrays[f"{name}.b"] = rng.normal(0, 0.05, cout)
        nodes.append(helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [name], name=name,
                                      kernel_shape=[k, k], strides=[stride] * 2,
                                      pads=[k // 2] * 4))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [f"{name}.relu"], name=f"{name}.relu"))
        return f"{name}.relu"

    x = conv("x", "conv1", 3, 64, 7, 2)
    nodes.append(helper.make_node("MaxPool", [x], ["maxpool"], name="maxpool",
                                  kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    x, cin = "maxpool", 64
    for i, (cout, stride) in enumerate(_RESNET18_STAGES, 1):
        for j in range(2):
            name, s = f"layer{i}.{j}", stride if j == 0 else 1
            y = conv(x, f"{name}.conv1", cin, cout, 3, s)
            y = conv(y, f"{name}.conv2", cout, cout, 3, 1, gain=0.5, relu=False)
            skip = x
            if s != 1 or cin != cout:
                skip = conv(x, f"{name}.downsample", cin, cout, 1, s, gain=0.5, relu=False)
            nodes.append(helper.make_node("Add", [y, skip], [f"{name}.add"], name=f"{name}.add"))
            nodes.append(helper.make_node("Relu", [f"{name}.add"], [f"{name}.out"],
                                          name=f"{name}.relu"))
            x, cin = f"{name}.out", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["avgpool"], name="avgpool"))
    nodes.append(helper.make_node("Flatten", ["avgpool"], ["features"], name="flatten"))
    arrays["fc.w"] = rng.normal(0, np.sqrt(1.0 / cin), (cin, classes))
    arrays["fc.b"] = rng.normal(0, 0.05, classes)
    nodes.append(helper.make_node("Gemm", ["features", "fc.w", "fc.b"], ["logits"], name="fc"))
    return _quantized_example(folder, "resnet18_like", nodes, arrays, ("x", [3, size, size]),
                              ("logits", [classes]), rng, calibration, form, per_channel)


def mobilenet_block(folder, *, size=14, channels=32, seed=0, form="QDQ", per_channel=True,
                    calibration=16):
    """MobileNet's depthwise-separable blocks written with onnx.helper, seeded random weights:
    input ``[N, 16, size, size]``, a 1×1 convolution to ``channels`` + Relu, a depthwise 3×3
    (``group`` = channels) + Relu, a depthwise 3×3 of stride 2 + Relu, a 1×1 back to 16, a
    global average pool; quantized on ``calibration`` random images (normal, seeded), with
    per-channel weights by default. ``(path of the quantized model, float32 model)``."""
    helper = load_onnx().helper
    rng = np.random.default_rng(seed)
    arrays, nodes = {}, []

    def conv(x, name, cin, cout, k, stride, *, group=1, relu=True):
        std = np.sqrt(2.0 / (cin // group * k * k))
        # weight scales that differ from channel to channel, as batch norm folded in makes them
        arrays[f"{name}.w"] = rng.normal(0, std, (cout, cin // group, k, k)) * \
            np.exp(rng.uniform(-1, 1, (cout, 1, 1, 1)))
        arrays[f"{name}.b"] = rng.normal(0, 0.05, cout)
        nodes.append(helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [name], name=name,
                                      kernel_shape=[k, k], strides=[stride] * 2,
                                      pads=[k // 2] * 4, group=group))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [f"{name}.relu"], name=f"{name}.relu"))
        return f"{name}.relu"

    x = conv("x", "expand", 16, channels, 1, 1)
    x = conv(x, "dw1", channels, channels, 3, 1, group=channels)
    x = conv(x, "dw2", channels, channels, 3, 2, group=channels)
    x = conv(x, "project", channels, 16, 1, 1, relu=False)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"))
    return _quantized_example(folder, "mobilenet_block", nodes, arrays, ("x", [16, size, size]),
                              ("pool", [16, 1, 1]), rng, calibration, form, per_channel)


def _quantized_example(folder, name, nodes, arrays, inp, out, rng, calibration, form,
                       per_channel):
    """The float32 model of ``nodes`` with initializers ``arrays`` (input and output each a
    ``(name, shape without the batch)``), quantized on ``calibration`` random images (normal,
    from ``rng``): ``(path of the quantized model, float32 model)``."""
    onnx = load_onnx()
    helper, numpy_helper, tensor = onnx.helper, onnx.numpy_helper, onnx.TensorProto
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(inp[0], tensor.FLOAT, ["N", *inp[1]])],
        [helper.make_tensor_value_info(out[0], tensor.FLOAT, ["N", *out[1]])],
        [numpy_helper.from_array(np.asarray(a, np.float32), n) for n, a in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    images = rng.normal(0, 1, (calibration, *inp[1])).astype(np.float32)
    return quantize(model, folder, images, name=name, form=form, per_channel=per_channel), model
