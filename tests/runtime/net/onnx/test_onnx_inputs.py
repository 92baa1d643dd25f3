"""The importer's reading of a model's integer types and its input: activations other than
int8/uint8 are refused (never run as int8), a QuantizeLinear without a zero point is uint8
with zero point 0 (ONNX's default), and a model input read by a convolution the host pads and
by another node reaches each reader in its own form."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from avta.runtime.net import random_input, run_reference, to_device  # noqa: E402
from avta.runtime.net.onnx_import import OnnxImportError, import_onnx  # noqa: E402

SX, SW, SY = 2.0 ** -4, 2.0 ** -6, 2.0 ** -3


def _weights(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def _input(rng, shape, zero, scale=SX):
    return ((rng.integers(-128, 128, shape) - zero) * scale).astype(np.float32)


@pytest.mark.parametrize("form", ["QDQ", "QOp"])
def test_int16_activations_are_refused(onnx_kit, form):
    """An int16 tensor with zero point 0 is not an int8 tensor with zero point 0: its values
    reach ±32767. The importer names the type instead of running it as int8."""
    rng = np.random.default_rng(3)
    m = getattr(onnx_kit, form)((1, 4, 5, 5), SX, 0, dtype=np.int16)
    y = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, SY, 0)
    with pytest.raises(OnnxImportError, match="int16"):
        import_onnx(m.build(y))


def test_a_quantize_without_zero_point_is_uint8_at_zero(onnx_kit):
    """ONNX's QuantizeLinear without a zero point makes uint8 with zero point 0: negative
    inputs clip to the real 0. On the device that is the int8 zero point −128."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(np.float32(SX), "sx"),
             numpy_helper.from_array(np.float32(SY), "sy"),
             numpy_helper.from_array(np.float32(SW), "sw"),
             numpy_helper.from_array(_weights(rng, (3, 4, 1, 1)), "w")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "sw"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("QuantizeLinear", ["c", "sy"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "sy"], ["y"])]
    graph = helper.make_graph(nodes, "noz", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 4, 3, 3])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = _input(rng, (2, 4, 3, 3), 0)                # half of it negative: clipped to 0
    imported = import_onnx(model).graph
    (spec,) = imported.host_inputs.values()
    assert spec.zero_point == -128
    (ours,) = onnx_kit.run_device(imported, x)[0].values()
    (ort_out,) = onnx_kit.run_ort(model, x)
    assert np.abs(ours - ort_out).max() <= SY
    assert np.mean(ours == ort_out) >= 0.99


def _two_readers(kit, form, padded_first):
    """x (zero point 5) → a padded 3x3 conv and an unpadded 1x1 conv, each pooled, added
    (every scale ratio a power of two, so the device is exact but for rounding ties)."""
    rng = np.random.default_rng(5)
    m = getattr(kit, form)((2, 4, 4, 4), SX, 5)
    w3, w1 = _weights(rng, (4, 4, 3, 3)), _weights(rng, (4, 4, 1, 1))
    if padded_first:
        a = m.conv(m.x, w3, SW, None, SY, 0, pad=1)
        b = m.conv(m.x, w1, SW, None, SY, 0)
    else:
        b = m.conv(m.x, w1, SW, None, SY, 0)
        a = m.conv(m.x, w3, SW, None, SY, 0, pad=1)
    y = m.add(m.global_avg_pool(a, SY, 0), m.global_avg_pool(b, SY, 0), SY, 0)
    return m.build(y), _input(rng, (2, 4, 4, 4), 5)


@pytest.mark.parametrize("form", ["QDQ", "QOp"])
@pytest.mark.parametrize("padded_first", [True, False])
def test_host_padding_reaches_only_the_padded_reader(onnx_kit, form, padded_first):
    model, x = _two_readers(onnx_kit, form, padded_first)
    graph = import_onnx(model, batch=2).graph
    shapes = sorted(graph.inputs.values())
    assert shapes == [(2, 4, 4, 4), (2, 4, 6, 6)]      # one device input per form
    assert {s.name for s in graph.host_inputs.values()} == {"x"}
    (ours,) = onnx_kit.run_device(graph, x)[0].values()
    (ort_out,) = onnx_kit.run_ort(model, x)
    assert np.abs(ours - ort_out).max() <= SY          # one step at most (rounding ties)
    assert np.mean(ours == ort_out) >= 0.9


def test_one_model_input_feeds_every_device_input(onnx_kit):
    """to_device and random_input make every device input from one model input: the padded
    one is the unpadded one with a border of the zero point."""
    model, x = _two_readers(onnx_kit, "QDQ", True)
    graph = import_onnx(model, batch=2).graph
    for arrays in (to_device(graph, x), random_input(graph, seed=2)):
        small, big = sorted(arrays.values(), key=lambda a: a.size)
        assert np.array_equal(big[:, :, 1:-1, 1:-1], small)
        assert (big[:, :, 0, :] == 5).all() and (big[:, :, :, -1] == 5).all()
    run_reference(graph, random_input(graph, seed=2))


def test_layers_beyond_the_power_of_two_bound_are_named_in_a_warning(onnx_kit):
    """Per-channel weights whose scales lie 7x apart share one shift: the far channel errs far
    beyond ±41 %, and the report names the layer instead of letting it pass silently."""
    rng = np.random.default_rng(6)
    m = onnx_kit.QDQ((1, 4, 5, 5), SX, 0)
    ws = np.array([SW, SW, SW * 7, SW * 7])
    y = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), ws, None, SY, 0)
    imported = import_onnx(m.build(y))
    (far,) = imported.beyond_bound()
    assert abs(far.error) > 0.41
    assert "warning: 1 layer(s) err beyond ±41 %" in imported.report()
    assert "--fixed-point" in imported.report()
    exact = onnx_kit.QDQ((1, 4, 5, 5), SX, 0)
    y = exact.conv(exact.x, _weights(rng, (4, 4, 1, 1)), SW, None, SY, 0)
    assert "warning" not in import_onnx(exact.build(y)).report()
