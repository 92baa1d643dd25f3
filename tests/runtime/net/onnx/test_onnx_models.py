"""Real models end to end: a classifier trained by scikit-learn on its bundled digits,
converted by skl2onnx and quantized by onnxruntime's quantize_static, and a small CNN written
with onnx.helper and quantized the same way; imported, run on fsim (the whole data set) and
tsim, and compared with onnxruntime's quantized model (docs/onnx.md)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from avta.runtime.net.onnx_import import import_onnx  # noqa: E402

#: Images of the tsim runs of the default test run (the whole data set: -m slow).
TSIM_IMAGES = 48


def _predictions(onnx_kit, imported, x, config, target):
    (logits,) = onnx_kit.run_device(imported.graph, x, config, target)[0].values()
    return logits.reshape(len(x), -1).argmax(axis=1)


def _form(model):
    qop = any(n.op_type.startswith(("QLinear", "QGemm")) for n in model.graph.node)
    return "operator form" if qop else "QDQ"


def _compare(name, ours, theirs, y):
    agree = float(np.mean(ours == theirs))
    acc, ort_acc = float(np.mean(ours == y)), float(np.mean(theirs == y))
    print(f"\n{name}: {len(y)} images, agreement with onnxruntime {agree:.2%}, accuracy "
          f"{acc:.2%} (onnxruntime's quantized model {ort_acc:.2%})")
    return agree, acc, ort_acc


def _mlp(onnx_kit, digits_mlp, count, config, target):
    model, x, y, logits = digits_mlp
    x, y = x[:count], y[:count]
    imported = import_onnx(model, batch=len(x), outputs=[logits])
    print("\n" + imported.report())
    label, _ = onnx_kit.run_ort(model, x)
    ours = _predictions(onnx_kit, imported, x, config, target)
    return _compare(f"digits MLP ({_form(model)}) on {config} ({target})", ours, label, y)


def test_digits_mlp_fsim_whole_data_set(onnx_kit, digits_mlp):
    agree, acc, ort_acc = _mlp(onnx_kit, digits_mlp, None, "default", "fsim")
    assert agree >= 0.99 and abs(acc - ort_acc) <= 0.01


def test_digits_mlp_host_requant_is_onnxruntime(onnx_kit, digits_mlp):
    """With each inexact layer's requantization on the host the logits are onnxruntime's."""
    model, x, _, logits = digits_mlp
    imported = import_onnx(model, batch=len(x), outputs=[logits], host_requant=True)
    assert all(s.on_host for s in imported.scales if not s.exact)
    (ours,) = onnx_kit.run_device(imported.graph, x, "default")[0].values()
    # QDQ: the DequantizeLinear of the logits' QuantizeLinear; operator form: the int8 logits
    q = [n.output[0] for n in model.graph.node
         if n.op_type == "QuantizeLinear" and n.input[0] == logits]
    fetch = next((n.output[0] for n in model.graph.node if q and n.input[0] == q[0]
                  and n.op_type == "DequantizeLinear"), logits)
    kind = onnx.TensorProto.FLOAT if q else onnx.TensorProto.INT8
    model.graph.output.append(onnx.helper.make_tensor_value_info(fetch, kind, None))
    try:
        theirs = onnx_kit.run_ort(model, x)[-1]
    finally:
        model.graph.output.pop()
    assert ours.dtype == theirs.dtype and np.mean(ours == theirs) > 0.999


@pytest.mark.tsim
def test_digits_mlp_tsim(onnx_kit, digits_mlp):
    agree, acc, ort_acc = _mlp(onnx_kit, digits_mlp, TSIM_IMAGES, "tiny", "tsim")
    assert agree >= 0.99 and abs(acc - ort_acc) <= 0.05


@pytest.mark.slow
@pytest.mark.tsim
def test_digits_mlp_tsim_whole_data_set(onnx_kit, digits_mlp):
    agree, acc, ort_acc = _mlp(onnx_kit, digits_mlp, None, "default", "tsim")
    assert agree >= 0.99 and abs(acc - ort_acc) <= 0.01


def _cnn(onnx_kit, digits_cnn, count, config, target, host_requant=False):
    model, images, y = digits_cnn
    images, y = images[:count], y[:count]
    imported = import_onnx(model, batch=len(images), host_requant=host_requant)
    print("\n" + imported.report())
    assert [n.op for n in imported.graph.nodes] == ["conv2d", "max_pool", "conv2d",
                                                   "global_avg_pool", "dense"]
    assert imported.graph.nodes[2].attrs["pad_value"] == -128   # after a ReLU: zero point -128
    (theirs,) = onnx_kit.run_ort(model, images)
    ours = _predictions(onnx_kit, imported, images, config, target)
    where = "inexact layers on the host" if host_requant else "nearest powers of two"
    return _compare(f"small CNN ({_form(model)}) on {config} ({target}, {where})", ours,
                    theirs.argmax(axis=1), y)


def test_small_cnn_fsim_whole_data_set(onnx_kit, digits_cnn):
    """On the device every layer's scale is the nearest power of two (quantize_static's are
    not), and the layers after it take the scale it left (docs/onnx.md, "Scales")."""
    agree, acc, ort_acc = _cnn(onnx_kit, digits_cnn, None, "default", "fsim")
    assert agree >= 0.95 and abs(acc - ort_acc) <= 0.02


def test_small_cnn_host_requant_is_onnxruntime(onnx_kit, digits_cnn):
    """With the inexact requantizations on the host the predictions are onnxruntime's."""
    agree, acc, ort_acc = _cnn(onnx_kit, digits_cnn, None, "default", "fsim", True)
    assert agree >= 0.99 and abs(acc - ort_acc) <= 0.01


@pytest.mark.tsim
def test_small_cnn_tsim(onnx_kit, digits_cnn):
    agree, _, _ = _cnn(onnx_kit, digits_cnn, TSIM_IMAGES, "tiny", "tsim")
    assert agree >= 0.9
