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

A built-in network's biases and shifts are also kept by the builder's arguments
(:func:`network_key`), so that a timing-only run, which needs no weights' values, neither draws
the weights nor hashes them (:func:`avta.runtime.net.builders.timing_graph`): entries
``networks/<key>.json``, read through :func:`avta.files.read_record` and checked against the
network they complete (every node with a bias or a requantization named once, with a value that
fits it); anything else is not used and the network is built again.
"""

import dataclasses
import hashlib
import json

import numpy as np

from avta.files import cache_root, read_record, write_atomic

from ..build_cache import enabled, runtime_digest
from .calibrate import calibrate
from .graph import GraphError

__all__ = ["calibrate_cached", "calibration_key", "network_key", "read_network_values",
           "record_network_values"]

_FIELDS = {"key": str, "shifts": dict}
_NETWORK_FIELDS = {"key": str, "biases": dict, "shifts": dict}
_INT32 = (-(1 << 31), (1 << 31) - 1)


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


def network_key(name, input_size, seed, classes, batch):
    """The key (hex) of the biases and shifts of built-in network ``name`` built with these
    arguments and calibrated, or None with the cache off. They are a pure function of the
    arguments, the sources that draw and calibrate them (the runtime's:
    :func:`~avta.runtime.build_cache.runtime_digest`) and numpy's version (its random
    generator draws the weights and biases)."""
    if not enabled():
        return None
    fields = {"network": name, "input_size": repr(input_size), "seed": repr(seed),
              "classes": repr(classes), "batch": repr(batch), "numpy": np.__version__,
              "sources": runtime_digest()}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


def _network_path(key):
    return cache_root() / "networks" / f"{key}.json"


def read_network_values(key, skeleton):
    """``skeleton`` (the network built without values) with the biases and shifts recorded for
    ``key``, or None when there is no record or it does not fit the skeleton."""
    record = read_record(_network_path(key), key, _NETWORK_FIELDS)
    if record is None:
        return None
    biases, shifts = record["biases"], record["shifts"]
    if set(biases) != {n.name for n in skeleton.nodes if n.bias is not None} or \
            set(shifts) != {n.name for n in skeleton.nodes if n.requant is not None}:
        return None
    nodes = {}
    for node in skeleton.nodes:
        changes = {}
        if node.bias is not None:
            values = biases[node.name]
            if not isinstance(values, list) or len(values) != node.bias.size or not all(
                    type(v) is int and _INT32[0] <= v <= _INT32[1] for v in values):
                return None
            changes["bias"] = np.array(values, dtype=node.bias.dtype)
        if node.requant is not None:
            shift = shifts[node.name]
            if isinstance(shift, bool) or not isinstance(shift, int):
                return None
            try:
                changes["requant"] = dataclasses.replace(node.requant, shift=shift)
            except ValueError:                  # a shift out of range
                return None
        if changes:
            nodes[node.name] = node.replace(**changes)     # one copy of the node each
    return skeleton.replace_nodes(nodes)


def record_network_values(key, graph):
    """Keep ``graph``'s biases and shifts for ``key`` (a cache that cannot be written only
    costs the next run)."""
    record = {"key": key,
              "biases": {n.name: n.bias.tolist() for n in graph.nodes if n.bias is not None},
              "shifts": {n.name: n.requant.shift for n in graph.nodes if n.requant is not None}}
    try:
        write_atomic(_network_path(key), json.dumps(record))
    except OSError:
        pass
