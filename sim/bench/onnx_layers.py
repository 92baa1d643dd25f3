"""Where an imported model's results differ from onnxruntime's, layer by layer (docs/onnx.md).

onnxruntime does not run a QDQ model as written: its session fuses DequantizeLinear → Conv →
QuantizeLinear into QLinearConv where it can, turns int8 into uint8 (zero point + 128) and
NCHW into NHWC around the fused kernels. Adding an intermediate tensor to the model's outputs
changes those fusions, so the layers' int8 outputs are taken from the session's own optimized
graph instead: saved, then run again unoptimized with the layers' quantized outputs added.

:func:`compare_layers` then runs every layer of the imported network with the numpy
reference twice: chained (on its own inputs, as the device computes) and isolated (on
onnxruntime's int8 inputs), and counts the values that differ from onnxruntime's.
"""

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["LayerDiff", "ort_layer_outputs", "compare_layers"]

#: Where the fused operators keep their output's zero point (the input index), so that the
#: type of the output (int8, or uint8 after onnxruntime's conversion) is known.
_ZERO_POINT_INPUT = {"QuantizeLinear": 2, "QLinearConv": 7, "QGemm": 8,
                     "QLinearGlobalAveragePool": 4, "QLinearAdd": 7, "QLinearAveragePool": 4,
                     "QLinearMatMul": 7}
#: Operators whose output has their first input's type.
_SAME_TYPE = ("Transpose", "Flatten", "NhwcMaxPool", "MaxPool", "Reshape", "ReorderInput",
              "ReorderOutput")


@dataclass
class LayerDiff:
    """One layer: its values, how many differ from onnxruntime's chained and isolated, and the
    largest difference in steps (chained)."""
    name: str
    op: str
    values: int
    chained: int
    isolated: int | None
    max_steps: int


def _types(model, tensor_proto):
    types = {i.name: i.data_type for i in model.graph.initializer}
    for value in model.graph.input:
        types[value.name] = tensor_proto.FLOAT
    for node in model.graph.node:
        index = _ZERO_POINT_INPUT.get(node.op_type)
        if index is not None and len(node.input) > index:
            kind = types.get(node.input[index], tensor_proto.INT8)
        elif node.op_type in _SAME_TYPE:
            kind = types.get(node.input[0], tensor_proto.FLOAT)
        else:
            kind = tensor_proto.FLOAT
        for out in node.output:
            types[out] = kind
    return types


def ort_layer_outputs(path, x):
    """``({model node name: int64 array in NCHW}, the model's first output)``: the int8
    output of every layer of the quantized model at ``path`` that onnxruntime's optimized
    graph still holds, as onnxruntime computes it for the input ``x``."""
    import onnx
    import onnxruntime as ort
    tp = onnx.TensorProto
    source = onnx.load(str(path))
    with tempfile.TemporaryDirectory() as folder:
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(Path(folder) / "optimized.onnx")
        options.log_severity_level = 3
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        final = session.run(None, {session.get_inputs()[0].name: x})[0]
        model = onnx.load(options.optimized_model_filepath)
    types = _types(model, tp)
    nodes = list(model.graph.node)
    wanted = {}
    for node in source.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            continue
        quantize = [n for n in nodes if n.op_type == "QuantizeLinear"
                    and n.name == f"{node.output[0]}_QuantizeLinear"]
        if quantize:            # left in float: the QuantizeLinear after it
            wanted[node.name] = (quantize[0].output[0], False)
            continue
        fused = [n for n in nodes if re.sub(r"(_token_\d+|_nchwc)$", "", n.name) == node.name
                 and n.op_type not in ("QuantizeLinear", "DequantizeLinear")]
        if fused and types[fused[0].output[0]] in (tp.INT8, tp.UINT8):
            nhwc = fused[0].op_type == "NhwcMaxPool" or any(
                a.name == "channels_last" and a.i for a in fused[0].attribute)
            wanted[node.name] = (fused[0].output[0], nhwc)
    for tensor, _ in wanted.values():
        model.graph.output.append(onnx.helper.make_tensor_value_info(tensor, types[tensor], None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = dict(zip(names, session.run(None, {session.get_inputs()[0].name: x})))
    if not np.array_equal(values[names[0]], final):
        raise AssertionError("onnxruntime's optimized graph, run again, gives another output")
    layers = {}
    for name, (tensor, nhwc) in wanted.items():
        value = values[tensor]
        value = value.astype(np.int64) - 128 if value.dtype == np.uint8 else value.astype(np.int64)
        layers[name] = value.transpose(0, 3, 1, 2) if nhwc and value.ndim == 4 else value
    return layers, final


def compare_layers(path, x, imported):
    """A :class:`LayerDiff` for each node of ``imported`` (an import of the model at ``path``)
    whose output onnxruntime's graph holds, in the network's order, for the input ``x``."""
    from avta.runtime.net import to_device
    from avta.runtime.net.reference import run_node, run_reference
    theirs, _ = ort_layer_outputs(path, x)
    graph = imported.graph
    ours = run_reference(graph, to_device(graph, x))
    rows = []
    for node in graph.nodes:
        if node.name not in theirs:
            continue
        want = theirs[node.name]
        chained = ours[node.output].astype(np.int64).reshape(want.shape) - want
        inputs = []
        for tensor in node.inputs:
            producer = graph.producer(tensor)
            if producer is None:
                inputs.append(ours[tensor])
            elif producer.name in theirs:
                inputs.append(theirs[producer.name].reshape(ours[tensor].shape).astype(np.int8))
            else:
                inputs = None
                break
        isolated = None
        if inputs is not None:
            mine = run_node(node, inputs).astype(np.int64).reshape(want.shape)
            isolated = int(np.count_nonzero(mine != want))
        rows.append(LayerDiff(node.name, node.op, want.size, int(np.count_nonzero(chained)),
                              isolated, int(np.abs(chained).max(initial=0))))
    return rows
