"""Networks on disk: the structure in YAML, the weights in a sidecar ``.npz``
(docs/network-format.md).

``save(graph, "net.yaml")`` writes ``net.yaml`` and ``net.npz`` beside it; the YAML names the
weights file by a path relative to itself, and each node lists the shapes of its arrays, which
are stored in the ``.npz`` under ``<node name>.weights`` and ``<node name>.bias``. ``load`` checks
the file (unknown keys, missing or extra arrays, shapes and dtypes) and then the graph
(:class:`~avta.runtime.net.graph.Graph`); every error is a :class:`GraphError` naming the file
and the node.
"""

import io
import zipfile
from pathlib import Path

import numpy as np
import yaml

from avta.errors import UserError, read_input
from avta.files import output_files
from avta.isa.config import ConfigError, load_yaml_unique

from ..ops.requant import Requant
from .graph import OPS, Graph, GraphError, Node
from .host_io import HostInput, HostOutput

__all__ = ["FORMAT", "save", "load", "to_yaml", "from_yaml", "source_files"]

#: The value of the ``format`` key; a later incompatible format changes the number.
FORMAT = "avta-network/1"
_TOP_KEYS = ("format", "name", "weights", "inputs", "outputs", "host", "nodes")
_OPTIONAL_KEYS = ("weights", "host")
_HOST_KEYS = ("name", "shape", "dtype", "scale", "zero_point", "pad", "pad_value")
_NODE_KEYS = ("name", "op", "inputs", "output", "weights", "bias", "requant")
_ARRAYS = {"weights": np.int8, "bias": np.int32}
_REQUANT_KEYS = ("shift", "clip", "use_clp", "bias_first", "offset", "scale", "zero_point",
                 "multiplier", "pre_shift", "shifts", "offsets", "multiplier_bits", "multiplier2",
                 "pre_offset")


def _requant_dict(q):
    out = {"shift": q.shift}
    if q.clip is not None:
        out["clip"] = list(q.clip)
    if q.use_clp:
        out["use_clp"] = True
    if q.bias_first:
        out["bias_first"] = True
    if q.offset:
        out["offset"] = q.offset
    if q.scale is not None:
        out["scale"] = float(q.scale)
    if q.zero_point:
        out["zero_point"] = q.zero_point
    if q.multiplier is not None:
        out["multiplier"] = list(q.multiplier) if q.per_channel else q.multiplier
    if q.pre_shift:
        out["pre_shift"] = q.pre_shift
    if q.per_channel:
        out["shifts"], out["offsets"] = list(q.shifts), list(q.offsets)
    if q.multiplier_bits != 16:             # older files have none of these: their defaults
        out["multiplier_bits"] = q.multiplier_bits
    if q.multiplier2 is not None:
        out["multiplier2"] = q.multiplier2
    if q.pre_offset:
        out["pre_offset"] = q.pre_offset
    return out


def _node_dict(node):
    out = {"name": node.name, "op": node.op, "inputs": list(node.inputs)}
    if node.output != node.name:
        out["output"] = node.output
    out.update(node.attrs)
    for key in _ARRAYS:
        value = getattr(node, key)
        if value is not None:
            out[key] = list(value.shape)
    if node.requant is not None:
        out["requant"] = _requant_dict(node.requant)
    return out


def _host_dict(spec):
    out = {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype}
    if spec.scale is not None:
        out.update(scale=float(spec.scale), zero_point=int(spec.zero_point))
    if getattr(spec, "pad", 0):
        out.update(pad=spec.pad, pad_value=spec.pad_value)
    return out


def _host(value, source):
    """The ``host:`` mapping: ``{inputs: {tensor: step}, outputs: {tensor: step}}``."""
    if not isinstance(value, dict) or set(value) - {"inputs", "outputs"}:
        _fail(source, f"host must be a mapping with inputs and/or outputs, not {value!r}")
    steps = {}
    for key, kind in (("inputs", HostInput), ("outputs", HostOutput)):
        steps[key] = {}
        for tensor, item in (value.get(key) or {}).items():
            where = f"host {key[:-1]} {tensor!r}"
            keys = _HOST_KEYS if kind is HostInput else _HOST_KEYS[:5]
            if not isinstance(item, dict) or set(item) - set(keys) or "name" not in item \
                    or "shape" not in item:
                _fail(source, f"{where} must be a mapping with the keys "
                              f"{', '.join(keys)} (name and shape required): {item!r}")
            try:
                steps[key][tensor] = kind(**item)
            except (TypeError, ValueError, UserError) as error:
                _fail(source, f"{where}: {error}")
    return steps


def _flow(value):
    """``value`` as one line of flow-style YAML (a scalar is dumped inside a list, which is
    then taken off, so that no document-end marker follows it)."""
    text = yaml.safe_dump(value if isinstance(value, (list, dict)) else [value],
                          default_flow_style=True, sort_keys=False, width=float("inf")).strip()
    return text if isinstance(value, (list, dict)) else text[1:-1]


def to_yaml(graph, weights_file):
    """The YAML text of ``graph``, naming ``weights_file`` (relative to the YAML) as its
    arrays; one node per line in topological order."""
    lines = [f"# {graph.name}: {len(graph.nodes)} nodes, {graph.macs():,} MACs, "
             f"{graph.params():,} parameters",
             f"format: {FORMAT}",
             f"name: {_flow(graph.name)}",
             f"weights: {_flow(str(weights_file))}",
             "inputs:"]
    lines += [f"  {_flow(name)}: {_flow(list(shape))}" for name, shape in graph.inputs.items()]
    lines.append(f"outputs: {_flow(list(graph.outputs))}")
    if graph.host_inputs or graph.host_outputs:
        lines.append("host:")
        for key, steps in (("inputs", graph.host_inputs), ("outputs", graph.host_outputs)):
            if steps:
                lines.append(f"  {key}:")
                lines += [f"    {_flow(tensor)}: {_flow(_host_dict(spec))}"
                          for tensor, spec in steps.items()]
    lines.append("nodes:" if graph.nodes else "nodes: []")
    lines += [f"  - {_flow(_node_dict(node))}" for node in graph.nodes]
    return "\n".join(lines) + "\n"


def _arrays(graph):
    return {f"{node.name}.{key}": getattr(node, key)
            for node in graph.nodes for key in _ARRAYS if getattr(node, key) is not None}


def save(graph, path):
    """Write ``graph`` to ``path`` (YAML) and its weights to ``path`` with the suffix ``.npz``.
    Returns the two paths. Both are written whole to temporaries before either replaces an
    old file (:func:`avta.files.output_files`; the weights first, then the YAML that names
    them), so a failure while writing (a full disk) leaves the old pair as it was."""
    path = Path(path)
    weights = path.with_suffix(".npz")
    if weights == path:
        raise GraphError(f"network file {str(path)!r} must not end in .npz (that is where its "
                         f"weights go)")
    text = to_yaml(graph, weights.name)
    # np.savez would append .npz to a name without it, and numpy writes arrays to a real file
    # with fwrite, which does not notice a full disk: the archive is made in memory.
    archive = io.BytesIO()
    np.savez(archive, **_arrays(graph))
    with output_files(weights, path) as (weights_tmp, path_tmp):
        weights_tmp.write_bytes(archive.getvalue())
        path_tmp.write_text(text)
    return path, weights


def _fail(source, message):
    raise GraphError(f"{source}: {message}")


def _requant(value, source, where):
    if not isinstance(value, dict):
        _fail(source, f"{where}: requant must be a mapping {{shift, clip, use_clp}}, not "
                      f"{value!r}")
    unknown = sorted(set(value) - set(_REQUANT_KEYS))
    if unknown:
        _fail(source, f"{where}: unknown requant key(s) {unknown}; the keys are "
                      + ", ".join(_REQUANT_KEYS))
    clip = value.get("clip")
    if clip is not None:
        if not isinstance(clip, (list, tuple)) or len(clip) != 2:
            _fail(source, f"{where}: requant clip {clip!r} must be [lo, hi]")
        clip = tuple(clip)
    try:
        scale = value.get("scale")
        multiplier, shifts, offsets = (_tuple(value.get(key))
                                       for key in ("multiplier", "shifts", "offsets"))
        return Requant(value.get("shift", 0), clip, bool(value.get("use_clp", False)),
                       bool(value.get("bias_first", False)), value.get("offset", 0),
                       None if scale is None else float(scale), value.get("zero_point", 0),
                       multiplier, value.get("pre_shift", 0), shifts, offsets,
                       multiplier_bits=value.get("multiplier_bits", 16),
                       multiplier2=value.get("multiplier2"),
                       pre_offset=value.get("pre_offset", 0))
    except (TypeError, ValueError) as error:
        _fail(source, f"{where}: {error}")


def _names(value, source, what):
    """``value``, a list of tensor names (or one name), as a tuple (or the name)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        _fail(source, f"{what} is {value!r}; give a list of tensor names")
    return tuple(value)
def _tuple(value):
    """A YAML list as a tuple (a per-channel field); anything else as it is."""
    return tuple(value) if isinstance(value, list) else value


def from_yaml(text, arrays, source="network"):
    """The :class:`Graph` that the YAML ``text`` describes, taking its arrays from ``arrays``
    (a mapping of ``.npz`` keys to numpy arrays); ``source`` names the file in errors."""
    doc = _parse(text, source)
    if not isinstance(doc, dict):
        _fail(source, "a network file is a YAML mapping with the keys " + ", ".join(_TOP_KEYS))
    if doc.get("format") != FORMAT:
        _fail(source, f"format is {doc.get('format')!r}; this reader knows {FORMAT!r}")
    unknown = sorted(set(doc) - set(_TOP_KEYS))
    missing = [k for k in _TOP_KEYS if k not in doc and k not in _OPTIONAL_KEYS]
    if unknown or missing:
        _fail(source, f"unknown key(s) {unknown} / missing key(s) {missing}; the keys are "
                      + ", ".join(_TOP_KEYS))
    if not isinstance(doc["inputs"], dict):
        _fail(source, "inputs must map tensor names to [N, C, H, W]")
    if not isinstance(doc["nodes"], list):
        _fail(source, "nodes must be a list")
    used, nodes = set(), []
    for i, item in enumerate(doc["nodes"]):
        if not isinstance(item, dict) or "name" not in item or "op" not in item:
            _fail(source, f"node #{i} must be a mapping with at least name and op: {item!r}")
        name, op = item["name"], item["op"]
        where = f"node {name!r}"
        spec = OPS.get(op)
        if spec is None:
            _fail(source, f"{where}: unknown op {op!r}; the ops are {', '.join(OPS)}")
        keys = ["name", "op", "inputs", "output", *(k for k in _ARRAYS if getattr(spec, k)),
                *(["requant"] if spec.requant else []), *spec.attrs]
        unknown = [k for k in item if k not in keys]
        if unknown:
            _fail(source, f"{op} {where}: unknown key(s) {unknown}; a {op} node takes "
                          f"{', '.join(keys)}")
        fields = {}
        for key, dtype in _ARRAYS.items():
            if key not in item:
                continue
            array_key = f"{name}.{key}"
            if array_key not in arrays:
                _fail(source, f"{op} {where}: its {key} {array_key!r} are not in the weights "
                              f"file")
            array = np.asarray(arrays[array_key])
            if list(array.shape) != list(item[key]):
                _fail(source, f"{op} {where}: {key} have shape {list(array.shape)} in the "
                              f"weights file but {item[key]} in the network file")
            fields[key] = array
            used.add(array_key)
        requant = None
        if "requant" in item:
            requant = _requant(item["requant"], source, f"{op} {where}")
        inputs = _names(item.get("inputs", []), source, f"{op} {where}: inputs")
        try:
            nodes.append(Node(name, op, inputs,
                              item.get("output"),
                              {k: v for k, v in item.items() if k in spec.attrs},
                              requant=requant, **fields))
        except GraphError as error:
            _fail(source, str(error))
    extra = sorted(set(arrays) - used)
    if extra:
        _fail(source, f"the weights file holds arrays no node names: {extra}")
    host = _host(doc["host"], source) if doc.get("host") is not None else {}
    outputs = _names(doc["outputs"], source, "outputs")
    try:
        return Graph(doc["name"], doc["inputs"], nodes, outputs,
                     host_inputs=host.get("inputs"), host_outputs=host.get("outputs"))
    except GraphError as error:
        _fail(source, str(error))


def _parse(text, source):
    """The YAML document of the network file ``source``; a key given twice is an error."""
    try:
        return load_yaml_unique(text)
    except yaml.YAMLError as error:
        _fail(source, f"not valid YAML: {error}")
    except ConfigError as error:                  # a key given twice
        _fail(source, "; ".join(error.violations))


def source_files(path):
    """The files the network stored at ``path`` reads: the YAML, then the weights file it
    names (if it names one). What a cache of its results must hash."""
    path = Path(path)
    doc = _parse(read_input(path, "network file"), path)
    files = [path]
    if isinstance(doc, dict) and doc.get("weights") is not None:
        files.append(path.parent / str(doc["weights"]))
    return files


def load(path):
    """The :class:`Graph` stored at ``path`` (YAML) and the weights file it names."""
    path = Path(path)
    text = read_input(path, "network file")
    doc = _parse(text, path)
    arrays = {}
    if isinstance(doc, dict) and doc.get("weights") is not None:
        if not isinstance(doc["weights"], str):
            _fail(path, f"weights is {doc['weights']!r}; give the name of the .npz file that "
                        f"holds the arrays, relative to the network file")
        weights = path.parent / doc["weights"]
        data = read_input(weights, "weights file", binary=True)
        # np.load reads a .npy file too, as one array: only an .npz archive names its arrays.
        if not zipfile.is_zipfile(io.BytesIO(data)):
            _fail(weights, "not a numpy .npz file (numpy.savez writes one; a .npy file holds "
                           "one unnamed array)")
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                arrays = {key: npz[key] for key in npz.files}
        except (ValueError, OSError, zipfile.BadZipFile) as error:
            _fail(weights, f"not a numpy .npz file: {error}")
    return from_yaml(text, arrays, str(path))
