"""``avta import MODEL.onnx -o NET.yaml``: an int8-quantized ONNX model as a network
(docs/onnx.md).

Two forms of quantized model are read: QDQ (QuantizeLinear/DequantizeLinear around float
operators, what ``onnxruntime.quantization.quantize_static`` writes by default) and operator
form (QLinearConv, QLinearMatMul, QGemm, QLinearAdd, QLinearAveragePool,
QLinearGlobalAveragePool).
Conv (grouped and depthwise too), Gemm/MatMul, Add, Relu/Clip (fused into the node before),
MaxPool, AveragePool, GlobalAveragePool, Flatten/Reshape and Identity map onto the network
format; every other node is reported by name and op type (:class:`OnnxImportError`), never
dropped.

The parts:

* :mod:`.reading` — the ``onnx`` module, the model's constants, integer types and inputs;
* :mod:`.walk` — the walk over the nodes the outputs need, the handler table
  (:data:`HANDLERS`, from which :data:`SUPPORTED` is derived) and :func:`import_onnx`;
* :mod:`.qdq` — the QDQ form's handlers (float operators between DequantizeLinear and
  QuantizeLinear, the shape-only ops);
* :mod:`.operator_form` — the operator form's handlers (QLinear*, QGemm);
* :mod:`.lowering` — the network nodes and host steps of imported operators;
* :mod:`.arithmetic` — scales and zero points as weights, biases and requantizations;
* :mod:`.imported` — :class:`Imported`, what an import returns;
* :mod:`.cli` — :func:`cmd_import`, the handler of ``avta import``.

The graph's host steps (:mod:`..host_io`) make ``avta run`` take the model's own input
(float32 for a QDQ model, quantized on the host) and write its own output (dequantized when the
model ends in DequantizeLinear). ``onnx`` is imported only here, when a model is imported:
without the optional extra ``pip install 'avta[onnx]'`` the command says so.
"""

from .arithmetic import Scale, UnsupportedNode
from .cli import cmd_import
from .imported import Imported
from .reading import INSTALL_HINT, OnnxImportError, load_onnx
from .walk import HANDLERS, SUPPORTED, import_onnx

__all__ = ["import_onnx", "Imported", "OnnxImportError", "cmd_import", "load_onnx",
           "SUPPORTED", "HANDLERS", "INSTALL_HINT", "Scale", "UnsupportedNode"]
