"""Which residual adds of a network run fused into the convolution that makes one operand
(:mod:`avta.runtime.ops.conv_residual`): the executor runs such a convolution where the add
stands, as one program that writes the add's output.

An add is fused into a ``conv2d`` input when that convolution's output is read by the add
alone (and is no network output), its kernel is wider than one pixel, it does not run over a
network input's patches, the add's other operand is another tensor, and the cycle model says
the fused layer is faster than the two programs apart
(:func:`~avta.runtime.ops.conv_add.plan_fused_add`). Results are bit for bit the same.
"""

from ..ops.conv2d import bias_bound
from ..ops.conv_add import plan_fused_add
from ..ops.conv_plan import PlanError

__all__ = ["fused_adds"]


def fused_adds(cfg, graph, conv_shape, *, host_inputs=()):
    """``{add node name: conv2d node name}`` of the adds to fuse. ``conv_shape(node)`` is the
    :class:`~avta.runtime.ops.conv_plan.Conv2dShape` the executor runs a conv2d node as;
    ``host_inputs``: the network inputs (a convolution over one may run over its patches)."""
    fused = {}
    for add in graph.topological():
        if add.op != "add" or len(set(add.inputs)) != 2:
            continue
        attrs = add.attrs
        scaled = any(attrs.get(k, 0) for k in ("scale_a", "scale_b", "scale_a2", "scale_b2"))
        for tensor in add.inputs:
            conv = graph.producer(tensor)
            if (conv is None or conv.op != "conv2d" or conv.inputs[0] in host_inputs
                    or tensor in graph.outputs or len(graph.consumers(tensor)) != 1):
                continue
            try:
                shape = conv_shape(conv)
                plan = plan_fused_add(cfg, shape, requant=conv.requant,
                                      add_requant=add.requant,
                                      has_bias=conv.bias is not None or conv.requant.per_channel,
                                      bias_bound=bias_bound(conv.bias),
                                      shift_a=attrs.get("shift_a", 0), scaled=scaled,
                                      bias_step=True)
            except (PlanError, ValueError):
                continue
            if plan.fused:
                fused[add.name] = conv.name
                break
    return fused
