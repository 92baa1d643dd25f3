"""A residual add fused into the convolution that makes one operand (ops/conv_residual.py,
ops/conv_add.py): bit for bit the convolution and the add apart (the numpy reference) on fsim,
and on tsim where the runtime tests mirror; the lower clip left out only where that cannot
change a value; the planner's estimate of the fused layer against fsim; the executor's choice."""

import numpy as np
import pytest

from avta.isa.config import Config, load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.runtime.net.builders import RELU, LINEAR
from avta.runtime.net.executor import run_network
from avta.runtime.net.graph import GraphBuilder
from avta.runtime.net.reference import run_reference
from avta.runtime.ops.conv_add import conv2d_add, plan_fused_add
from avta.runtime.ops.conv_plan import Conv2dShape, PlanError
from avta.runtime.ops.conv_residual import FusedAdd, drops_lower_clip, why_not
from avta.runtime.ops.conv_tail import plan_layer
from avta.runtime.ops.reference import add_ref, conv2d_ref
from avta.runtime.ops.requant import Requant
from avta.sim.fsim.backend import fsim_device

#: (conv requantization, add requantization, bias magnitude): ResNet's (lower clip left
#: out), a shift too small to leave it out, a bias added after the shift (the accumulators
#: reset), a ReLU convolution, a CLP clip, and an add with an offset.
CASES = {"resnet": (Requant(9, LINEAR), Requant(1, RELU), 8),
         "small-shift": (Requant(1, LINEAR), Requant(1, RELU), 8),
         "bias-after": (Requant(9, LINEAR), Requant(0, RELU), 1 << 22),
         "relu-conv": (Requant(8, RELU), Requant(1, RELU), 8),
         "clp": (Requant(8, (-100, 100), use_clp=True), Requant(1, (-128, 127)), 8),
         "offset": (Requant(9, LINEAR), Requant(2, LINEAR, offset=2), 8)}


def _data(cfg, int8, rng, c, h, bias_max, stride=1):
    x = int8((cfg.batch, c, h, h))
    w = int8((c, c, 3, 3), -127, 128)
    bias = rng.integers(-bias_max, bias_max + 1, c).astype(np.int32)
    oh = (h + 2 - 3) // stride + 1
    return x, w, bias, int8((cfg.batch, c, oh, oh))


@pytest.mark.parametrize("case", CASES)
def test_fused_add_is_bit_exact(cfg, int8, rng, device, case):
    """Every case on every runtime configuration (tsim too on the mirrored ones): most
    convolution outputs saturate, so every clip is exercised."""
    rq, arq, bias_max = CASES[case]
    c = 2 * cfg.block_out
    x, w, bias, short = _data(cfg, int8, rng, c, 6, bias_max)
    want = add_ref(conv2d_ref(x, w, bias, pad=1, requant=rq), short, requant=arq)
    dev = device(cfg, dram_size=2 << 20)
    np.testing.assert_array_equal(
        conv2d_add(dev, x, w, bias, short, pad=1, requant=rq, add_requant=arq), want)
    insns = dev.last_program.insns
    assert any(i.opcode == Opcode.LOAD and i.memory_type == MemType.ACC_8BIT for i in insns)
    assert any(i.opcode == Opcode.ALU and i.alu_opcode == AluOp.ADD and not i.use_imm
               for i in insns)


@pytest.mark.parametrize("config", ["default", "huge"])
@pytest.mark.parametrize("geometry", [(2, 14, 1), (4, 7, 1), (1, 9, 2)],
                         ids=lambda g: "c{}h{}s{}".format(*g))
def test_fused_add_on_both_configurations(config, rng, geometry):
    """ResNet's tail on shapes of several tiles (strided too) on default and huge, no
    bias: bit for bit the reference, and the planner's estimate within 3 % of fsim and 50
    cycles (the micro-op LOADs it leaves out weigh on a layer of a thousand cycles)."""
    cfg = load_config(config)
    blocks, h, stride = geometry
    c = blocks * cfg.block_out
    x = rng.integers(-128, 128, (1, c, h, h), dtype=np.int8)
    w = rng.integers(-127, 128, (c, c, 3, 3), dtype=np.int8)
    oh = (h - 1) // stride + 1
    short = rng.integers(-128, 128, (1, c, oh, oh), dtype=np.int8)
    rq, arq = Requant(10, LINEAR), Requant(1, RELU)
    dev = fsim_device(cfg, dram_size=16 << 20)
    out = conv2d_add(dev, x, w, None, short, stride=stride, pad=1, requant=rq, add_requant=arq)
    np.testing.assert_array_equal(
        out, add_ref(conv2d_ref(x, w, stride=stride, pad=1, requant=rq), short, requant=arq))
    plan = plan_fused_add(cfg, Conv2dShape(1, c, h, h, c, 3, 3, 1, stride), requant=rq,
                          add_requant=arq, has_bias=False)
    cycles = dev.last_result.cycles
    assert abs(plan.fused_cycles - cycles) <= 0.03 * cycles + 50, (plan, cycles)


@pytest.mark.parametrize("config", ["default", "huge"])
def test_resnet18_layers_fuse_and_the_estimate_follows_fsim(config):
    """ResNet-18's 3x3 layers with their adds (calibrated shifts): the cycle model fuses
    each, with one accumulator buffer per thread, and its estimate is within 3 % of a
    timing-only fsim run of the fused layer."""
    cfg = load_config(config)
    rq, arq = Requant(10, LINEAR), Requant(1, RELU)
    for c, h in ((64, 56), (128, 28), (256, 14), (512, 7)):
        shape = Conv2dShape(1, c, h, h, c, 3, 3, 1, 1)
        plan = plan_fused_add(cfg, shape, requant=rq, add_requant=arq, has_bias=True,
                              bias_bound=8)
        assert plan.fused and plan.fused_cycles < plan.apart_cycles, (c, plan)
        tiling = plan_layer(cfg, shape, requant=rq, has_bias=True, bias_bound=8,
                            fused=FusedAdd(arq))
        assert tiling.shortcut and tiling.slots == tiling.threads     # conv_plan.slot_counts
        zeros = np.zeros((1, c, h, h), np.int8)
        dev = fsim_device(cfg, dram_size=64 << 20, timing_only=True)
        conv2d_add(dev, zeros, np.zeros((c, c, 3, 3), np.int8), np.full(c, 8, np.int32),
                   zeros, pad=1, requant=rq, add_requant=arq)
        cycles = dev.last_result.cycles
        assert abs(plan.fused_cycles - cycles) <= 0.03 * cycles, (c, plan, cycles)


def test_the_lower_clip_goes_only_where_no_value_changes():
    """Exhaustively over the values a shift-2..4 convolution gives before its clip and every
    shortcut: the fused formula without the lower clip equals the add of the clipped output
    exactly when drops_lower_clip says it may go."""
    v = np.arange(-(1 << 12), 1 << 12, dtype=np.int64)[:, None]
    x = np.arange(-128, 128, dtype=np.int64)[None, :]
    for conv in (Requant(2, LINEAR), Requant(4, (-64, 127)), Requant(3, RELU)):
        for add in (Requant(0, RELU), Requant(1, RELU), Requant(1, LINEAR),
                    Requant(0, (0, 127), offset=300)):
            lo, hi = conv.clip
            apart = add.reference(np.clip(v, lo, hi) + x)
            fused = add.reference(np.minimum(v, hi) + x)
            assert drops_lower_clip(conv, add, True) == bool((apart == fused).all()), \
                (conv, add)
    assert not drops_lower_clip(Requant(1, LINEAR), Requant(0, RELU), True)    # v may wrap
    assert not drops_lower_clip(Requant(9, LINEAR), Requant(0, RELU), False)   # bias after


def test_adds_that_cannot_fuse_say_why():
    linear = Requant(9, LINEAR)
    assert "int8" in why_not(Requant(9), Requant(0, RELU))
    assert "int8" in why_not(Requant(9, (-200, 127)), Requant(0, RELU))
    assert "shift_a" in why_not(linear, Requant(0, RELU), shift_a=1)
    assert "host" in why_not(linear, Requant(0, RELU, scale=0.5))
    assert "multiplier" in why_not(linear, Requant(0, RELU, multiplier=1 << 14))
    cfg = load_config("default")
    plan = plan_fused_add(cfg, Conv2dShape(1, 64, 8, 8, 64, 1, 1, 0, 1), requant=linear,
                          add_requant=Requant(0, RELU), has_bias=False)
    assert not plan.fused and "1x1" in plan.why and plan.apart_cycles
    with pytest.raises(PlanError, match="int8"):
        conv2d_add(fsim_device(cfg), np.zeros((1, 16, 4, 4), np.int8),
                   np.zeros((16, 16, 3, 3), np.int8), None, np.zeros((1, 16, 4, 4), np.int8),
                   pad=1, requant=Requant(9), add_requant=Requant(0, RELU))
    with pytest.raises(ValueError, match="shortcut has shape"):
        conv2d_add(fsim_device(cfg), np.zeros((1, 16, 4, 4), np.int8),
                   np.zeros((16, 16, 3, 3), np.int8), None, np.zeros((1, 16, 2, 2), np.int8),
                   pad=1, requant=linear, add_requant=Requant(0, RELU))


def _block(c, h, rng):
    """A basic block whose second convolution feeds the add, and one whose shortcut is a
    1x1 strided convolution made after it (the fused convolution runs where the add stands)."""
    b = GraphBuilder("blocks")
    x = b.input("data", (1, c, h, h))

    def conv(name, t, cout, k, stride, clip):
        w = rng.integers(-127, 128, (cout, b.shape(t)[1], k, k), dtype=np.int8)
        return b.conv2d(name, t, w, rng.integers(-8, 9, cout).astype(np.int32),
                        stride=stride, pad=k // 2, requant=Requant(9, clip))
    y = conv("b1.conv2", conv("b1.conv1", x, c, 3, 1, RELU), c, 3, 1, LINEAR)
    x = b.add("b1.add", y, x, requant=Requant(1, RELU))
    y = conv("b2.conv2", conv("b2.conv1", x, 2 * c, 3, 2, RELU), 2 * c, 3, 1, LINEAR)
    x = b.add("b2.add", y, conv("b2.down", x, 2 * c, 1, 2, LINEAR), requant=Requant(0, RELU))
    return b.build([x])


@pytest.mark.parametrize("config", ["default", "huge"])
def test_the_executor_fuses_and_stays_bit_exact(config, rng):
    cfg = load_config(config)
    graph = _block(cfg.block_out, 8, rng)
    x = rng.integers(-128, 128, (1, cfg.block_out, 8, 8), dtype=np.int8)
    run = run_network(fsim_device(cfg, dram_size=16 << 20), graph, x)
    names = [layer.name for layer in run.layers]
    assert names == ["b1.conv1", "b1.conv2+add", "b2.conv1", "b2.down", "b2.conv2+add"]
    assert [layer.fused for layer in run.layers if layer.fused] == ["b1.add", "b2.add"]
    np.testing.assert_array_equal(run.outputs["b2.add"],
                                  run_reference(graph, x)["b2.add"])


def test_a_block_on_narrow_fields_runs_fused_on_the_device(rng):
    """On ``tiny`` with 4-bit ACC factor fields the fastest tiling of an 8x8 map (one tile of
    64 pixels) does not encode. The planner refuses it (ops/conv_fields.py), so the fusion's
    plans are programs that build: every layer runs on the device, an add fused where the
    cycle model chooses, bit for bit the reference (the plain convolutions went to the host, and a fused one failed to build
    where its add then read a tensor never made)."""
    cfg = Config.from_dict(load_config("tiny").to_dict() | {"LOG_ACC_FACTOR_RESTRICT": 4},
                           name="tiny-acc-r4")
    graph = _block(cfg.block_out, 8, rng)
    x = rng.integers(-128, 128, (1, cfg.block_out, 8, 8), dtype=np.int8)
    run = run_network(fsim_device(cfg, dram_size=16 << 20), graph, x)
    assert [layer.name for layer in run.layers if layer.on != "device"] == []
    assert [layer.fused for layer in run.layers if layer.fused]       # a fused program built
    np.testing.assert_array_equal(run.outputs["b2.add"], run_reference(graph, x)["b2.add"])
