"""A network as a graph of named int8 NCHW tensors and the nodes that produce them
(:mod:`avta.runtime.net.node` says what each node kind means).

Every tensor is int8 and shaped ``[N, C, H, W]``; a graph has named inputs, nodes (each reads
one or two tensors and writes one) and named outputs.

A :class:`Graph` is checked when it is made (and so when :mod:`avta.runtime.net.io` loads it):
every tensor used is a graph input or produced by exactly one node, nodes form no cycle, every
weight is there with its dtype and a shape that fits the input, and every output shape is at
least 1×1. A :class:`GraphError` names the node and the rule it breaks. :class:`GraphBuilder`
builds a graph node by node, checking each as it is added.
"""

import numpy as np

from .node import OPS, GraphError, Node, OpSpec, check_name, infer_shape, node_macs

__all__ = ["GraphError", "OpSpec", "OPS", "Node", "Graph", "GraphBuilder", "infer_shape",
           "node_macs"]


def _cycle(pending, producer):
    """A cycle among the nodes ``pending`` (none of which can run): from the first, follow an
    input produced by a pending node until a node comes back; the cycle, closed, in the
    direction the data flows."""
    waiting = {node.name for node in pending}
    path, node = [], pending[0]
    while node not in path:
        path.append(node)
        node = next(producer[t] for t in node.inputs
                    if t in producer and producer[t].name in waiting)
    return (path[path.index(node):] + [node])[::-1]


def _shape(value, what):
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        shape = ()
    if len(shape) != 4 or min(shape) < 1 or any(
            isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value):
        raise GraphError(f"{what} has shape {value!r}; a tensor is [N, C, H, W] of positive "
                         f"integers")
    return shape


class Graph:
    """A checked network: ``inputs`` (tensor name → ``[N, C, H, W]``), ``nodes`` (any order;
    kept in a topological order, the given order wherever it already is one) and ``outputs``
    (tensor names).

    Attributes: ``name``, ``inputs`` (dict), ``nodes`` (tuple, topological), ``outputs``
    (tuple), ``shapes`` (every tensor's shape, inputs first), ``host_inputs`` and
    ``host_outputs`` (tensor name → :class:`~avta.runtime.net.host_io.HostInput` /
    ``HostOutput``: what the host does before and after the device, for imported models)."""

    def __init__(self, name, inputs, nodes, outputs, *, host_inputs=None, host_outputs=None):
        check_name(name, "graph")
        self.name = name
        if not inputs:
            raise GraphError(f"graph {name!r} has no inputs")
        self.inputs = {}
        for tensor, shape in dict(inputs).items():
            check_name(tensor, "input tensor")
            self.inputs[tensor] = _shape(shape, f"input {tensor!r}")
        nodes = list(nodes)
        for node in nodes:
            if not isinstance(node, Node):
                raise GraphError(f"graph {name!r}: {node!r} is not a Node")
        self.nodes = tuple(self._order(nodes))
        outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
        if not outputs:
            raise GraphError(f"graph {name!r} has no outputs")
        self.shapes = dict(self.inputs)
        for node in self.nodes:
            self.shapes[node.output] = infer_shape(node, [self.shapes[t] for t in node.inputs])
        for tensor in outputs:
            if tensor not in self.shapes:
                raise GraphError(f"graph {name!r}: output {tensor!r} is neither an input nor "
                                 f"produced by any node")
        if len(set(outputs)) != len(outputs):
            raise GraphError(f"graph {name!r}: outputs {list(outputs)} name a tensor twice")
        self.outputs = outputs
        self.host_inputs = self._host_steps(host_inputs, self.inputs, "input")
        self.host_outputs = self._host_steps(host_outputs, outputs, "output")
        self._by_name = {node.name: node for node in self.nodes}
        self._producer = {node.output: node for node in self.nodes}

    def _host_steps(self, steps, tensors, what):
        steps = dict(steps or {})
        for tensor, spec in steps.items():
            if tensor not in tensors:
                raise GraphError(f"graph {self.name!r}: host {what} step for {tensor!r}, which "
                                 f"is not a graph {what}")
            shape = self.shapes[tensor]
            size = int(np.prod(spec.unpadded(shape) if hasattr(spec, "unpadded") else shape))
            if int(np.prod(spec.shape)) != size:
                raise GraphError(f"graph {self.name!r}: host {what} {spec.name!r} "
                                 f"{list(spec.shape)} has another number of values than "
                                 f"tensor {tensor!r} {list(self.shapes[tensor])}")
        return steps

    def _order(self, nodes):
        """Kahn's algorithm, taking the earliest ready node first; checks that names are unique,
        each tensor has one producer, every tensor used exists, and there is no cycle."""
        names, producer = set(), {}
        for node in nodes:
            if node.name in names:
                raise GraphError(f"node name {node.name!r} is used by two nodes; names must be "
                                 f"unique")
            names.add(node.name)
            if node.output in self.inputs:
                raise GraphError(f"{node.op} node {node.name!r} writes {node.output!r}, which is "
                                 f"a graph input; a tensor has one producer")
            if node.output in producer:
                raise GraphError(f"{node.op} node {node.name!r} writes {node.output!r}, which "
                                 f"node {producer[node.output].name!r} already writes; a tensor "
                                 f"has one producer")
            producer[node.output] = node
        for node in nodes:
            for tensor in node.inputs:
                if tensor not in producer and tensor not in self.inputs:
                    raise GraphError(f"{node.op} node {node.name!r} reads tensor {tensor!r}, "
                                     f"which is neither a graph input nor produced by any node "
                                     f"(a dangling tensor)")
        done, order, pending = set(self.inputs), [], list(nodes)
        while pending:
            for i, node in enumerate(pending):
                if all(t in done for t in node.inputs):
                    break
            else:
                cycle = " -> ".join(repr(n.name) for n in _cycle(pending, producer))
                raise GraphError(f"graph {self.name!r}: nodes {cycle} form a cycle; a network "
                                 f"is acyclic")
            order.append(pending.pop(i))
            done.add(node.output)
        return order

    # -- queries ---------------------------------------------------------------------------------

    def topological(self):
        """The nodes in an order where each comes after the producers of its inputs."""
        return list(self.nodes)

    def node(self, name):
        """The node called ``name`` (``KeyError`` if none)."""
        return self._by_name[name]

    def producer(self, tensor):
        """The node that writes ``tensor``, or ``None`` for a graph input."""
        if tensor in self.inputs:
            return None
        return self._producer[tensor]

    def consumers(self, tensor):
        """The nodes that read ``tensor``, in topological order."""
        return [node for node in self.nodes if tensor in node.inputs]

    def input_shapes(self, node):
        """The shapes of ``node``'s inputs."""
        node = self.node(node) if isinstance(node, str) else node
        return [self.shapes[t] for t in node.inputs]

    def output_shape(self, node):
        """The shape of the tensor ``node`` writes."""
        node = self.node(node) if isinstance(node, str) else node
        return self.shapes[node.output]

    def macs(self, node=None):
        """Multiply-accumulates of one node (see :func:`node_macs`), or of the whole graph."""
        if node is None:
            return sum(self.macs(n) for n in self.nodes)
        node = self.node(node) if isinstance(node, str) else node
        return node_macs(node, self.input_shapes(node))

    def params(self):
        """How many weights and biases the graph holds."""
        return sum((0 if n.weights is None else n.weights.size)
                   + (0 if n.bias is None else n.bias.size) for n in self.nodes)

    def layers(self):
        """One dict per node in topological order: name, op, inputs, input (the first input's
        shape), output (shape), weights (shape or None), attrs, macs."""
        return [dict(name=n.name, op=n.op, inputs=list(n.inputs), input=self.shapes[n.inputs[0]],
                     output=self.shapes[n.output],
                     weights=None if n.weights is None else tuple(n.weights.shape),
                     attrs=dict(n.attrs), macs=self.macs(n)) for n in self.nodes]

    def summary(self):
        """A text table of :meth:`layers` with the total MACs and parameters."""
        lines = [f"{self.name}: inputs " + ", ".join(f"{k} {list(v)}" for k, v in
                                                      self.inputs.items())]
        for row in self.layers():
            shape = "x".join(map(str, row["output"]))
            weights = "" if row["weights"] is None else "x".join(map(str, row["weights"]))
            lines.append(f"  {row['name']:<28} {row['op']:<16} {shape:<18} {weights:<18} "
                         f"{row['macs']:>13,}")
        lines.append(f"  total {self.macs():,} MACs, {self.params():,} parameters")
        return "\n".join(lines)

    def replace_nodes(self, nodes):
        """A new graph with some nodes replaced: ``nodes`` maps node names to new nodes."""
        unknown = sorted(set(nodes) - set(self._by_name))
        if unknown:
            raise GraphError(f"graph {self.name!r} has no node(s) {unknown}")
        return Graph(self.name, self.inputs, [nodes.get(n.name, n) for n in self.nodes],
                     self.outputs, host_inputs=self.host_inputs, host_outputs=self.host_outputs)

    def __eq__(self, other):
        if not isinstance(other, Graph):
            return NotImplemented
        return (self.name, self.inputs, self.outputs, self.host_inputs, self.host_outputs) == \
            (other.name, other.inputs, other.outputs, other.host_inputs, other.host_outputs) \
            and len(self.nodes) == len(other.nodes) \
            and all(a == b for a, b in zip(self.nodes, other.nodes))

    __hash__ = None

    def __repr__(self):
        return (f"Graph({self.name!r}, {len(self.nodes)} nodes, inputs "
                f"{ {k: list(v) for k, v in self.inputs.items()} }, outputs {list(self.outputs)})")


class GraphBuilder:
    """Builds a :class:`Graph` node by node; each method checks its node against what exists
    (so an error points at the line that added it) and returns the output tensor's name.

    >>> b = GraphBuilder("tiny")
    >>> x = b.input("data", (1, 3, 8, 8))
    >>> y = b.max_pool("pool", x, k=2, stride=2)
    >>> b.shape(y)
    (1, 3, 4, 4)
    >>> graph = b.build([y])
    """

    def __init__(self, name):
        self.name = name
        self._inputs, self._nodes, self._shapes = {}, [], {}

    def input(self, name, shape):
        check_name(name, "input tensor")
        if name in self._shapes:
            raise GraphError(f"tensor {name!r} already exists")
        self._inputs[name] = self._shapes[name] = _shape(shape, f"input {name!r}")
        return name

    def shape(self, tensor):
        """The shape of a tensor built so far."""
        return self._shapes[tensor]

    def add_node(self, node):
        """Add a :class:`Node` (its inputs must exist already); returns its output tensor."""
        if any(n.name == node.name for n in self._nodes):
            raise GraphError(f"node name {node.name!r} is used by two nodes; names must be "
                             f"unique")
        if node.output in self._shapes:
            raise GraphError(f"{node.op} node {node.name!r} writes {node.output!r}, which "
                             f"already exists; a tensor has one producer")
        for tensor in node.inputs:
            if tensor not in self._shapes:
                raise GraphError(f"{node.op} node {node.name!r} reads tensor {tensor!r}, which "
                                 f"is neither a graph input nor produced by any node (a "
                                 f"dangling tensor)")
        self._shapes[node.output] = infer_shape(node, [self._shapes[t] for t in node.inputs])
        self._nodes.append(node)
        return node.output

    def conv2d(self, name, x, weights, bias=None, *, stride=1, pad=0, requant=None):
        return self.add_node(Node(name, "conv2d", (x,), attrs=dict(stride=stride, pad=pad),
                                  weights=weights, bias=bias, requant=requant))

    def depthwise(self, name, x, weights, bias=None, *, stride=1, pad=0, requant=None):
        return self.add_node(Node(name, "depthwise", (x,), attrs=dict(stride=stride, pad=pad),
                                  weights=weights, bias=bias, requant=requant))

    def dense(self, name, x, weights, bias=None, *, requant=None):
        return self.add_node(Node(name, "dense", (x,), weights=weights, bias=bias,
                                  requant=requant))

    def max_pool(self, name, x, *, k, stride=None, pad=0):
        return self.add_node(Node(name, "max_pool", (x,),
                                  attrs=dict(k=k, stride=k if stride is None else stride,
                                             pad=pad)))

    def avg_pool(self, name, x, *, k, stride=None, pad=0, requant=None):
        return self.add_node(Node(name, "avg_pool", (x,),
                                  attrs=dict(k=k, stride=k if stride is None else stride,
                                             pad=pad), requant=requant))

    def global_avg_pool(self, name, x, *, requant=None):
        return self.add_node(Node(name, "global_avg_pool", (x,), requant=requant))

    def add(self, name, a, b, *, requant=None):
        return self.add_node(Node(name, "add", (a, b), requant=requant))

    def build(self, outputs):
        """The finished :class:`Graph` with these output tensors."""
        return Graph(self.name, self._inputs, self._nodes, outputs)
