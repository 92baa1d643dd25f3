"""conv2d on fsim, bit for bit against the numpy reference, over tilings, threads and configs."""

import itertools

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d, conv2d
from avta.runtime.ops.conv_plan import (Conv2dShape, PlanError, misfits, plan_conv2d,
                                        tiling_for)
from avta.isa.enums import AluOp, MemType, Opcode, Stage
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.ops.conv_tail import row_blocks
from avta.isa.legality import check_program

from avta.runtime.workloads import resnet18_layers

RESNET = resnet18_layers()

# (n blocks, cin blocks, h, w, cout blocks, k, pad, stride)
SMALL = [(1, 3, 6, 7, 3, 3, 1, 1), (2, 2, 9, 9, 3, 3, 1, 2), (1, 2, 5, 5, 1, 1, 0, 2),
         (1, 1, 4, 4, 2, 3, 2, 1)]
# (th, tw, tco, tci): forced tilings that split every axis, or not at all.
TILINGS = [(2, 3, 1, 1), (1, 2, 2, 2), (3, 2, 2, 1), None]


def make(cfg, rng, int8, n, ci, h, w, co, k):
    x = int8((n * cfg.batch, ci * cfg.block_in, h, w))
    wt = int8((co * cfg.block_out, ci * cfg.block_in, k, k))
    bias = rng.integers(-2000, 2000, co * cfg.block_out)
    return x, wt, bias


@pytest.mark.parametrize("geometry", SMALL, ids=lambda g: "x".join(map(str, g)))
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_small(cfg, rng, int8, device, geometry, threads):
    n, ci, h, w, co, k, pad, stride = geometry
    x, wt, bias = make(cfg, rng, int8, n, ci, h, w, co, k)
    rq = Requant(shift=6, clip=(-100, 120))
    shape = Conv2dShape(x.shape[0], x.shape[1], h, w, wt.shape[0], k, k, pad, stride)
    ref = conv2d_ref(x, wt, bias, stride=stride, pad=pad, requant=rq)
    for sizes in TILINGS:
        tiling = None if sizes is None else tiling_for(cfg, shape, *sizes, threads, bias=True)
        dev = device(cfg)
        out = conv2d(dev, x, wt, bias, stride=stride, pad=pad, requant=rq, threads=threads,
                     tiling=tiling)
        np.testing.assert_array_equal(out, ref, err_msg=f"tiling {sizes}")
        counters = dev.last_result.counters
        for name, value in dev.last_program.expected_counters().items():
            assert counters[name] == value, name


@pytest.mark.parametrize("seed", range(3))
def test_conv2d_random_schedule(cfg, rng, int8, device, seed):
    """Any interleaving of the stages gives the same output: the tokens cover every hazard."""
    x, wt, bias = make(cfg, rng, int8, 1, 2, 6, 5, 2, 3)
    shape = Conv2dShape(x.shape[0], x.shape[1], 6, 5, wt.shape[0], 3, 3, 1, 1)
    rq = Requant(shift=5, clip=(-64, 64), use_clp=True)
    ref = conv2d_ref(x, wt, bias, stride=1, pad=1, requant=rq)
    for threads, sizes in itertools.product((1, 2), [(2, 2, 1, 1), (1, 5, 2, 1)]):
        tiling = tiling_for(cfg, shape, *sizes, threads, bias=True)
        dev = device(cfg, schedule="random", seed=seed)
        out = conv2d(dev, x, wt, bias, stride=1, pad=1, requant=rq, threads=threads,
                     tiling=tiling)
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("with_bias", [True, False])
def test_four_accumulator_buffers(cfg, rng, int8, device, with_bias, fresh_builds):
    """Two threads with four accumulator buffers (two per ACC bank): tile t + 2 starts before
    tile t is stored; bit for bit the reference, with a bias start or resets and MOVs of 0."""
    n, ci, h, w, co, k = 1, 2, 6, 8, 2, 1
    x, wt, bias = make(cfg, rng, int8, n, ci, h, w, co, k)
    bias = bias if with_bias else None
    rq = Requant(shift=6, clip=(-100, 120))
    shape = Conv2dShape(x.shape[0], x.shape[1], h, w, wt.shape[0], k, k, 0, 1)
    tiling = tiling_for(cfg, shape, 1, 4, 1, 2, 2, bias=with_bias, slots=4)
    assert tiling.slots == 4 and tiling.acc_banks == 2
    prog = build_conv2d(cfg, shape, Conv2dBuffers(0, 0, 0, 0 if with_bias else None),
                        requant=rq, tiling=tiling, bias_bound=2000)
    assert prog.ledger.peak(Stage.STORE, Stage.COMPUTE) == 4   # four tiles stored ahead
    out = conv2d(device(cfg), x, wt, bias, requant=rq, tiling=tiling)
    np.testing.assert_array_equal(out, conv2d_ref(x, wt, bias, requant=rq))


def test_four_accumulator_buffers_need_two_banks_and_four_tokens():
    cfg = load_config("huge")
    shape = Conv2dShape(1, 64, 56, 56, 256, 1, 1, 0, 1)
    assert "four tokens" in " ".join(misfits(load_config("tight"), shape, 1, 1, 1, 1, 2,
                                             bias=True, slots=4))
    assert "two ACC banks" in " ".join(misfits(cfg, shape, 2, 56, 2, 1, 2, bias=True,
                                               slots=4))
    assert tiling_for(cfg, shape, 1, 56, 2, 1, 2, bias=True, slots=4).slots == 4


def test_conv2d_without_bias_or_clip(default_cfg, rng, int8, device):
    cfg = default_cfg
    x, wt, _ = make(cfg, rng, int8, 1, 1, 5, 5, 1, 3)
    for rq in (Requant(), Requant(shift=-2), Requant(shift=9)):
        out = conv2d(device(cfg), x, wt, stride=1, pad=1, requant=rq)
        np.testing.assert_array_equal(out, conv2d_ref(x, wt, stride=1, pad=1, requant=rq))


def test_program_is_legal_and_double_buffered(fresh_builds):
    cfg = load_config("default")
    shape = Conv2dShape(1, 64, 56, 56, 64, 3, 3, 1, 1)
    prog = build_conv2d(cfg, shape, Conv2dBuffers(0, 0, 0, 0), requant=Requant(8, (0, 127)))
    assert check_program(prog.insns) is None
    # Two virtual threads: the load stage can run one task ahead, never more (C→L holds the two
    # buffers' tokens); L→C holds one token more while a task loaded in two pieces
    # (conv_first: this layer's first and last) waits for its second.
    assert prog.ledger.peak(1, 0) == 2
    assert prog.ledger.peak(0, 1) == 3


def test_plan_errors_are_clear():
    cfg = load_config("default")
    with pytest.raises(PlanError, match="cin = 8 is not a multiple of BLOCK_IN = 16"):
        plan_conv2d(cfg, Conv2dShape(1, 8, 4, 4, 16, 3, 3, 1, 1))
    with pytest.raises(PlanError, match="pad 16"):
        plan_conv2d(cfg, Conv2dShape(1, 16, 4, 4, 16, 3, 3, 16, 1))


def resnet_case(cfg, name, rng, int8):
    layer = RESNET[name]
    x = int8((cfg.batch, layer["cin"], layer["h"], layer["w"]))
    wt = int8((layer["cout"], layer["cin"], layer["k"], layer["k"]))
    bias = rng.integers(-16384, 16384, layer["cout"])   # upstream's bias range (§6.2)
    return layer, x, wt, bias


@pytest.mark.slow
@pytest.mark.parametrize("name", [f"C{i}" for i in range(2, 12)])
def test_resnet18_default(default_cfg, rng, int8, device, name):
    cfg = default_cfg
    layer, x, wt, bias = resnet_case(cfg, name, rng, int8)
    rq = Requant(shift=8, clip=(0, 127))                # upstream's benchmark tail
    dev = device(cfg, dram_size=8 << 20)
    out = conv2d(dev, x, wt, bias, stride=layer["stride"], pad=layer["pad"], requant=rq)
    ref = conv2d_ref(x, wt, bias, stride=layer["stride"], pad=layer["pad"], requant=rq)
    np.testing.assert_array_equal(out, ref)
    assert dev.last_result.counters["GEMM_STEPS"] == dev.last_program.expected_counters()[
        "GEMM_STEPS"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["C2", "C4", "C9", "C11"])
@pytest.mark.parametrize("cfg", ["tiny", "batch2", "rect"], indirect=True)
def test_resnet18_other_configs(cfg, rng, int8, device, name):
    layer, x, wt, bias = resnet_case(cfg, name, rng, int8)
    rq = Requant(shift=8, clip=(-127, 127), use_clp=True)
    dev = device(cfg, dram_size=8 << 20)
    out = conv2d(dev, x, wt, bias, stride=layer["stride"], pad=layer["pad"], requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, wt, bias, stride=layer["stride"],
                                                  pad=layer["pad"], requant=rq))


# (k, stride, pad, h): ResNet's 7x7/2 pad 3 stem and MobileNet's 3x3/2 pad 1, on small images.
STEMS = {"resnet": (7, 2, 3, 11), "mobilenet": (3, 2, 1, 8)}


@pytest.mark.parametrize("stem", STEMS)
def test_stem_three_channels(cfg, rng, int8, device, stem):
    """CIN = 3 (RGB): input and weights padded with zero channels up to BLOCK_IN."""
    k, stride, pad, h = STEMS[stem]
    x, wt = int8((cfg.batch, 3, h, h + 1)), int8((2 * cfg.block_out, 3, k, k))
    bias = rng.integers(-2000, 2000, wt.shape[0])
    rq = Requant(shift=8, clip=(0, 127))
    dev = device(cfg)
    out = conv2d(dev, x, wt, bias, stride=stride, pad=pad, requant=rq, pad_cin=True)
    np.testing.assert_array_equal(out, conv2d_ref(x, wt, bias, stride=stride, pad=pad,
                                                  requant=rq))
    assert any(i.opcode == 0 and i.x_pad_0 == pad for i in dev.last_program.insns)


def test_stem_errors_name_the_rule(tiny_cfg, device):
    x, wt = np.zeros((1, 3, 8, 8), np.int8), np.zeros((4, 3, 7, 7), np.int8)
    with pytest.raises(PlanError, match=r"cin = 3 is not a multiple of BLOCK_IN = 4.*pad_cin"):
        conv2d(device(tiny_cfg), x, wt, stride=2, pad=3)
    # huge: one 7x7 block of weights is 49 WGT rows, its WGT scratchpad has 32.
    huge = load_config("huge")
    with pytest.raises(PlanError, match=r"7x7 kernel need 98 WGT rows, the WGT scratchpad has "
                                        r"32.*on the host"):
        plan_conv2d(huge, Conv2dShape(1, 64, 224, 224, 64, 7, 7, 3, 2), bias=True)
    with pytest.raises(PlanError, match="LOAD pad fields"):
        plan_conv2d(tiny_cfg, Conv2dShape(1, 4, 40, 40, 4, 33, 33, 16, 1))


def _per_channel(rng, channels):
    """Per-channel fixed point (multipliers, shifts 8..11, offsets), the bias first."""
    m = tuple(int(v) for v in rng.integers(1 << 14, 1 << 15, channels))
    s = tuple(int(v) for v in rng.integers(8, 12, channels))
    return Requant(0, (0, 127), bias_first=True, multiplier=m, shifts=s,
                   offsets=tuple(1 << (k - 1) for k in s))


@pytest.mark.parametrize("kind", ["shifted bias start", "per-channel rows", "bias added"])
def test_resident_rows_loaded_once_then_copied(cfg, rng, int8, device, kind):
    """With the buffers in both ACC banks and the accumulators starting at the bias, the
    resident rows (bias, per-channel rows) are LOADed into the first bank only and ALU-copied
    into the other (a LOAD there would wait on the read engine behind the load stage's first
    bursts): one compute-stage LOAD ACC before the first GEMM. Upstream's tail (a bias too
    large to start them, added after the shift) keeps a LOAD per bank and no MOV. The output
    is bit for bit the reference's."""
    n, ci, h, w, co, k = 1, 2, 6, 8, 2, 1
    x, wt, bias = make(cfg, rng, int8, n, ci, h, w, co, k)
    rq = Requant(shift=6, clip=(-100, 120))
    if kind == "bias added":
        bias[0] = 1 << 26           # too large to start the accumulators at bias << 6
    elif kind == "per-channel rows":
        cfg = cfg.replace(alu_scale=2)      # the per-channel multiply (docs/isa.md §3.4)
        rq = _per_channel(rng, wt.shape[0])
    shape = Conv2dShape(x.shape[0], x.shape[1], h, w, wt.shape[0], k, k, 0, 1)
    tiling = tiling_for(cfg, shape, 1, 4, 1, 2, 2, bias=row_blocks(rq))
    assert tiling.acc_banks == 2
    dev = device(cfg)
    out = conv2d(dev, x, wt, bias, requant=rq, tiling=tiling)
    np.testing.assert_array_equal(out, conv2d_ref(x, wt, bias, requant=rq))
    insns = dev.last_program.insns
    first_gemm = next(i for i, insn in enumerate(insns) if insn.opcode == Opcode.GEMM)
    acc_loads = [insn for insn in insns[:first_gemm]
                 if insn.opcode == Opcode.LOAD and insn.memory_type == MemType.ACC]
    movs = [insn for insn in insns if insn.opcode == Opcode.ALU and insn.alu_opcode == AluOp.MOV]
    assert len(acc_loads) == (2 if kind == "bias added" else 1)
    assert bool(movs) == (kind != "bias added")
