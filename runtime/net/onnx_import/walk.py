"""The walk: every node the wanted outputs depend on, in the model's order, through the
handler of its op type; every node that cannot be mapped is collected (never dropped) and
reported together in one :class:`~.reading.OnnxImportError`.

:data:`HANDLERS` (op type → handler ``(importer, node)``) joins the QDQ form's
(:mod:`.qdq`) and the operator form's (:mod:`.operator_form`); :data:`SUPPORTED`, the list the
error message gives, is derived from it.
"""

import re
from pathlib import Path

from avta.errors import UserError

from ..graph import GraphError
from ..host_io import HostOutput
from . import operator_form, qdq
from .arithmetic import UnsupportedNode, fixed_bits
from .imported import Imported
from .lowering import Lowering
from .operator_form import OperatorForm
from .qdq import QdqForm
from .reading import ModelReading, OnnxImportError, load_onnx

#: op type → the importer's handler of it.
HANDLERS = {**qdq.HANDLERS, **operator_form.HANDLERS}
#: The ops the importer maps, as the error message lists them.
SUPPORTED = ", ".join([*qdq.HANDLERS, *sorted(operator_form.HANDLERS)])
#: The domains whose ops the handlers are of (QGemm, QLinearAdd and the QLinear pools are
#: com.microsoft's).
DOMAINS = ("", "ai.onnx", "com.microsoft")


class Importer(ModelReading, QdqForm, OperatorForm, Lowering):
    """One import of one model. Besides the state of its parts (:mod:`.reading`,
    :mod:`.qdq`, :mod:`.lowering`) it holds ``q`` (int8 model tensor name → its
    :class:`~.reading.QT`), ``wanted`` (the model tensors to produce), ``unsupported``
    (``(node name, op type, reason)`` of each node that could not be mapped) and ``failed``
    (the tensors those nodes and their readers would have made)."""

    def __init__(self, onnx, model, batch, outputs, host_requant, name, fixed_point=False):
        self._read_model(onnx, model, batch)
        self._start_qdq()
        self._start_lowering(name, host_requant, fixed_point)
        self.q = {}
        self.unsupported, self.failed = [], set()
        self.wanted = list(outputs) if outputs else [o.name for o in self.graph.output]
        self._inputs()

    def run(self):
        """The :class:`~.imported.Imported` network, or an :class:`OnnxImportError` that lists
        every node that cannot be mapped."""
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

    @staticmethod
    def _handler(node):
        """The handler of ``node``'s op type, or None."""
        if node.domain not in DOMAINS:
            return None
        return HANDLERS.get(node.op_type)

    @staticmethod
    def _why(node):
        domain = f" of domain {node.domain}" if node.domain not in ("", "ai.onnx") else ""
        return f"op {node.op_type}{domain} is not supported"

    def _node(self, node):
        handler = self._handler(node)
        if handler is None:
            raise UnsupportedNode(self._why(node))
        handler(self, node)

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


def import_onnx(model, *, batch=None, outputs=None, host_requant=False, name=None,
                fixed_point=False):
    """Import ``model`` (a path or an ``onnx.ModelProto``) as an :class:`Imported` network of
    batch ``batch`` (default: the model's own, 1 where it is not fixed); ``outputs`` names the
    model tensors to produce (default: the model's outputs); ``host_requant`` keeps each layer
    whose scale is not a power of two on the host; ``fixed_point`` carries each such scale as a
    15-bit multiplier for ALU SCL (``True`` or 16: a device with ``ALU_SCALE: 1``), or with 24
    as onnxruntime's float32 ratio in 24-bit rows (``ALU_SCALE: 2``; docs/onnx.md); elsewhere
    those layers run on the host. An :class:`OnnxImportError` lists every node that cannot be
    imported."""
    fixed_point = fixed_bits(fixed_point) or False
    if host_requant and fixed_point:
        raise UserError("give --host-requant or --fixed-point, not both")
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
    return Importer(onnx, model, batch, outputs, host_requant, name, fixed_point).run()
