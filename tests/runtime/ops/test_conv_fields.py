"""The conv2d planner refuses every tiling whose program would not encode
(ops/conv_fields.py): on configurations whose factor fields are restricted (the sweep's
``*_FACTOR_RESTRICT`` points) a layer runs on the device with the best tiling that encodes,
bit for bit the reference, and every tiling the planner returns builds."""

import numpy as np
import pytest

from avta.isa.config import Config, fit_formats, load_config
from avta.runtime.net.builders import LINEAR, RELU
from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d, conv2d
from avta.runtime.ops.conv_plan import Conv2dShape, misfits, plan_conv2d, tiling_for
from avta.runtime.ops.conv_residual import FusedAdd
from avta.runtime.ops.conv_tail import plan_layer
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.workloads import resnet18_layers


def _restricted(name, **changes):
    """``default`` with ``changes`` (upper-case keys), fitted as a sweep point is
    (:func:`~avta.isa.config.fit_formats`: the smallest ``*_FACTOR_RESTRICT`` that make the
    formats fit, 64-bit micro-ops)."""
    cfg, _ = fit_formats(load_config("default").to_dict() | changes, name=name)
    return cfg


#: Points of docs/examples/sweep-resnet18-224-216.yaml whose ACC factor fields are restricted
#: (BLOCK 8: the ACC index grows, so the formats fit only with a restriction of 3, 4 or 5 bits),
#: and ``default`` with its INP factor fields cut to 5 bits.
RESTRICTED = {
    "block8-acc-r3": dict(LOG_BLOCK_IN=3, LOG_BLOCK_OUT=3, LOG_INP_BUFF_SIZE=14),
    "block8-acc-r4": dict(LOG_BLOCK_IN=3, LOG_BLOCK_OUT=3, LOG_INP_BUFF_SIZE=15),
    "block8-acc-r5": dict(LOG_BLOCK_IN=3, LOG_BLOCK_OUT=3, LOG_INP_BUFF_SIZE=16),
    "default-inp-r6": dict(LOG_INP_FACTOR_RESTRICT=6),
}


def test_the_sweep_points_are_restricted():
    """The configurations above are the restricted ones the sweep found the defect on."""
    restrictions = {name: (cfg.log_acc_factor_restrict, cfg.inp_factor_bits)
                    for name, cfg in ((n, _restricted(n, **v)) for n, v in RESTRICTED.items())}
    assert restrictions == {"block8-acc-r3": (3, 11), "block8-acc-r4": (4, 12),
                            "block8-acc-r5": (5, 13), "default-inp-r6": (0, 5)}


def _resnet_shapes(cfg):
    """ResNet-18's convolutions at 224x224 as the executor runs them: C2..C11, and the 7x7
    stem as the 1x1 convolution over its patches (3·7·7 channels, padded to the block)."""
    shapes = {}
    for name, layer in resnet18_layers().items():
        if name == "C1":
            cin = -(-layer["cin"] * layer["k"] ** 2 // cfg.block_in) * cfg.block_in
            shapes[name] = Conv2dShape(cfg.batch, cin, 112, 112, layer["cout"], 1, 1)
            continue
        shapes[name] = Conv2dShape(cfg.batch, layer["cin"], layer["h"], layer["w"],
                                   layer["cout"], layer["k"], layer["k"], layer["pad"],
                                   layer["stride"])
    return shapes


def test_a_tiling_whose_accumulator_pitch_overflows_the_alu_field_is_refused():
    """ResNet-18's C2 on the BLOCK 8 point with an 8-bit ACC factor field: a tile of 6 x 56
    pixels has an accumulator pitch of 336 rows, which the one-micro-op ALU passes write into
    dst_factor_out; the planner said it fits, and the encoder raised."""
    cfg = _restricted("block8-acc-r4", **RESTRICTED["block8-acc-r4"])
    shape = _resnet_shapes(cfg)["C2"]
    why = misfits(cfg, shape, 6, 56, 4, 2, 2, bias=True)
    assert any("336" in w and "8-bit ALU dst_factor_out" in w for w in why), why
    assert tiling_for(cfg, shape, 6, 56, 4, 2, 2, bias=True) is None
    assert tiling_for(cfg, shape, 4, 56, 4, 2, 2, bias=True) is not None    # 224 rows fit


def test_whole_row_stores_of_a_large_map_are_refused(fresh_builds):
    """A tile of whole output rows is stored as runs OH·OW pixels apart: on a 256x256 map that
    is 65,536, one more than the STORE's 16-bit x_stride holds, so such a tiling is refused on
    an unrestricted configuration too (the planner accepted it, and its program did not
    encode); a tile narrower than the map stores per block and builds."""
    cfg = load_config("default")
    shape = Conv2dShape(1, 16, 256, 256, 16, 1, 1)
    why = misfits(cfg, shape, 2, 256, 1, 1, 2, bias=True)
    assert why == ["the output STORE's block stride (whole rows OH x OW) is 65536: it does "
                   "not fit the 16-bit STORE x_stride field (at most 65535) on this "
                   "configuration"]
    narrower = tiling_for(cfg, shape, 2, 128, 1, 1, 2, bias=True)
    assert narrower is not None
    build_conv2d(cfg, shape, Conv2dBuffers(0, 0, 0, 0), requant=Requant(8, RELU),
                 tiling=narrower)


@pytest.mark.parametrize("name", RESTRICTED)
def test_every_tiling_the_planner_returns_builds(name, fresh_builds):
    """On each restricted configuration, every ResNet-18 convolution's plan — with its bias
    starting the accumulators or added after the shift, and with a residual add fused into
    the 3x3 stride-1 layers — builds: no field of its program overflows."""
    cfg = _restricted(name, **RESTRICTED[name])
    for layer, shape in _resnet_shapes(cfg).items():
        cases = [(Requant(8, RELU), 8, None), (Requant(8, RELU), 1 << 22, None)]
        if shape.kh == 3 and shape.stride == 1:
            cases.append((Requant(9, LINEAR), 8, FusedAdd(Requant(1, RELU))))
        for requant, bound, fused in cases:
            bufs = Conv2dBuffers(0, 0, 0, 0, 0 if fused else None)
            tiling = plan_layer(cfg, shape, requant=requant, has_bias=True, bias_bound=bound,
                                fused=fused)
            assert not misfits(cfg, shape, tiling.th, tiling.tw, tiling.tco, tiling.tci,
                               tiling.threads, bias=tiling.bias_rows // (shape.cout //
                                                                         cfg.block_out),
                               slots=tiling.slots, shortcut=tiling.shortcut)
            program = build_conv2d(cfg, shape, bufs, requant=requant, bias_bound=bound,
                                   fused=fused)
            assert len(program) > 0, (layer, tiling)


def _small_restricted():
    """``tiny`` with 4-bit ACC factor fields: an accumulator pitch of 16 rows or more does
    not encode, where the fastest tiling of a small map wants the whole map in one tile."""
    return Config.from_dict(load_config("tiny").to_dict() | {"LOG_ACC_FACTOR_RESTRICT": 4},
                            name="tiny-acc-r4")


def test_a_layer_that_did_not_encode_runs_bit_exact(rng, int8, device):
    """An 8x8 map on ``tiny`` with 4-bit ACC factor fields: the planner chose one tile of
    64 pixels, whose program did not encode (the executor then ran the layer on the host);
    now the best tiling that encodes runs on fsim, bit for bit the reference."""
    cfg = _small_restricted()
    x = int8((1, 2 * cfg.block_in, 8, 8))
    w = int8((2 * cfg.block_out, 2 * cfg.block_in, 3, 3))
    bias = rng.integers(-2000, 2000, 2 * cfg.block_out)
    rq = Requant(shift=6, clip=(-100, 120))
    shape = Conv2dShape(1, x.shape[1], 8, 8, w.shape[0], 3, 3, 1, 1)
    tiling = plan_conv2d(cfg, shape, bias=True)
    assert tiling.acc_pitch < 1 << cfg.acc_factor_bits
    out = conv2d(device(cfg), x, w, bias, pad=1, requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, pad=1, requant=rq))


def test_resnet18_layer1_runs_bit_exact_on_the_sweep_point(rng, int8, device):
    """ResNet-18's layer1 convolution (C2) on the sweep's BLOCK 8 point with an 8-bit ACC
    factor field, which went to the host: on the device, bit for bit the reference."""
    cfg = _restricted("block8-acc-r4", **RESTRICTED["block8-acc-r4"])
    layer = resnet18_layers()["C2"]
    x = int8((cfg.batch, layer["cin"], layer["h"], layer["w"]))
    w = int8((layer["cout"], layer["cin"], 3, 3))
    bias = rng.integers(-16384, 16384, layer["cout"])
    rq = Requant(shift=8, clip=(0, 127))
    out = conv2d(device(cfg, dram_size=8 << 20), x, w, bias, pad=1, requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, pad=1, requant=rq))
