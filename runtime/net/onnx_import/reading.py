"""Reading the model: the ``onnx`` module, the model's integer types and constants, its inputs,
and :class:`QT`, an int8 tensor as the importer tracks it.

:class:`ModelReading` is the part of the importer that answers questions about the model
itself: a constant's value, a scalar scale, a zero point as the device's int8, an input's
shape. It owns ``consts`` (constant tensor name → numpy value: the initializers and the values
of Constant nodes), ``types`` (integer tensor name → numpy dtype) and ``float_inputs`` (float
graph input name → model shape); the int8 graph inputs it finds go into ``q`` and ``lazy``
(:mod:`.lowering` makes them graph inputs at their first reader).
"""

from dataclasses import dataclass

import numpy as np

from avta.errors import UserError

from .arithmetic import UnsupportedNode

INSTALL_HINT = "pip install 'avta[onnx]'"


class OnnxImportError(UserError):
    """A model that cannot be imported; ``unsupported`` lists ``(node name, op type, reason)``
    of every node that could not be mapped."""

    def __init__(self, message, unsupported=()):
        super().__init__(message)
        self.unsupported = list(unsupported)


def load_onnx():
    """The ``onnx`` module, or a :class:`UserError` that says how to install it."""
    try:
        import onnx
    except ImportError:
        raise UserError(f"importing ONNX models needs the onnx package: {INSTALL_HINT}") \
            from None
    return onnx


@dataclass
class QT:
    """An int8 tensor on the device: its device tensor name, the model's shape of it, its scale
    in the model, its (device, int8) zero point, and ``gain``: the device's values minus the
    zero point are ``1/gain`` times the model's where a layer before approximated its scale
    (docs/onnx.md, "Scales"), so their real scale is ``scale · gain`` (:attr:`real`)."""
    tensor: str
    shape: tuple
    scale: float
    zero: int
    gain: float = 1.0

    @property
    def real(self):
        return self.scale * self.gain


def tensor_value(onnx, tensor):
    """The numpy value of an ONNX ``TensorProto``."""
    return onnx.numpy_helper.to_array(tensor)


def node_attrs(onnx, node):
    """``{attribute name: value}`` of an ONNX node."""
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def integer_types(onnx, model):
    """``{tensor name: numpy dtype}`` of the model's integer tensors, as the model declares them
    or ONNX's shape inference derives them (a tensor of an op inference does not know is left
    out)."""
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:                                   # inference is a help, not a must
        pass
    graph = model.graph
    types = {t.name: onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
             for t in graph.initializer}
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        elem = value.type.tensor_type.elem_type
        if elem not in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.FLOAT):
            try:
                types[value.name] = onnx.helper.tensor_dtype_to_np_dtype(elem)
            except (KeyError, ValueError):
                continue
    return types


def device_ints(values):
    """Integer values as the device's int8 (uint8 moved by −128), and the move."""
    values = np.asarray(values)
    if values.dtype == np.uint8:
        return values.astype(np.int16) - 128, 128
    return values.astype(np.int64), 0


class ModelReading:
    """The importer's reading of the model (a mixin of :class:`~.walk.Importer`)."""

    def _read_model(self, onnx, model, batch):
        self.onnx, self.model = onnx, model
        self.graph = model.graph
        self.batch = batch
        self.consts = {t.name: tensor_value(onnx, t) for t in self.graph.initializer}
        self.types = integer_types(onnx, model)
        self.float_inputs = {}

    def _model_shape(self, value_info):
        dims = value_info.type.tensor_type.shape.dim
        shape = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        if shape and shape[0] in (None, 0):
            shape[0] = self.batch or 1
        elif shape and self.batch is not None and shape[0] != self.batch:
            raise OnnxImportError(f"input {value_info.name!r} has the fixed batch {shape[0]}; "
                                  f"batch {self.batch} was asked for")
        if None in shape or len(shape) not in (2, 4):
            raise OnnxImportError(f"input {value_info.name!r} has shape {shape}; the importer "
                                  f"takes [N, C] or [N, C, H, W] with known sizes past the batch")
        return tuple(shape)

    def _inputs(self):
        """Sort the graph's inputs: float ones wait for their QuantizeLinear, int8 and uint8
        ones become device tensors at their first reader."""
        onnx = self.onnx
        for value in self.graph.input:
            if value.name in self.consts:
                continue
            shape = self._model_shape(value)
            elem = value.type.tensor_type.elem_type
            if elem == onnx.TensorProto.FLOAT:
                self.float_inputs[value.name] = shape
            elif elem in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
                tensor = self._name(value.name)
                dtype = "int8" if elem == onnx.TensorProto.INT8 else "uint8"
                self.lazy[tensor] = (value.name, shape, dtype)
                self.q[value.name] = QT(tensor, shape, None, None)
            else:
                raise OnnxImportError(f"input {value.name!r} is of ONNX type {elem}; the "
                                      f"importer takes float32, int8 or uint8 inputs")

    def _const(self, name, what):
        if name not in self.consts:
            raise UnsupportedNode(f"its {what} {name!r} is not a constant")
        return self.consts[name]

    def _scalar(self, name, what):
        value = np.asarray(self._const(name, what))
        if value.size != 1:
            raise UnsupportedNode(f"its {what} {name!r} has {value.size} values; the importer "
                                  f"takes one per tensor here")
        return value.reshape(()).item()

    def _zero(self, name, tensor, default=np.uint8):
        """The zero point ``name`` of the integer ``tensor`` as the device's int8 (uint8 moved
        by −128). Without one it is 0 of ``tensor``'s type (ONNX's default; ``default`` when
        the model does not say the type). Types other than int8 and uint8 are refused: their
        values do not fit the device's int8."""
        if name:
            value = np.asarray(self._const(name, "zero point"))
            if value.size != 1:
                raise UnsupportedNode(f"its zero point {name!r} has {value.size} values; "
                                      f"activations take one per tensor")
        else:
            value = np.zeros((), self.types.get(tensor, default))
        if value.dtype not in (np.int8, np.uint8):
            raise UnsupportedNode(f"its tensor {tensor!r} is {value.dtype}; the device computes "
                                  f"int8 (and uint8, held as int8) activations only")
        return int(value.reshape(())) - (128 if value.dtype == np.uint8 else 0)

    def _out_zero(self, node, name):
        """The zero point ``name`` of an operator-form node's output; without one, 0 of the
        output's type, which is its input's where the model does not say."""
        return self._zero(name, node.output[0], self.types.get(node.input[0], np.uint8))

    def _int_dtype(self, name):
        """int8 or uint8: the element type of the model's integer output ``name``."""
        for value in list(self.graph.output) + list(self.graph.value_info):
            if value.name == name:
                elem = value.type.tensor_type.elem_type
                return "uint8" if elem == self.onnx.TensorProto.UINT8 else "int8"
        return "int8"
