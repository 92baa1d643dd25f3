"""The first task of a conv2d in two pieces (conv_first): where it is split, what the program
loads, and that the layer stays bit-exact and gets faster on fsim, as the estimate says."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import MemType, Opcode
from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d, conv2d
from avta.runtime.ops.conv_cycles import _estimates, estimate, lower_bound, task_pieces
from avta.runtime.ops.conv_first import first_piece
from avta.runtime.ops.conv_plan import Conv2dShape, tiling_for
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant

#: ResNet-18 C2 at a quarter of its pixels, and the tiling the planner gives C2 on huge.
C2 = Conv2dShape(1, 64, 28, 28, 64, 3, 3, 1, 1)


def test_the_first_piece_is_a_third_of_a_3x3_chunk_on_huge():
    """Nine 64-beat blocks against 114 pixels a micro-op: three blocks first."""
    cfg = load_config("huge")
    assert first_piece(cfg, C2, 2, 6, 19, 1, 1) == 3


@pytest.mark.parametrize("why, shape, sizes", [
    ("two output blocks: not one DRAM row", C2, (6, 19, 2, 1)),
    ("one weight block", Conv2dShape(1, 64, 28, 28, 64, 1, 1), (6, 19, 1, 1)),
    ("depthwise", Conv2dShape(1, 64, 28, 28, 64, 3, 3, 1, 1, 0, True), (6, 19, 1, 1)),
])
def test_the_first_task_stays_whole(why, shape, sizes):
    assert first_piece(load_config("huge"), shape, 2, *sizes) == 0, why


def test_the_first_task_loads_in_two_pieces_bit_exact_and_sooner(rng, int8, device):
    """C2 at 28x28 on huge: the first weight LOADs are the first piece's blocks and the rest,
    the output is numpy's, and fsim's cycles are the estimate's with two pieces (within 4 %, as
    the estimate of short layers is, test_conv_cycles), below even its estimate with one (which
    is under fsim's), and that by most of the rest's LOAD."""
    cfg = load_config("huge")
    t = tiling_for(cfg, C2, 6, 19, 1, 1, 2, bias=True, slots=4)
    rq = Requant(8, (0, 127))
    piece, _ = task_pieces(cfg, C2, t, start="bias")
    assert piece == 3
    prog = build_conv2d(cfg, C2, Conv2dBuffers(0, 0, 0, 0), requant=rq, tiling=t,
                        bias_bound=1 << 10)
    wgt = [i for i in prog.insns if i.opcode == Opcode.LOAD and i.memory_type == MemType.WGT
           and i.x_size]
    assert [(i.y_size, i.x_size, i.sram_base) for i in wgt[:2]] == [(1, 3, 0), (1, 6, 3)]

    cycles = _cycles_bit_exact(cfg, device, int8, rng, 64, 28, rq, t)
    walks = {(axis, p): c for c, axis, p, last in _estimates(cfg, C2, t, 4, "bias", None)
             if not last}
    two, one = walks[(-1, piece)], walks[(-1, 0)]
    assert estimate(cfg, C2, t) == min(walks.values())
    assert abs(cycles - two) <= 0.04 * cycles
    assert cycles < one
    assert one - two > 300                       # most of six 64-beat blocks
    assert lower_bound(cfg, C2, t) <= two


@pytest.mark.parametrize("config", ["default", "tight"])
def test_two_pieces_on_tsim_and_with_two_bit_counters(config, rng, int8, device):
    """One task of default's by-hand layer (test_conv_cycles), in two pieces: bit-exact on fsim
    and, mirrored, on tsim (the device fixture compares DRAM, counters and traces); on tight,
    whose 2-bit counters hold three tokens, the extra L→C token still fits."""
    cfg = load_config(config)
    shape = Conv2dShape(1, cfg.block_in, 4, 4, cfg.block_out, 3, 3, 1, 1)
    t = tiling_for(cfg, shape, 4, 4, 1, 1, 2, bias=True)
    piece, last = task_pieces(cfg, shape, t, start="bias")
    assert piece > 0 and last == 0             # one task
    rq = Requant(8, (0, 127))
    prog = build_conv2d(cfg, shape, Conv2dBuffers(0, 0, 0, 0), requant=rq, tiling=t,
                        bias_bound=1 << 10)
    assert [i.x_size for i in prog.insns if i.opcode == Opcode.LOAD
            and i.memory_type == MemType.WGT and i.x_size] == [piece, 9 - piece]
    x = int8((1, shape.cin, 4, 4))
    w = int8((shape.cout, shape.cin, 3, 3))
    bias = rng.integers(-1 << 10, 1 << 10, shape.cout)
    out = conv2d(device(cfg), x, w, bias, pad=1, requant=rq, tiling=t)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, pad=1, requant=rq))


def test_the_last_task_of_a_bus_bound_layer_loads_in_two_pieces(rng, int8, device):
    """ResNet-18's layer4 at half its channels on huge (weights loaded per task, the bus
    binds): the first task stays whole (its second LOAD would only add to the load stage), the
    last task's GEMM starts on its first blocks while the rest loads; bit-exact, and fsim's
    cycles within 1 % of the estimate and below its estimate with the last task whole."""
    cfg = load_config("huge")
    shape = Conv2dShape(1, 256, 7, 7, 256, 3, 3, 1, 1)
    t = tiling_for(cfg, shape, 7, 7, 1, 1, 2, bias=True)
    assert not t.wgt_resident
    first, last = task_pieces(cfg, shape, t, start="bias")
    assert first == 0 and 0 < last < 9
    rq = Requant(8, (0, 127))
    prog = build_conv2d(cfg, shape, Conv2dBuffers(0, 0, 0, 0), requant=rq, tiling=t,
                        bias_bound=1 << 10)
    wgt = [i.x_size for i in prog.insns if i.opcode == Opcode.LOAD
           and i.memory_type == MemType.WGT and i.x_size]
    assert wgt == [9] * 15 + [last, 9 - last]           # 4 x 4 tasks, the last in two

    cycles = _cycles_bit_exact(cfg, device, int8, rng, 256, 7, rq, t)
    walks = {(p1, p2): c for c, _, p1, p2 in _estimates(cfg, shape, t, 4, "bias", None)}
    assert abs(cycles - walks[(0, last)]) <= 0.01 * cycles
    assert cycles < walks[(0, 0)]


def _cycles_bit_exact(cfg, device, int8, rng, c, h, rq, t):
    """A c-channel h x h 3x3 convolution (pad 1, bias) with tiling ``t`` on ``device``: its
    output bit for bit the reference's, and its cycles."""
    x, w = int8((1, c, h, h)), int8((c, c, 3, 3))
    bias = rng.integers(-1 << 10, 1 << 10, c)
    dev = device(cfg)
    out = conv2d(dev, x, w, bias, pad=1, requant=rq, tiling=t)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, pad=1, requant=rq))
    return dev.last_result.cycles
