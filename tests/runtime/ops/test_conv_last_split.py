"""The last tile of a conv2d in two parts (conv_cycles.split_axis, last_split): where the input
windows are resident (along the rows, both parts reading the whole tile's window from its
slot), where the weights load per task (the second part loads them again), and sized by the
estimate rather than in halves. Each bit for bit the numpy reference on fsim."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import MemType, Opcode
from avta.runtime.ops.conv2d import conv2d
from avta.runtime.ops.conv_cycles import halves, last_split
from avta.runtime.ops.conv_plan import Conv2dShape, plan_conv2d, tiling_for
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.workloads import resnet18_layers


def _run(cfg, shape, tiling, rng, device):
    x = rng.integers(-128, 128, (shape.n, shape.cin, shape.h, shape.w), dtype=np.int8)
    w = rng.integers(-128, 128, (shape.cout, shape.cin, shape.kh, shape.kw), dtype=np.int8)
    bias = rng.integers(-2000, 2000, shape.cout)
    rq = Requant(shift=8, clip=(0, 127))
    dev = device(cfg)
    out = conv2d(dev, x, w, bias, stride=shape.stride, pad=shape.pad, requant=rq,
                 tiling=tiling)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, stride=shape.stride,
                                                  pad=shape.pad, requant=rq))
    return dev.last_program.insns


def _stored_rows(insns):
    """Output rows of each STORE, in order: a part of a split tile stores each output block
    as its rows (``y_size``) of the part's pixels."""
    return [i.y_size for i in insns if i.opcode == Opcode.STORE]


def _input_loads(insns):
    return sum(1 for i in insns if i.opcode == Opcode.LOAD and i.memory_type == MemType.INP
               and i.x_size)


# (cin blocks, h, w, cout blocks, k, pad, stride), forced (th, tw, tco, tci), the last tile's
# rows and the estimate's first part: a padded 3x3 of stride 2 split 3 + 1 (not in halves,
# 2 + 2; fsim 2,645 cycles, whole 2,663) and a subsampled 1x1 of stride 2 split 3 + 2 (fsim
# 682, whole 750).
RESIDENT = [((2, 15, 7, 2, 3, 1, 2), (4, 4, 2, 1), 4, 3),
            ((2, 10, 10, 2, 1, 0, 2), (5, 7, 2, 1), 5, 3)]


@pytest.mark.parametrize("geometry, sizes, last_rows, first", RESIDENT,
                         ids=["3x3-stride-2", "1x1-subsampled"])
def test_a_resident_window_is_split_along_its_rows(rng, device, geometry, sizes, last_rows,
                                                   first):
    """Both parts read the whole tile's window, loaded once: as many INP LOADs with data as
    windows, and the last two STOREs the parts' rows."""
    cfg = load_config("default")
    ci, h, w, co, k, pad, stride = geometry
    shape = Conv2dShape(1, ci * cfg.block_in, h, w, co * cfg.block_out, k, k, pad, stride)
    t = tiling_for(cfg, shape, *sizes, 2, bias=True)
    assert t.inp_resident and shape.oh - (shape.oh - 1) // t.th * t.th == last_rows
    assert last_split(cfg, shape, t) == (0, first)
    insns = _run(cfg, shape, t, rng, device)
    # Each window loaded once: a LOAD per input block (subsampled: per output row too).
    n_w = -(-shape.ow // t.tw)
    windows = -(-shape.oh // t.th) * n_w
    assert _input_loads(insns) == ci * (shape.oh * n_w if shape.subsampled else windows)
    nco = co - (co - 1) // t.tco * t.tco
    assert _stored_rows(insns)[-2 * nco:] == [first] * nco + [last_rows - first] * nco


def test_resnet18_c8_on_huge_splits_its_last_tile_9_and_5():
    """C8 (256 channels, 14x14) on huge: one 14x14 tile per output block, windows resident,
    weights per task; the estimate splits the last tile 9 + 5 rows (halves: 7 + 7)."""
    cfg = load_config("huge")
    layer = resnet18_layers()["C8"]
    shape = Conv2dShape(cfg.batch, layer["cin"], layer["h"], layer["w"], layer["cout"],
                        layer["k"], layer["k"], layer["pad"], layer["stride"])
    t = plan_conv2d(cfg, shape, bias=True)
    assert (t.th, t.tw, t.inp_resident, t.wgt_resident) == (14, 14, True, False)
    assert last_split(cfg, shape, t) == (0, 9) and halves(14) == (7, 7)


def test_weights_per_task_may_split_and_load_again(rng, device):
    """ResNet-18's C5 on huge (weights per task, windows per task): the last tile in two
    parts, each task of the second part loading its weights again, bit for bit."""
    cfg = load_config("huge")
    layer = resnet18_layers()["C5"]
    shape = Conv2dShape(cfg.batch, layer["cin"], layer["h"], layer["w"], layer["cout"],
                        layer["k"], layer["k"], layer["pad"], layer["stride"])
    t = plan_conv2d(cfg, shape, bias=True)
    assert not t.wgt_resident and not t.inp_resident
    axis, first = last_split(cfg, shape, t)
    assert axis == 0
    insns = _run(cfg, shape, t, rng, device)
    last_rows = shape.oh - (shape.oh - 1) // t.th * t.th
    assert _stored_rows(insns)[-2:] == [first, last_rows - first]
