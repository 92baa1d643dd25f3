"""Whole networks, independent of any backend: a graph of int8 NCHW tensors, its YAML format,
real topologies and their numpy reference.

* :mod:`.graph` — :class:`Graph` (checked when made), :class:`Node`, :class:`GraphBuilder`;
* :mod:`.io` — :func:`save` and :func:`load`: YAML with the weights in a sidecar ``.npz``
  (docs/network-format.md);
* :mod:`.host_io` — the host's steps around an imported model: quantize its input, dequantize
  its output (:func:`to_device`, :func:`from_device`);
* :mod:`.onnx_import` — :func:`~.onnx_import.import_onnx`: an int8-quantized ONNX model as a
  graph (docs/onnx.md; needs ``pip install 'avta[onnx]'``);
* :mod:`.reference` — :func:`run_reference`, each node by :mod:`avta.runtime.ops.reference`;
* :mod:`.calibrate` — per-layer shifts (:func:`calibrate`) and :func:`activation_spread`;
* :mod:`.builders` — ResNet-18/34/50 and MobileNet v1 with seeded weights.
"""

from .builders import BUILDERS, build, mobilenet, mobilenet1_0, resnet18, resnet34, resnet50
from .calibrate import Spread, activation_spread, calibrate, choose_shift, unhealthy
from .graph import OPS, Graph, GraphBuilder, GraphError, Node
from .host_io import HostInput, HostOutput, from_device, to_device
from .io import load, save
from .reference import accumulate, random_input, run_node, run_reference

__all__ = ["Graph", "GraphBuilder", "GraphError", "Node", "OPS", "HostInput", "HostOutput",
           "to_device", "from_device", "save", "load",
           "run_reference", "run_node", "accumulate", "random_input", "calibrate",
           "choose_shift", "activation_spread", "unhealthy", "Spread", "BUILDERS", "build",
           "resnet18", "resnet34", "resnet50", "mobilenet", "mobilenet1_0"]
