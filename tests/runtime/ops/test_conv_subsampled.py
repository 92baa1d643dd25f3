"""A 1×1 convolution with a stride (ResNet's downsample layers) loads only the pixels it reads.

Its outputs read every ``stride``-th pixel of every ``stride``-th input row. A window load (one
LOAD a channel block, every pixel of the rows and columns the tile spans) moved ``stride²``
times the bytes the GEMMs read, where the bus binds the layer (ResNet-50's 1024 → 2048 downsample
on ``huge``). Each output row's pixels are now one LOAD of ``tw`` DRAM rows of one element,
``stride`` elements apart, and the GEMM reads the window as a stride-1 convolution's.
"""

import numpy as np
import pytest

from avta.isa.enums import MemType, Opcode
from avta.runtime.ops.conv2d import conv2d, tail_steps
from avta.runtime.ops.conv_cycles import estimate
from avta.runtime.ops.conv_plan import Conv2dShape, plan_conv2d
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant

# (cin blocks, h, w, cout blocks, stride)
GEOMETRIES = [(2, 9, 8, 2, 2), (1, 7, 10, 3, 3), (3, 6, 6, 1, 2)]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
def test_strided_1x1_loads_only_the_pixels_it_reads(cfg, rng, int8, device, geometry):
    ci, h, w, co, stride = geometry
    x = int8((cfg.batch, ci * cfg.block_in, h, w))
    wt = int8((co * cfg.block_out, ci * cfg.block_in, 1, 1))
    bias = rng.integers(-50, 50, wt.shape[0])
    rq = Requant(6, (-128, 127))
    dev = device(cfg)
    out = conv2d(dev, x, wt, bias, stride=stride, requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, wt, bias, stride=stride, requant=rq))
    oh, ow = -(-h // stride), -(-w // stride)
    inp = [i for i in dev.last_program.insns
           if i.opcode == Opcode.LOAD and i.memory_type == MemType.INP]
    # Where the planner starts the accumulators by the GEMM core, one LOAD is the bias step's
    # constant row (one element, last in INP), not the input's.
    step = [i for i in inp if i.sram_base == cfg.inp_depth - 1 and i.y_size * i.x_size == 1]
    window = [i for i in inp if i not in step and i.y_size * i.x_size]   # not token-only ones
    assert len(step) <= 1 and window
    assert all(i.x_size == 1 and i.x_stride == stride for i in window)
    read = cfg.batch * ci * cfg.block_in * oh * ow           # bytes the GEMMs read, once each
    loaded = dev.last_result.counters["INP_LD"] - len(step) * cfg.batch * cfg.block_in
    assert loaded % read == 0 and loaded <= read * co      # at most once per output block tile


def test_strided_1x1_estimate_follows_fsim(default_cfg, rng, int8, device):
    """The planner's estimate of the subsampled loads stays within 4 % of fsim (its stride-1
    layers of this size are 2-4 % under fsim on ``default``)."""
    cfg = default_cfg
    x = int8((1, 8 * cfg.block_in, 28, 28))
    wt = int8((8 * cfg.block_out, 8 * cfg.block_in, 1, 1))
    rq = Requant(6, (-128, 127))
    dev = device(cfg)
    conv2d(dev, x, wt, stride=2, requant=rq)
    shape = Conv2dShape(1, x.shape[1], 28, 28, wt.shape[0], 1, 1, 0, 2)
    steps = tail_steps(cfg, rq, False)
    tiling = plan_conv2d(cfg, shape, start="zero", tail_steps=steps)
    est = estimate(cfg, shape, tiling, start="zero", tail_steps=steps)
    assert abs(est - dev.last_result.cycles) <= 0.04 * dev.last_result.cycles
