"""Calibration done once, across processes: the shifts :func:`.calibrate.calibrate` picks, on disk.

Calibrating a network runs it whole on the host (ResNet-18 at 224×224: about a second and a
half, ten times the time to build the network), and every ``avta run``, ``profile`` and sweep
point of a built-in network calibrates it again. The shifts are a pure function of what
:func:`calibration_key` hashes: the graph (every node's operator, tensors, attributes, weights,
bias and requantization, the inputs and outputs), the calibration input, the percentile and the
sources that compute them (:func:`avta.runtime.build_cache.runtime_digest`). So each entry is
``calibration/<key>.json`` under the cache folder (:func:`avta.files.cache_root`): the shift of
every node calibration chose, written atomically and read through
:func:`avta.files.read_record` (a damaged or foreign entry is calibrated again).
``AVTA_PROGRAM_CACHE=0`` turns it off with the program cache.
"""

import dataclasses
import hashlib
import json

import numpy as np

from avta.files import cache_root, read_record, write_atomic

from ..build_cache import enabled, runtime_digest
from .calibrate import calibrate
from .graph import GraphError

__all__ = ["calibrate_cached", "calibration_key"]

_FIELDS = {"key": str, "shifts": dict}


def _array(digest, value):
    if value is None:
        digest.update(b"none\0")
        return
    value = np.ascontiguousarray(value)
    digest.update(f"{value.dtype.str}{value.shape}\0".encode())
    digest.update(value.tobytes())


def calibration_key(graph, x, percentile):
    """The key (hex) of :func:`calibrate` of ``graph`` on ``x`` (an array, or a dict by input
    name) at ``percentile``; ``None`` for a graph with host steps (never cached)."""
    if graph.host_inputs or graph.host_outputs:
        return None
    digest = hashlib.sha256(json.dumps(
        {"graph": graph.name, "inputs": {k: list(v) for k, v in graph.inputs.items()},
         "outputs": list(graph.outputs), "percentile": repr(percentile),
         "sources": runtime_digest()}, sort_keys=True).encode())
    for node in graph.nodes:
        digest.update(repr((node.name, node.op, node.inputs, node.output,
                            sorted(node.attrs.items()), node.requant)).encode())
        _array(digest, node.weights)
        _array(digest, node.bias)
    for name, value in sorted(x.items()) if isinstance(x, dict) else [("", x)]:
        digest.update(name.encode() + b"\0")
        _array(digest, value)
    return digest.hexdigest()[:32]


def _apply(graph, shifts):
    """``graph`` with the ``shifts`` of the record, or None when they do not fit it."""
    nodes = {}
    for name, shift in shifts.items():
        try:
            node = graph.node(name)
            if node.requant is None or isinstance(shift, bool) or not isinstance(shift, int):
                return None
            nodes[name] = node.replace(requant=dataclasses.replace(node.requant, shift=shift))
        except (KeyError, GraphError, ValueError):     # a foreign record: unknown nodes, bad shifts
            return None
    return graph.replace_nodes(nodes)


def calibrate_cached(graph, x, *, percentile=99.9):
    """:func:`calibrate` of ``graph`` on ``x``, its shifts read from the cache when they were
    chosen before (the result is the same graph)."""
    key = calibration_key(graph, x, percentile) if enabled() else None
    if key is None:
        return calibrate(graph, x, percentile=percentile)
    path = cache_root() / "calibration" / f"{key}.json"
    record = read_record(path, key, _FIELDS)
    if record is not None:
        graph_read = _apply(graph, record["shifts"])
        if graph_read is not None:
            return graph_read
    calibrated = calibrate(graph, x, percentile=percentile)
    shifts = {node.name: node.requant.shift for node in calibrated.nodes
              if node.requant is not None}
    try:
        write_atomic(path, json.dumps({"key": key, "shifts": shifts}))
    except OSError:
        pass                        # a cache that cannot be written only costs the next run
    return calibrated
