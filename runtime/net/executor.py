"""Run a whole network on a device: every node in order, activations kept in device DRAM.

:func:`run_network` uploads every layer's weights once, then runs the nodes of a
:class:`~avta.runtime.net.graph.Graph` in topological order, each as one program of the
runtime's operators (:mod:`avta.runtime.ops`). A tensor lives in DRAM in the packed OUT layout
``(N/BATCH, C/BLOCK, H, W, BATCH, BLOCK)`` (:mod:`avta.runtime.packing`), which is what conv2d
writes and what the next conv2d reads as INP elements and the pools, the depthwise convolution
and the residual add read as ACC_8BIT elements, so nothing goes back to the host between two
layers that both run on the device. That needs BLOCK_IN = BLOCK_OUT: on a rectangular
configuration the activations of a conv2d are not in the layout it reads, and the conv2d runs on
the host (the report says so).

Shapes the accelerator needs that a real network does not have are made on the way in:

* channels are padded with zeros to a multiple of the block (ResNet's 3-channel stem runs on the
  accelerator with 13 zero channels on ``default``; a 1000-class classifier computes 1008);
  padded weights, biases and so activations are zero, so padded channels stay zero;
* the batch is padded with zero images to a multiple of BATCH;
* a fully connected layer over a ``C × H × W`` map is the conv2d whose kernel covers the map (the
  weights ``[O, C·H·W]`` reshaped to ``[O, C, H, W]``: the same flattening order);
* a convolution of a network input with fewer channels than a block (ResNet's 3-channel 7×7
  stem) runs as a 1×1 convolution over the input's patches (im2col, made by the host on the way
  in, :func:`patches`) when that pads fewer channels: 3·7·7 = 147 channels padded to 160 instead
  of 3 padded to 16 for each of the 49 kernel positions, a fifth of the MACs on ``default``; the
  sums are the same products, so the result is the same bit for bit;

and the outputs are cut back. A residual add that the cycle model says is faster fused into the
convolution that makes one of its operands (:mod:`.fusion`) runs as that convolution's program,
where the add stands; its row in the report is the convolution's, named ``conv+add``.
A node the accelerator cannot run (a kernel too large for the
scratchpads, a pad beyond the LOAD's pad fields) runs on the host with the numpy reference, and
its row in the report says why. Each layer's row also has its cycles, MAC-bound cycles and
utilization, DRAM bytes, instructions, micro-ops and the stage that bound it.
"""

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from avta.isa import formats
from avta.isa.enums import MemType
from avta.isa.registers import LOADED_COUNTERS, busy_cycles

from ..ops.conv2d import Conv2dBuffers, bias_bound, build_conv2d, pack_bias, upload_bias_step
from ..ops.conv_residual import FusedAdd
from ..ops.conv_plan import Conv2dShape, PlanError
from ..ops.depthwise import (build_depthwise_conv2d, build_depthwise_gemm,
                             pack_depthwise_weights, plan_depthwise)
from ..ops.elementwise import build_add
from ..ops.residual import AddBuffers, build_add_gemm, pack_add_weights, plan_add
from ..ops.pool_gemm import MaxPoolBuffers, build_max_pool_gemm, pack_identity, plan_max_pool
from ..ops.pool import (GlobalPoolShape, build_avg_pool2d, build_global_avg_pool,
                        build_max_pool2d)
from ..ops.window import WindowShape
from ..packing import pack_diagonal, pack_nchw, pack_oihw
from .fusion import fused_adds
from .graph import GraphError
from .reference import run_node

__all__ = ["LayerReport", "NetworkRun", "run_network", "dram_bytes", "check_dram", "DRAM_LIMIT",
           "patches"]



@dataclass
class LayerReport:
    """One node's run. ``on`` is ``"device"`` or ``"host"`` (with ``why``); ``bound`` the stage
    that was busy longest (``load``, ``compute``, ``store``); counts of a host layer are 0.
    ``fused``: the residual add run inside this convolution (:mod:`.fusion`; the row is then
    named ``conv+add``), or empty.
    ``counters`` holds the run's performance counters and ``mix`` its program's
    :meth:`~avta.runtime.program.Program.step_mix`: the event counts an energy estimate needs."""
    name: str
    op: str
    shape: tuple
    macs: int
    cycles: int = 0
    ideal_cycles: int = 0
    utilization: float = 0.0
    bytes_loaded: int = 0
    bytes_stored: int = 0
    insns: int = 0
    uops: int = 0
    bound: str = ""
    on: str = "device"
    why: str = ""
    counters: dict = field(default_factory=dict)
    mix: dict = field(default_factory=dict)
    fused: str = ""


@dataclass
class NetworkRun:
    """A network's run: its outputs (int8, real shapes), the per-layer reports and totals.
    ``estimated``: the cycles are fsim's estimate rather than a count."""
    network: str
    config: str
    outputs: dict
    layers: list = field(default_factory=list)
    estimated: bool = False

    @property
    def total(self):
        macs = sum(layer.macs for layer in self.layers)
        cycles = sum(layer.cycles for layer in self.layers)
        ideal = sum(layer.ideal_cycles for layer in self.layers)
        return {"macs": macs, "cycles": cycles, "ideal_cycles": ideal,
                "utilization": ideal / cycles if cycles else 0.0}

    def to_dict(self):
        return {"network": self.network, "config": self.config, "estimated": self.estimated,
                "layers": [asdict(layer) | {"shape": list(layer.shape)}
                           for layer in self.layers],
                "total": self.total}


def _round_up(value, multiple):
    return -(-value // multiple) * multiple


class _Layout:
    """How the configuration stores a real ``[N, C, H, W]`` tensor: padded N and C."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.block = math.lcm(cfg.block_in, cfg.block_out)
        self.square = cfg.block_in == cfg.block_out

    def padded(self, shape):
        n, c, h, w = shape
        return (_round_up(n, self.cfg.batch), _round_up(c, self.block), h, w)

    def pad(self, x):
        """``x[N, C, H, W]`` int8 with zero images and channels up to :meth:`padded`."""
        n, c = x.shape[:2]
        pn, pc = self.padded(x.shape)[:2]
        return np.pad(np.asarray(x, np.int8), ((0, pn - n), (0, pc - c), (0, 0), (0, 0)))

    def nbytes(self, shape):
        return int(np.prod(self.padded(shape)))


def dram_bytes(cfg, graph):
    """DRAM a run of ``graph`` needs at most: every weight and bias packed, every tensor at
    once (the executor frees tensors after their last use, so this is an upper bound), and
    room for the largest programs."""
    layout = _Layout(cfg)
    total = sum(layout.nbytes(shape) for shape in graph.shapes.values())
    for node in graph.topological():
        if node.weights is not None:
            total += _round_up(node.weights.size, layout.block * layout.block) * cfg.batch
        if node.bias is not None:
            total += _round_up(node.bias.size, layout.block) * cfg.batch * 4
        if node.op == "conv2d" and node.inputs[0] in graph.inputs:     # its im2col form
            n, c, _, _ = graph.input_shapes(node)[0]
            _, _, oh, ow = graph.shapes[node.output]
            total += layout.nbytes((n, c * node.weights.shape[2] * node.weights.shape[3], oh, ow))
    return _round_up(total + total // 4 + (64 << 20), 4096)


#: The most DRAM a device can address: DRAM addresses are 32 bits (isa.md, LOAD and STORE).
DRAM_LIMIT = 1 << formats.DRAM_ADDR_BITS


def check_dram(cfg, graph):
    """:func:`dram_bytes` of ``graph`` on ``cfg``, or a :class:`GraphError` when that is more
    than the device can address (:data:`DRAM_LIMIT`), before anything is allocated."""
    need = dram_bytes(cfg, graph)
    if need > DRAM_LIMIT:
        raise GraphError(f"{graph.name} needs {need / 2**30:.1f} GiB of device DRAM on "
                         f"{cfg.name} (its tensors and weights padded to the blocks), more than "
                         f"the {DRAM_LIMIT >> 30} GiB that 32-bit DRAM addresses reach; give "
                         f"it smaller shapes")
    return need


def patches(x, kh, kw, *, stride=1, pad=0, pad_value=0):
    """The im2col form of ``x[N, C, H, W]`` for a ``kh × kw`` convolution: ``[N, C·kh·kw, OH,
    OW]``, channel ``(c·kh + i)·kw + j`` holding input channel c at kernel position (i, j) of each
    output pixel's window (padding cells are ``pad_value``). A convolution of ``x`` with weights
    ``w[O, C, kh, kw]`` is the 1×1 convolution of the patches with ``w.reshape(O, -1, 1, 1)``."""
    x = np.pad(np.asarray(x, np.int8), ((0, 0), (0, 0), (pad, pad), (pad, pad)),
               constant_values=pad_value)
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]                 # [N, C, OH, OW, kh, kw]
    n, c, oh, ow = windows.shape[:4]
    return np.ascontiguousarray(windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw,
                                                                             oh, ow))


def run_network(device, graph, x, *, progress=None):
    """Run ``graph`` on ``device`` for the int8 input ``x`` (an array, or a dict by input
    name); a :class:`NetworkRun`. ``progress(i, n, node)`` hears before each node. Which
    target runs it is the device's backend (:mod:`avta.sim.targets`)."""
    return _Executor(device, graph, progress).run(x)


class _Executor:
    def __init__(self, device, graph, progress):
        self.device, self.cfg, self.graph = device, device.cfg, graph
        self.layout = _Layout(device.cfg)
        self.progress = progress or (lambda i, n, node: None)
        self.buffers = {}           # tensor name -> DRAM buffer (packed OUT layout)
        self.weights = {}           # node name -> (weights buffer, bias buffer or None)
        self.bias_steps = {}        # conv2d node name -> (its Conv2dBuffers keywords, buffers)
        self.host_inputs = {}       # network input name -> the int8 array
        self.scratch = []           # buffers of the node being run (an im2col input)
        self.fused = {}             # add node name -> the conv2d fused into it (.fusion)

    # -- the run -----------------------------------------------------------------------------

    def run(self, x):
        graph, cfg = self.graph, self.cfg
        inputs = x if isinstance(x, dict) else {next(iter(graph.inputs)): x}
        for name, value in inputs.items():
            self.host_inputs[name] = np.asarray(value, np.int8)
            self.buffers[name] = self._upload_tensor(value)
        nodes = graph.topological()
        # add name -> the conv2d fused into it; the conv runs where the add stands, so its
        # inputs live until then
        self.fused = fused_adds(cfg, graph, self._conv_shape, host_inputs=self.host_inputs)
        deferred = {conv: add for add, conv in self.fused.items()}
        at = {node.name: i for i, node in enumerate(nodes)}
        last_use = {}
        for i, node in enumerate(nodes):
            when = at[deferred[node.name]] if node.name in deferred else i
            for t in node.inputs:
                last_use[t] = max(last_use.get(t, 0), when)
        run = NetworkRun(graph.name, cfg.name, {})
        try:
            for i, node in enumerate(nodes):
                self.progress(i, len(nodes), node)
                if node.name not in deferred:
                    run.layers.append(self._run_node(node, run))
                for t in dict.fromkeys(node.inputs):       # an add may read one tensor twice
                    if last_use[t] == i and t not in graph.outputs and t in self.buffers:
                        self.device.free(self.buffers.pop(t))
            for name in graph.outputs:
                run.outputs[name] = self._read_tensor(name)
        finally:
            for buffer in self.buffers.values():
                self.device.free(buffer)
            for wgt, bias in self.weights.values():
                for buffer in (wgt, bias):
                    if buffer is not None:
                        self.device.free(buffer)
            for _, buffers in self.bias_steps.values():
                for buffer in buffers:
                    self.device.free(buffer)
        return run

    def _run_node(self, node, run):
        graph = self.graph
        shape = graph.shapes[node.output]
        report = LayerReport(node.name, node.op, tuple(shape), graph.macs(node))
        if node.name in self.fused:
            conv = graph.node(self.fused[node.name])
            report = LayerReport(f"{conv.name}+{node.name.rsplit('.', 1)[-1]}", "conv2d+add",
                                 tuple(shape), graph.macs(conv), fused=node.name)
        try:
            program = self._program(node)
        except (PlanError, ValueError) as error:
            if node.name in self.fused:
                # The fusion chose this program by the plan the build makes (conv_tail.
                # plan_layer), which returns only tilings that encode (ops/conv_fields.py):
                # a fused program that does not build is the planner's fault, and its add
                # cannot run on the host without the convolution's output.
                raise RuntimeError(f"{report.name}: the fused program chosen by its plan "
                                   f"does not build: {error}") from error
            self._on_host(node)
            report.on, report.why = "host", str(error)
            return report
        try:
            result = self.device.run(program)
        finally:
            while self.scratch:
                self.device.free(self.scratch.pop())
        self._account(report, program, result)
        run.estimated |= "cycles" in result.estimated
        return report

    def _account(self, report, program, result):
        cfg, counters = self.cfg, result.counters
        report.cycles = int(result.cycles)
        report.ideal_cycles = -(-report.macs // (cfg.batch * cfg.block_in * cfg.block_out))
        report.utilization = report.ideal_cycles / report.cycles if report.cycles else 0.0
        report.bytes_loaded = sum(counters[name] for name in LOADED_COUNTERS)
        report.bytes_stored = counters["OUT_ST"]
        report.insns, report.uops = len(program), len(program.uops)
        report.counters, report.mix = dict(counters), program.step_mix()
        busy = busy_cycles(counters, report.cycles)
        report.bound = max(busy, key=busy.get)

    # -- one program per node ------------------------------------------------------------------

    def _program(self, node):
        """The node's program on the device (its output buffer allocated), or PlanError /
        ValueError when the accelerator cannot run it."""
        if node.name in self.fused:
            return self._build_conv2d(self.graph.node(self.fused[node.name]), add=node)
        build = getattr(self, f"_build_{node.op}")
        return build(node)

    def _out(self, node):
        buffer = self.device.alloc(self.layout.nbytes(self.graph.shapes[node.output]),
                                   mem=MemType.OUT)
        self.buffers[node.output] = buffer
        return buffer.elem(self.cfg, MemType.OUT)

    def _elem(self, tensor, mem):
        return self.buffers[tensor].elem(self.cfg, mem)

    def _conv_input(self, node, tensor):
        """The INP element address of a conv2d's input: the tensor itself, whose OUT rows are
        INP rows when the blocks are square."""
        if self.layout.square:
            return self._elem(tensor, MemType.INP)
        raise PlanError(f"BLOCK_IN {self.cfg.block_in} differs from BLOCK_OUT "
                        f"{self.cfg.block_out}: the activation layouts differ, so {node.name!r} "
                        f"runs on the host")

    def _im2col(self, node, weights):
        """Whether conv2d ``node`` runs over its input's patches (see the module's docstring):
        its input is a network input and that pads fewer channels than the plain form."""
        _, c, _, _ = self.graph.input_shapes(node)[0]
        kk = weights.shape[2] * weights.shape[3]
        return (node.inputs[0] in self.host_inputs and kk > 1 and self.layout.square
                and _round_up(c * kk, self.layout.block) < _round_up(c, self.layout.block) * kk)

    def _conv_shape(self, node):
        """The :class:`Conv2dShape` conv2d ``node`` runs as (on its input, not its patches)."""
        n, c, h, w = self.layout.padded(self.graph.input_shapes(node)[0])
        o, _, kh, kw = node.weights.shape
        return Conv2dShape(n, c, h, w, _round_up(o, self.layout.block), kh, kw,
                           node.attrs.get("pad", 0), node.attrs.get("stride", 1),
                           node.attrs.get("pad_value", 0))

    def _build_conv2d(self, node, *, kernel=None, add=None):
        """conv2d ``node`` (``kernel``: a dense layer's weights as a kernel); with ``add``, the
        residual add fused into it (:mod:`.fusion`), writing the add's output."""
        cfg, layout = self.cfg, self.layout
        weights = node.weights if kernel is None else kernel
        attrs = {"pad": node.attrs.get("pad", 0), "stride": node.attrs.get("stride", 1),
                 "pad_value": node.attrs.get("pad_value", 0)}
        if kernel is None and self._im2col(node, weights):
            o, _, kh, kw = weights.shape
            x = patches(self.host_inputs[node.inputs[0]], kh, kw, **attrs)
            weights = np.asarray(weights).reshape(o, -1, 1, 1)
            attrs = {"pad": 0, "stride": 1, "pad_value": 0}
            buffer = self._upload_tensor(x)
            self.scratch.append(buffer)
            n, c, h, w = layout.padded(x.shape)
            inp = buffer.elem(cfg, MemType.INP)
        else:
            n, c, h, w = layout.padded(self.graph.input_shapes(node)[0])
            inp = None
        o, _, kh, kw = weights.shape
        po = _round_up(o, layout.block)
        shape = Conv2dShape(n, c, h, w, po, kh, kw, attrs["pad"], attrs["stride"],
                            attrs["pad_value"])
        shape.check(cfg)
        if inp is None:
            inp = self._conv_input(node, node.inputs[0])
        if node.name not in self.weights:
            padded = np.zeros((po, c, kh, kw), np.int8)
            padded[:o, :weights.shape[1]] = weights
            wgt = self.device.upload(pack_oihw(padded, cfg.block_out, cfg.block_in),
                                     mem=MemType.WGT)
            bias = None
            if node.bias is not None or node.requant.per_channel:
                b = np.zeros(po, np.int32)
                if node.bias is not None:
                    b[:o] = node.bias
                bias = self.device.upload(pack_bias(cfg, b, node.requant), mem=MemType.ACC)
                # the operands that let the GEMM core start the accumulators at the bias,
                # where one step holds it; the planner then picks the faster start
                # (ops/conv_tail.plan_layer), as the fused-add plan assumed (.fusion)
                if node.bias is not None:
                    buffers = []

                    def upload(array, mem):
                        buffers.append(self.device.upload(array, mem=mem))
                        return buffers[-1]
                    self.bias_steps[node.name] = (
                        upload_bias_step(upload, cfg, b, node.requant), buffers)
            self.weights[node.name] = (wgt, bias)
        wgt, bias = self.weights[node.name]
        step = self.bias_steps.get(node.name, ({}, ()))[0]
        fused = shortcut = None
        if add is not None:
            fused = FusedAdd(add.requant)
            other, = [t for t in add.inputs if t != node.output]
            shortcut = self._elem(other, MemType.ACC_8BIT)
        bufs = Conv2dBuffers(inp, wgt.elem(cfg, MemType.WGT),
                             self._out(node if add is None else add),
                             None if bias is None else bias.elem(cfg, MemType.ACC), shortcut,
                             **step)
        return build_conv2d(cfg, shape, bufs, requant=node.requant,
                            bias_bound=bias_bound(node.bias), fused=fused)

    def _build_dense(self, node):
        """A fully connected layer is the conv2d whose kernel covers the whole input map."""
        _, c, h, w = self.graph.input_shapes(node)[0]
        kernel = np.asarray(node.weights).reshape(-1, c, h, w)
        return self._build_conv2d(node, kernel=kernel)

    def _window(self, node):
        n, c, h, w = self.layout.padded(self.graph.input_shapes(node)[0])
        attrs = node.attrs
        return WindowShape(n, c, h, w, attrs.get("k", 1), attrs.get("pad", 0),
                           attrs.get("stride", 1))

    def _build_depthwise(self, node):
        cfg = self.cfg
        shape = self._window(node)
        shape = WindowShape(shape.n, shape.c, shape.h, shape.w, node.weights.shape[2],
                            node.attrs.get("pad", 0), node.attrs.get("stride", 1))
        shape.check(cfg)
        pad_value = node.attrs.get("pad_value", 0)
        has_bias = node.bias is not None or node.requant.per_channel
        # The faster of the GEMM core (diagonal weight blocks) and the ALU, by the cycle
        # estimates (ops/depthwise.py); the weights are packed for the path chosen.
        plan = plan_depthwise(cfg, shape, requant=node.requant, pad_value=pad_value,
                              has_bias=has_bias, bias_bound=bias_bound(node.bias))
        gemm = plan.path == "gemm"
        mem = MemType.WGT if gemm else MemType.ACC_8BIT
        if node.name not in self.weights:
            padded = np.zeros((shape.c,) + node.weights.shape[1:], np.int8)
            padded[:node.weights.shape[0]] = node.weights
            packed = pack_diagonal(padded, cfg.block_out) if gemm else \
                pack_depthwise_weights(cfg, padded)
            bias = None
            if has_bias:
                b = np.zeros(shape.c, np.int32)
                if node.bias is not None:
                    b[:node.bias.size] = node.bias
                bias = self.device.upload(pack_bias(cfg, b, node.requant), mem=MemType.ACC)
            self.weights[node.name] = (self.device.upload(packed, mem=mem), bias)
        wgt, bias = self.weights[node.name]
        wgt = wgt.elem(cfg, mem)
        bias = None if bias is None else bias.elem(cfg, MemType.ACC)
        if gemm:
            bufs = Conv2dBuffers(self._elem(node.inputs[0], MemType.INP), wgt, self._out(node),
                                 bias)
            return build_depthwise_gemm(cfg, shape, bufs, requant=node.requant,
                                        tiling=plan.tiling, pad_value=pad_value,
                                        bias_bound=bias_bound(node.bias))
        return build_depthwise_conv2d(cfg, shape, self._elem(node.inputs[0], MemType.ACC_8BIT),
                                      wgt, self._out(node), requant=node.requant,
                                      tiling=plan.tiling, pad_value=pad_value, bias=bias)

    def _build_max_pool(self, node):
        cfg = self.cfg
        shape = self._window(node)
        shape.check(cfg)
        # The faster of the windows copied in by the GEMM core (INP rows, an identity weight
        # block) and LOAD ACC_8BIT, by the cycle estimates (ops/pool_gemm.py).
        plan = plan_max_pool(cfg, shape)
        if plan.path == "gemm":
            if node.name not in self.weights:
                self.weights[node.name] = (self.device.upload(pack_identity(cfg),
                                                              mem=MemType.WGT), None)
            bufs = MaxPoolBuffers(self._elem(node.inputs[0], MemType.INP),
                                  self.weights[node.name][0].elem(cfg, MemType.WGT),
                                  self._out(node))
            return build_max_pool_gemm(cfg, shape, bufs, tiling=plan.tiling)
        return build_max_pool2d(cfg, shape, self._elem(node.inputs[0], MemType.ACC_8BIT),
                                self._out(node), tiling=plan.tiling)

    def _build_avg_pool(self, node):
        shape = self._window(node)
        shape.check(self.cfg)
        return build_avg_pool2d(self.cfg, shape, self._elem(node.inputs[0], MemType.ACC_8BIT),
                                self._out(node), requant=node.requant)

    def _build_global_avg_pool(self, node):
        shape = GlobalPoolShape(*self.layout.padded(self.graph.input_shapes(node)[0]))
        shape.check(self.cfg)
        return build_global_avg_pool(self.cfg, shape,
                                     self._elem(node.inputs[0], MemType.ACC_8BIT),
                                     self._out(node), requant=node.requant)

    def _build_add(self, node):
        cfg = self.cfg
        shape = self.layout.padded(self.graph.input_shapes(node)[0])
        shift_a = node.attrs.get("shift_a", 0)
        scale_a, scale_b = node.attrs.get("scale_a", 0), node.attrs.get("scale_b", 0)
        # The faster of the GEMM core (operands as INP rows, diagonal weights) and the ALU, by
        # the cycle estimates (ops/residual.py); inputs scaled by SCL multipliers take the ALU.
        plan = plan_add(cfg, shape, shift_a=shift_a, requant=node.requant,
                        path="alu" if scale_a or scale_b else None)
        if plan.path == "gemm":
            if node.name not in self.weights:
                self.weights[node.name] = (self.device.upload(pack_add_weights(cfg, shift_a),
                                                              mem=MemType.WGT), None)
            a, b = (self._elem(t, MemType.INP) for t in node.inputs)
            bufs = AddBuffers(a, b, self.weights[node.name][0].elem(cfg, MemType.WGT),
                              self._out(node))
            return build_add_gemm(cfg, shape, bufs, requant=node.requant, shift_a=shift_a,
                                  tiling=plan.tiling)
        a, b = (self._elem(t, MemType.ACC_8BIT) for t in node.inputs)
        return build_add(cfg, shape, a, b, self._out(node), requant=node.requant,
                         shift_a=shift_a, scale_a=scale_a, scale_b=scale_b,
                         scale_a2=node.attrs.get("scale_a2", 0),
                         scale_b2=node.attrs.get("scale_b2", 0))

    # -- the host's part -------------------------------------------------------------------------

    def _on_host(self, node):
        """Run ``node`` with the numpy reference: its inputs read back, its output uploaded."""
        stale = self.buffers.pop(node.output, None)     # allocated before the plan failed
        if stale is not None:
            self.device.free(stale)
        inputs = [self._read_tensor(t) for t in node.inputs]
        self.buffers[node.output] = self._upload_tensor(run_node(node, inputs))

    def _upload_tensor(self, x):
        cfg = self.cfg
        return self.device.upload(pack_nchw(self.layout.pad(x), cfg.batch, cfg.block_out),
                                  mem=MemType.OUT)

    def _read_tensor(self, name):
        n, c, h, w = self.graph.shapes[name]
        pn, pc = self.layout.padded((n, c, h, w))[:2]
        return self.device.read_nchw(self.buffers[name], pn, pc, h, w)[:n, :c]

