"""The host's side of a network's inputs and outputs: what a user hands in and gets back when
that is not the device's int8 NCHW tensor (docs/network-format.md, "Host steps").

An imported model (docs/onnx.md) takes what its own runtime takes, e.g. a float32 ``[N, 64]``
array for a QDQ model, and the device takes int8 ``[N, 64, 1, 1]``. A :class:`HostInput` says how
the host turns the one into the other (quantize: ``clip(round_half_even(x / scale) +
zero_point, −128, 127)``, as ONNX QuantizeLinear does, then reshape), a :class:`HostOutput` how
the device's int8 output becomes the model's output (dequantize: ``(q − zero_point) · scale`` in
float32, as DequantizeLinear does; or uint8 ``q + 128``; or the int8 values as they are).

Zero points are the device's: int8. A model's uint8 tensor ``u`` is held on the device as the
int8 ``u − 128`` with its zero point moved by −128, which is the same real number.
"""

from dataclasses import dataclass

import numpy as np

from avta.errors import UserError

__all__ = ["HostInput", "HostOutput", "DTYPES", "to_device", "from_device", "shared_source"]

#: What a host step hands in or out: float32 (quantized/dequantized), or int8/uint8 values.
DTYPES = ("float32", "int8", "uint8")


#: The largest float32: a scale above it is infinite where the host computes.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


class HostIOError(UserError):
    """An array that does not fit a network's host step; the message names the tensor."""


def _check(spec, what):
    if spec.dtype not in DTYPES:
        raise HostIOError(f"{what} {spec.name!r}: dtype {spec.dtype!r} is not one of "
                          f"{', '.join(DTYPES)}")
    if spec.dtype == "float32":
        if spec.scale is None or not spec.scale > 0 or spec.zero_point is None:
            raise HostIOError(f"{what} {spec.name!r}: a float32 tensor needs a positive scale "
                              f"and a zero point")
        if not (spec.scale <= _FLOAT32_MAX and np.float32(spec.scale) > 0):
            raise HostIOError(f"{what} {spec.name!r}: scale {spec.scale} is 0 or infinite in "
                              f"float32, which the host computes in")
        if not -128 <= spec.zero_point <= 127:
            raise HostIOError(f"{what} {spec.name!r}: zero point {spec.zero_point} is not int8")
    if not spec.shape or min(spec.shape) < 1:
        raise HostIOError(f"{what} {spec.name!r}: shape {list(spec.shape)} must be positive")


@dataclass(frozen=True)
class HostInput:
    """How the host makes the device tensor from the model's input ``name`` of ``shape`` and
    ``dtype`` (float32: quantized with ``scale`` and the int8 ``zero_point``); then ``pad``
    rows and columns of ``pad_value`` on every side (the padding of a first convolution whose
    input's zero point the accelerator cannot pad with, docs/onnx.md)."""
    name: str
    shape: tuple
    dtype: str = "int8"
    scale: float = None
    zero_point: int = None
    pad: int = 0
    pad_value: int = 0

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(v) for v in self.shape))
        _check(self, "host input")
        if not 0 <= self.pad <= 15 or not -128 <= self.pad_value <= 127:
            raise HostIOError(f"host input {self.name!r}: pad {self.pad} must be 0..15 and "
                              f"pad_value {self.pad_value} int8")

    def unpadded(self, device_shape):
        """The device tensor's shape before the host's padding."""
        n, c, h, w = device_shape
        return n, c, h - 2 * self.pad, w - 2 * self.pad

    def apply(self, x, device_shape):
        """The int8 device tensor of ``device_shape`` for the model's input ``x``."""
        x = np.asarray(x)
        if x.dtype != np.dtype(self.dtype) or tuple(x.shape) != self.shape:
            raise HostIOError(f"input {self.name!r} is {self.dtype} {list(self.shape)}; got "
                              f"{x.dtype} {list(x.shape)}")
        if self.dtype == "float32":
            if not np.isfinite(x).all():
                bad = np.argwhere(~np.isfinite(x))[0]
                raise HostIOError(f"input {self.name!r} holds {x[tuple(bad)]} at "
                                  f"{tuple(int(i) for i in bad)}; a model's input must be finite")
            q = np.rint(x / np.float32(self.scale)) + self.zero_point
            x = np.clip(q, -128, 127).astype(np.int8)
        elif self.dtype == "uint8":
            x = (x.astype(np.int16) - 128).astype(np.int8)
        return self.pad_int8(x.reshape(self.unpadded(device_shape)))

    def pad_int8(self, x):
        """The int8 device tensor ``x`` (before the host's padding) with the padding added."""
        if not self.pad:
            return x
        p = self.pad
        return np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=self.pad_value)


@dataclass(frozen=True)
class HostOutput:
    """How the host makes the model's output ``name`` of ``shape`` and ``dtype`` from the
    device tensor (float32: dequantized with ``scale`` and the int8 ``zero_point``)."""
    name: str
    shape: tuple
    dtype: str = "int8"
    scale: float = None
    zero_point: int = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(v) for v in self.shape))
        _check(self, "host output")

    def apply(self, q):
        """The model's output for the device's int8 tensor ``q``."""
        q = np.asarray(q, np.int8).reshape(self.shape)
        if self.dtype == "float32":
            return ((q.astype(np.int32) - self.zero_point).astype(np.float32)
                    * np.float32(self.scale))
        if self.dtype == "uint8":
            return (q.astype(np.int16) + 128).astype(np.uint8)
        return q


def shared_source(graph):
    """The model input's name when the host makes several of ``graph``'s device inputs from
    one model input (padded for one reader, unpadded for another); else None."""
    specs = [graph.host_inputs.get(tensor) for tensor in graph.inputs]
    if len(specs) < 2 or None in specs or len({s.name for s in specs}) != 1:
        return None
    return specs[0].name


def to_device(graph, x):
    """The int8 device input(s) of ``graph`` for the model's input(s) ``x``: an array for a
    graph with one input, or one model input that feeds several device inputs (then a dict of
    them comes back); else a dict by device tensor name. Host inputs are converted, other
    inputs pass as they are."""
    if not isinstance(x, dict):
        if shared_source(graph) is not None:
            return {tensor: spec.apply(x, graph.inputs[tensor])
                    for tensor, spec in graph.host_inputs.items()}
        if len(graph.inputs) != 1:
            raise HostIOError(f"network {graph.name!r} has inputs {list(graph.inputs)}; give "
                              f"an array for each")
        x = {next(iter(graph.inputs)): x}
        single = True
    else:
        single = False
    arrays = dict(x)
    for tensor, spec in graph.host_inputs.items():
        if tensor in arrays:
            arrays[tensor] = spec.apply(arrays[tensor], graph.inputs[tensor])
    return next(iter(arrays.values())) if single else arrays


def from_device(graph, outputs):
    """The model's outputs ``{model name: array}`` for the device outputs ``{tensor: int8}``:
    host outputs converted and renamed, others as they are."""
    result = {}
    for tensor, value in outputs.items():
        spec = graph.host_outputs.get(tensor)
        result[tensor if spec is None else spec.name] = value if spec is None \
            else spec.apply(value)
    return result
