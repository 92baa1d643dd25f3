"""Depthwise convolutions of a quantize_static model (MobileNet's depthwise-separable blocks,
:func:`avta.runtime.net.onnx_examples.mobilenet_block`) become the network's depthwise node:
the same values as the full convolution they were lowered to before (weights zero outside each
channel's own), so as close to onnxruntime's, in fewer cycles. In QDQ and operator form, with
per-tensor and per-channel weights, at powers of two and with 24-bit multipliers."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from avta.isa.config import load_config  # noqa: E402
from avta.runtime.net.graph import Graph  # noqa: E402
from avta.runtime.net.onnx_import import import_onnx  # noqa: E402
from avta.runtime.net.onnx_import.lowering import ungroup  # noqa: E402

DEFAULT = load_config("default")
#: Each import: its arguments and the configuration it runs on.
MODES = {"shift": ({}, DEFAULT),
         "fixed24": ({"fixed_point": 24}, DEFAULT.replace(alu_scale=2, name="default-scale24"))}


@pytest.fixture(scope="module", params=[(form, pc) for form in ("QDQ", "QOperator")
                                        for pc in (False, True)],
                ids=lambda p: f"{p[0]}-{'per-channel' if p[1] else 'per-tensor'}")
def model(request, tmp_path_factory):
    from avta.runtime.net import onnx_examples as ex
    form, per_channel = request.param
    path, _ = ex.mobilenet_block(tmp_path_factory.mktemp("mobilenet"), form=form,
                                 per_channel=per_channel)
    x = np.random.default_rng(5).normal(0, 1, (2, 16, 14, 14)).astype(np.float32)
    return onnx.load(path), x


def _as_full_convolutions(graph):
    """``graph`` with each depthwise node the full convolution whose weights are zero outside
    each channel's own (what the importer made of a depthwise convolution before)."""
    nodes = [n.replace(op="conv2d", weights=ungroup(n.weights, n.weights.shape[0]))
             if n.op == "depthwise" else n for n in graph.nodes]
    return Graph(graph.name, graph.inputs, nodes, graph.outputs,
                 host_inputs=graph.host_inputs, host_outputs=graph.host_outputs)


@pytest.mark.parametrize("mode", MODES)
def test_depthwise_node_equals_the_full_convolution_in_fewer_cycles(onnx_kit, model, mode):
    kwargs, cfg = MODES[mode]
    qmodel, x = model
    graph = import_onnx(qmodel, batch=x.shape[0], **kwargs).graph
    depthwise = [n.name for n in graph.nodes if n.op == "depthwise"]
    assert len(depthwise) == 2
    assert all(graph.node(n).bias is not None for n in depthwise)
    ours, run = onnx_kit.run_device(graph, x, config=cfg)
    before, run_before = onnx_kit.run_device(_as_full_convolutions(graph), x, config=cfg)
    (ours,), (before,) = ours.values(), before.values()
    np.testing.assert_array_equal(ours, before)
    layers = {layer.name: layer for layer in run.layers}
    layers_before = {layer.name: layer for layer in run_before.layers}
    for name in depthwise:
        assert layers[name].on == "device", layers[name].why
        assert layers[name].cycles < 0.75 * layers_before[name].cycles, name
    if mode == "fixed24":
        # onnxruntime's own values, up to a step where its float32 rounds otherwise (at powers
        # of two the scale errors are the import's, the same as before: ours == before)
        (theirs,) = onnx_kit.run_ort(qmodel, x)
        scale = _output_scale(qmodel, qmodel.graph.output[0].name)
        steps = np.rint((ours.astype(np.float64) - theirs) / scale)
        assert np.abs(steps).max() <= 1 and (steps == 0).mean() >= 0.99


def _output_scale(model, name):
    """The scale of the quantized tensor the model's output is made from."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if name in node.output and node.op_type == "DequantizeLinear":
            return float(inits[node.input[1]])
    raise AssertionError(f"no DequantizeLinear writes {name}")


@pytest.mark.tsim
def test_depthwise_nodes_on_tsim(onnx_kit, tmp_path):
    """The Verilated RTL runs the imported depthwise layers (bias, −128 padding, 24-bit
    per-channel rows) as fsim does: run_device checks the device's tensors against the numpy
    reference, and the outputs are onnxruntime's."""
    from avta.runtime.net import onnx_examples as ex
    path, _ = ex.mobilenet_block(tmp_path, size=8, per_channel=True)
    qmodel = onnx.load(path)
    x = np.random.default_rng(6).normal(0, 1, (1, 16, 8, 8)).astype(np.float32)
    graph = import_onnx(qmodel, batch=1, fixed_point=24).graph
    cfg = load_config("tiny").replace(alu_scale=2)
    outputs, run = onnx_kit.run_device(graph, x, config=cfg, target="tsim")
    assert [layer.on for layer in run.layers if layer.op == "depthwise"] == ["device"] * 2
    (ours,), (theirs,) = outputs.values(), onnx_kit.run_ort(qmodel, x)
    scale = _output_scale(qmodel, qmodel.graph.output[0].name)
    assert np.abs(np.rint((ours.astype(np.float64) - theirs) / scale)).max() <= 1
