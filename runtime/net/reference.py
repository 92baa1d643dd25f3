"""The numpy reference of a whole network: each node by the operator references of
:mod:`avta.runtime.ops.reference`, in plain NCHW, with no packing and no tiling.

:func:`accumulate` gives a node's exact sums before its requantization (what calibration
looks at); :func:`run_node` gives its int8 output through the operator reference, and a test
checks that ``requant.reference(accumulate(...), bias)`` is the same for every node.
"""

import numpy as np

from ..ops.reference import (add_ref, avg_pool_ref, conv2d_acc, conv2d_ref, depthwise_acc,
                             depthwise_ref, global_avg_pool_ref, matmul_ref, max_pool_ref,
                             scaled_sum, windows, wrap32)
from .graph import GraphError
from .host_io import shared_source

__all__ = ["run_node", "run_reference", "accumulate", "requantize", "random_input"]


def run_node(node, inputs):
    """The int8 output of ``node`` for its int8 input arrays (a list, in ``node.inputs``
    order)."""
    a, q = node.attrs, node.requant
    x = inputs[0]
    if node.op == "conv2d":
        return conv2d_ref(x, node.weights, node.bias, stride=a["stride"], pad=a["pad"],
                          pad_value=a.get("pad_value", 0), requant=q)
    if node.op == "depthwise":
        return depthwise_ref(x, node.weights, node.bias, stride=a["stride"], pad=a["pad"],
                             pad_value=a.get("pad_value", 0), requant=q)
    if node.op == "dense":
        out = matmul_ref(x.reshape(x.shape[0], -1), node.weights, node.bias, requant=q)
        return out.reshape(*out.shape, 1, 1)
    if node.op == "max_pool":
        return max_pool_ref(x, k=a["k"], stride=a["stride"], pad=a["pad"])
    if node.op == "avg_pool":
        return avg_pool_ref(x, k=a["k"], stride=a["stride"], pad=a["pad"], requant=q)
    if node.op == "global_avg_pool":
        return global_avg_pool_ref(x, requant=q)
    if node.op == "add":
        return add_ref(inputs[0], inputs[1], shift_a=a.get("shift_a", 0),
                       scale_a=a.get("scale_a", 0), scale_b=a.get("scale_b", 0), requant=q,
                       scale_a2=a.get("scale_a2", 0), scale_b2=a.get("scale_b2", 0))
    raise GraphError(f"node {node.name!r}: no reference for op {node.op!r}")  # pragma: no cover


def accumulate(node, inputs):
    """The int32 accumulators of ``node`` before requantization (int64 array of the output's
    shape, wrapped as the accumulator wraps); for ``max_pool``, which has no accumulator, the
    maxima."""
    a = node.attrs
    x = np.asarray(inputs[0], dtype=np.int64)
    if node.op == "conv2d":
        return wrap32(conv2d_acc(x, node.weights, stride=a["stride"], pad=a["pad"],
                                 pad_value=a.get("pad_value", 0)))
    if node.op == "depthwise":
        return depthwise_acc(x, node.weights, stride=a["stride"], pad=a["pad"],
                             pad_value=a.get("pad_value", 0))
    if node.op == "dense":
        acc = x.reshape(x.shape[0], -1) @ node.weights.astype(np.int64).T
        return wrap32(acc).reshape(*acc.shape, 1, 1)
    if node.op == "max_pool":
        return run_node(node, inputs).astype(np.int64)
    if node.op == "avg_pool":
        total = 0
        for _, _, window in windows(x, a["k"], a["k"], stride=a["stride"], pad=a["pad"]):
            total = total + window
        return wrap32(total)
    if node.op == "global_avg_pool":
        return wrap32(x.sum(axis=(2, 3), keepdims=True))
    if node.op == "add":
        if a.get("scale_a", 0):
            return scaled_sum(x, inputs[1], a["scale_a"], a.get("scale_b", 0),
                              a.get("scale_a2", 0), a.get("scale_b2", 0))
        return wrap32((x << a.get("shift_a", 0)) + np.asarray(inputs[1], dtype=np.int64))
    raise GraphError(f"node {node.name!r}: no reference for op {node.op!r}")  # pragma: no cover


def requantize(node, acc, requant=None):
    """``node``'s int8 output from its accumulators :func:`accumulate` (with ``requant`` in
    place of the node's own, if given); for ``max_pool`` the maxima as int8."""
    if node.op == "max_pool":
        return np.asarray(acc).astype(np.int8)
    requant = node.requant if requant is None else requant
    bias = None
    if node.bias is not None:
        bias = node.bias.astype(np.int64).reshape(1, -1, 1, 1)
    return requant.reference(acc, bias)


def _feeds(graph, x):
    if not isinstance(x, dict):
        if len(graph.inputs) != 1:
            raise GraphError(f"graph {graph.name!r} has inputs {list(graph.inputs)}; give a dict "
                             f"of arrays by name")
        x = {next(iter(graph.inputs)): x}
    missing = sorted(set(graph.inputs) - set(x))
    if missing:
        raise GraphError(f"graph {graph.name!r}: no array for input(s) {missing}")
    feeds = {}
    for name, shape in graph.inputs.items():
        array = np.asarray(x[name])
        if array.shape != shape or array.dtype != np.int8:
            raise GraphError(f"graph {graph.name!r}: input {name!r} must be int8 {list(shape)}, "
                             f"not {array.dtype} {list(array.shape)}")
        feeds[name] = array
    return feeds


def run_reference(graph, x, *, keep=True):
    """Run ``graph`` on ``x`` (an int8 array for a graph with one input, or a dict of arrays by
    input name). Returns ``{tensor name: int8 array}``: every tensor (inputs included), or only
    the graph's outputs with ``keep=False`` (intermediate tensors are then freed as soon as no
    node needs them)."""
    values = _feeds(graph, x)
    last_use = {}
    for i, node in enumerate(graph.nodes):
        for tensor in node.inputs:
            last_use[tensor] = i
    for i, node in enumerate(graph.nodes):
        values[node.output] = run_node(node, [values[t] for t in node.inputs])
        if not keep:
            for tensor in set(node.inputs):
                if last_use[tensor] == i and tensor not in graph.outputs:
                    del values[tensor]
    if not keep:
        return {t: values[t] for t in graph.outputs}
    return values


def random_input(graph, seed=0, *, low=-128, high=127):
    """Seeded uniform int8 arrays for every graph input: an array for a graph with one input,
    else a dict by name. Device inputs the host makes from one model input (padded apart) are
    made from one array, as the host makes them."""
    rng = np.random.default_rng(seed)
    if shared_source(graph) is not None:       # one model input, padded apart by the host
        first = next(iter(graph.inputs))
        shape = graph.host_inputs[first].unpadded(graph.inputs[first])
        base = rng.integers(low, high + 1, size=shape, dtype=np.int8)
        return {name: spec.pad_int8(base) for name, spec in graph.host_inputs.items()}
    arrays = {name: rng.integers(low, high + 1, size=shape, dtype=np.int8)
              for name, shape in graph.inputs.items()}
    return next(iter(arrays.values())) if len(arrays) == 1 else arrays
