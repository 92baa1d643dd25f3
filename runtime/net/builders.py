"""Real network topologies with seeded random int8 weights and calibrated shifts.

Every builder is ``builder(input_size=224, seed=0, classes=1000, *, batch=1, calibrate=True,
weights=True)``
and returns a :class:`~avta.runtime.net.graph.Graph` with one input ``data`` of shape
``[batch, 3, input_size, input_size]`` (``input_size`` a multiple of 32, the networks' total
stride) and one output ``fc`` of shape ``[batch, classes, 1, 1]``. Shapes are the real ones (3
input channels at the stem, 1000 classes); an executor for the accelerator pads channels to its
blocks.

* ResNet-18/34 (basic blocks) and ResNet-50 (bottlenecks), He et al. 2016 as torchvision builds
  them: a 7×7 stride-2 pad-3 stem conv with ReLU, a 3×3 stride-2 pad-1 max pool, four stages of
  64, 128, 256, 512 channels (×4 at a bottleneck's output) whose first block strides by 2 (not
  in the first stage), global average pooling and a fully connected layer. A bottleneck is
  1×1 → 3×3 (which carries the stride, "ResNet v1.5") → 1×1; a block whose shape changes has a
  1×1 strided conv on the shortcut. The residual add carries the block's ReLU as its clip.
* MobileNet v1 (Howard et al. 2017), width 1.0 by default: a 3×3 stride-2 conv of 32 channels,
  13 depthwise-separable blocks (3×3 depthwise + ReLU, 1×1 conv + ReLU) with stride-2 depthwise
  convs where the paper has them (blocks 2, 4, 6, 12), global average pooling and a fully
  connected layer.

No batch norm (it folds into the weights and biases). Weights are uniform int8 in −127..127,
biases uniform int32 in −8..8 (added after the shift, so in output units). With ``calibrate``
(the default) each node's shift comes from :func:`~avta.runtime.net.calibrate.calibrate` on a
seeded random input of the same size, which runs the whole network once (the shifts are kept on
disk, :mod:`~avta.runtime.net.calibration_cache`); without it every shift is 0, for studies of
shapes and MACs only. With ``weights=False`` nothing is drawn: every weight, bias and shift is 0
(with ``calibrate=False``), the skeleton :func:`timing_graph` fills in.

A timing-only run (fsim's, ``avta run --timing-only``) needs no weights' values: a program is a
function of the layer's shape, the requantization (a shift of 0 emits no SHR, so the shifts
count) and the biases' bound, never of the weights; :func:`timing_graph` gives the calibrated
network with zero weights, its biases and shifts recorded on disk by the builder's arguments
(:func:`~avta.runtime.net.calibration_cache.network_key`), so that drawing ResNet-18's 11.7
million weights and hashing them for the calibration key happen once.
"""

import numpy as np

from ..ops.requant import Requant
from .calibration_cache import calibrate_cached as calibrate_graph
from .calibration_cache import network_key, read_network_values, record_network_values
from .graph import GraphBuilder, GraphError
from .reference import random_input

__all__ = ["resnet18", "resnet34", "resnet50", "mobilenet", "mobilenet1_0", "BUILDERS", "build",
           "calibrated", "timing_graph",
           "RELU", "LINEAR", "WEIGHT_MAX", "BIAS_MAX"]

#: The clips of a node followed by a ReLU, and of one that is not.
RELU, LINEAR = (0, 127), (-128, 127)
#: Weights are uniform in −WEIGHT_MAX..WEIGHT_MAX, biases in −BIAS_MAX..BIAS_MAX.
WEIGHT_MAX, BIAS_MAX = 127, 8
#: The total stride of every network here: the input size must be a multiple of it.
TOTAL_STRIDE = 32


class _Net:
    """A :class:`GraphBuilder` that draws seeded weights and biases."""

    def __init__(self, name, input_size, seed, batch, values):
        if (isinstance(input_size, bool) or not isinstance(input_size, (int, np.integer))
                or input_size < TOTAL_STRIDE or input_size % TOTAL_STRIDE):
            raise GraphError(f"{name}: input size {input_size!r} must be a positive multiple of "
                             f"{TOTAL_STRIDE} (the network's total stride)")
        self.rng = np.random.default_rng([seed, 0])
        self.seed = seed
        #: Whether weights and biases are drawn (False: zeros, see :func:`timing_graph`).
        self.values = values
        self.b = GraphBuilder(name)
        self.x = self.b.input("data", (batch, 3, input_size, input_size))

    def weights(self, shape):
        """The int8 weights of ``shape``: :meth:`drawn_weights`, or zeros when not drawing."""
        return self.drawn_weights(shape) if self.values else np.zeros(shape, np.int8)

    def drawn_weights(self, shape):
        """Uniform int8 weights, each output channel's filter shifted to a mean of about 0."""
        w = self.rng.integers(-WEIGHT_MAX, WEIGHT_MAX + 1, size=shape).astype(np.int64)
        axes = tuple(range(1, len(shape)))
        w -= np.round(w.mean(axis=axes, keepdims=True)).astype(np.int64)
        return np.clip(w, -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)

    def bias(self, n):
        if not self.values:
            return np.zeros(n, np.int32)
        return self.rng.integers(-BIAS_MAX, BIAS_MAX + 1, size=n, dtype=np.int32)

    def channels(self, x):
        return self.b.shape(x)[1]

    def conv(self, name, x, cout, k, *, stride=1, pad=None, relu=True):
        pad = k // 2 if pad is None else pad
        w = self.weights((cout, self.channels(x), k, k))
        return self.b.conv2d(name, x, w, self.bias(cout), stride=stride, pad=pad,
                             requant=Requant(0, RELU if relu else LINEAR))

    def depthwise(self, name, x, k, *, stride=1):
        w = self.weights((self.channels(x), 1, k, k))
        return self.b.depthwise(name, x, w, stride=stride, pad=k // 2, requant=Requant(0, RELU))

    def head(self, x, classes):
        x = self.b.global_avg_pool("avgpool", x, requant=Requant(0, RELU))
        k = int(np.prod(self.b.shape(x)[1:]))
        y = self.b.dense("fc", x, self.weights((classes, k)), self.bias(classes),
                         requant=Requant(0, LINEAR))
        return y

    def finish(self, y, calibrate):
        graph = self.b.build([y])
        return calibrated(graph, self.seed) if calibrate else graph


def _basic(net, name, x, cout, stride):
    y = net.conv(f"{name}.conv1", x, cout, 3, stride=stride)
    y = net.conv(f"{name}.conv2", y, cout, 3, relu=False)
    if stride != 1 or net.channels(x) != cout:
        x = net.conv(f"{name}.downsample", x, cout, 1, stride=stride, relu=False)
    return net.b.add(f"{name}.add", y, x, requant=Requant(0, RELU))


def _bottleneck(net, name, x, cout, stride):
    width = cout // 4
    y = net.conv(f"{name}.conv1", x, width, 1)
    y = net.conv(f"{name}.conv2", y, width, 3, stride=stride)
    y = net.conv(f"{name}.conv3", y, cout, 1, relu=False)
    if stride != 1 or net.channels(x) != cout:
        x = net.conv(f"{name}.downsample", x, cout, 1, stride=stride, relu=False)
    return net.b.add(f"{name}.add", y, x, requant=Requant(0, RELU))


def _resnet(name, block, blocks, expansion, input_size, seed, classes, batch, calibrate,
            weights):
    net = _Net(name, input_size, seed, batch, weights)
    x = net.conv("conv1", net.x, 64, 7, stride=2, pad=3)
    x = net.b.max_pool("maxpool", x, k=3, stride=2, pad=1)
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512)), start=1):
        for i in range(count):
            stride = 2 if stage > 1 and i == 0 else 1
            x = block(net, f"layer{stage}.{i}", x, width * expansion, stride)
    return net.finish(net.head(x, classes), calibrate)


def resnet18(input_size=224, seed=0, classes=1000, *, batch=1, calibrate=True,
             weights=True):
    """ResNet-18: basic blocks, (2, 2, 2, 2) per stage; about 1.8 GMACs at 224×224."""
    return _resnet("resnet18", _basic, (2, 2, 2, 2), 1, input_size, seed, classes, batch,
                   calibrate, weights)


def resnet34(input_size=224, seed=0, classes=1000, *, batch=1, calibrate=True,
             weights=True):
    """ResNet-34: basic blocks, (3, 4, 6, 3) per stage; about 3.6 GMACs at 224×224."""
    return _resnet("resnet34", _basic, (3, 4, 6, 3), 1, input_size, seed, classes, batch,
                   calibrate, weights)


def resnet50(input_size=224, seed=0, classes=1000, *, batch=1, calibrate=True,
             weights=True):
    """ResNet-50 (v1.5): bottlenecks, (3, 4, 6, 3) per stage; about 4.1 GMACs at 224×224."""
    return _resnet("resnet50", _bottleneck, (3, 4, 6, 3), 4, input_size, seed, classes, batch,
                   calibrate, weights)


#: MobileNet v1's depthwise-separable blocks: (output channels of the 1×1 conv, depthwise stride).
MOBILENET_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def mobilenet(input_size=224, seed=0, classes=1000, *, width=1.0, batch=1, calibrate=True,
              weights=True):
    """MobileNet v1 with width multiplier ``width`` (channels ``int(c · width)``); named
    ``mobilenet{width}`` (``mobilenet1.0``, about 569 MMACs at 224×224)."""
    def ch(c):
        return max(1, int(c * width))
    net = _Net(f"mobilenet{width}", input_size, seed, batch, weights)
    x = net.conv("conv1", net.x, ch(32), 3, stride=2)
    for i, (cout, stride) in enumerate(MOBILENET_BLOCKS, start=1):
        x = net.depthwise(f"block{i}.dw", x, 3, stride=stride)
        x = net.conv(f"block{i}.pw", x, ch(cout), 1)
    return net.finish(net.head(x, classes), calibrate)


def mobilenet1_0(input_size=224, seed=0, classes=1000, *, batch=1, calibrate=True,
                 weights=True):
    """MobileNet v1 of width 1.0 (``mobilenet1.0``)."""
    return mobilenet(input_size, seed, classes, width=1.0, batch=batch, calibrate=calibrate,
                     weights=weights)


def calibrated(graph, seed):
    """``graph`` (a builder's, built with ``calibrate=False`` and ``seed``) with the shifts its
    builder gives with ``calibrate=True``: calibrated on the seeded random input of the same
    size (cached, :mod:`~avta.runtime.net.calibration_cache`)."""
    return calibrate_graph(graph, random_input(graph, [seed, 1]))


#: The builders by network name.
BUILDERS = {"resnet18": resnet18, "resnet34": resnet34, "resnet50": resnet50,
            "mobilenet1.0": mobilenet1_0}


def build(name, input_size=224, seed=0, classes=1000, **options):
    """The network ``name`` (a key of :data:`BUILDERS`)."""
    if name not in BUILDERS:
        raise GraphError(f"no network {name!r}; the networks are {', '.join(BUILDERS)}")
    return BUILDERS[name](input_size, seed, classes, **options)


def timing_graph(name, input_size=224, seed=0, classes=1000, *, batch=1, skeleton=None):
    """``build(name, input_size, seed, classes, batch=batch)`` with every weight zero: what a
    timing-only run needs (the module docstring). Its biases and shifts are those of the real
    network, read from the record the first call wrote (that call builds the real network and
    returns it); with the cache off (``AVTA_PROGRAM_CACHE=0``) the real network. ``skeleton``:
    the network built with these arguments and ``calibrate=False, weights=False``, when the
    caller has it."""
    if name not in BUILDERS:
        raise GraphError(f"no network {name!r}; the networks are {', '.join(BUILDERS)}")
    builder = BUILDERS[name]
    key = network_key(name, input_size, seed, classes, batch)
    if key is not None:
        if skeleton is None:
            skeleton = builder(input_size, seed, classes, batch=batch, calibrate=False,
                               weights=False)
        graph = read_network_values(key, skeleton)
        if graph is not None:
            return graph
    graph = builder(input_size, seed, classes, batch=batch)
    if key is not None:
        record_network_values(key, graph)
    return graph
