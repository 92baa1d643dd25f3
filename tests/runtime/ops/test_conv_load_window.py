"""A conv2d whose input windows and weights are both resident lets its load stage run a task
further ahead of the GEMMs (runtime.pipeline.load_window): no later LOAD overwrites what a
task's GEMMs read, so its LOADs stream instead of waiting, every ``threads`` tasks, for a GEMM
to drain and two tokens to travel (ResNet-18's 1×1 stride-2 downsample layers on ``huge``)."""

import numpy as np

from avta.isa.enums import Opcode, Stage
from avta.isa.memories import stage_of
from avta.runtime.ops import conv2d as conv2d_module
from avta.runtime.ops import conv_emit
from avta.isa.config import load_config
from avta.runtime.ops.conv2d import bias_bound, conv2d, plan_layer
from avta.runtime.ops.conv_cycles import tiling_load_window
from avta.runtime.ops.conv_plan import Conv2dShape, tiling_for
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant

# (input blocks, output blocks, input side, stride): tasks of one output and one input block.
LAYER = (4, 8, 14, 2)


def _layer(cfg, int8, rng):
    ci, co, side, stride = LAYER
    x = int8((cfg.batch, ci * cfg.block_in, side, side))
    w = int8((co * cfg.block_out, ci * cfg.block_in, 1, 1))
    bias = rng.integers(-50, 50, w.shape[0])
    shape = Conv2dShape(cfg.batch, x.shape[1], side, side, w.shape[0], 1, 1, 0, stride)
    t = tiling_for(cfg, shape, shape.oh, shape.ow, 1, 1, 2, bias=True)
    return x, w, bias, shape, t


def _load_stage_pops(program):
    """The load stage's pops of the compute stage's tokens (C→L: a LOAD's ``pop_next``)."""
    return sum(i.pop_next for i in program.insns
               if i.opcode == Opcode.LOAD and stage_of(i.memory_type) == Stage.LOAD)


def _held_to_threads(monkeypatch):
    """Build conv2d programs with the load stage held to the threads' window, as other tilings
    are (and not from the program cache, whose key does not see the difference)."""
    monkeypatch.setattr(conv_emit, "tiling_load_window", lambda cfg, t: t.threads)
    monkeypatch.setattr(conv2d_module, "cached_program", lambda builder, build, *args: build())


def test_resident_tasks_load_ahead(cfg, rng, int8, device, monkeypatch):
    """Bit-exact on fsim and (where mirrored) tsim, the load stage a task further ahead: it pops
    C→L from the fourth task on, not the third; held to the threads' window the same tiling is
    never faster."""
    x, w, bias, shape, t = _layer(cfg, int8, rng)
    assert t.inp_resident and t.wgt_resident and not t.reload_weights
    window = tiling_load_window(cfg, t)
    tasks = (shape.cout // cfg.block_out) * (shape.cin // cfg.block_in)
    assert window == t.threads + 1 and tasks > window
    rq = Requant(6, (-128, 127))
    ahead = device(cfg)
    out = conv2d(ahead, x, w, bias, stride=2, requant=rq, tiling=t)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, stride=2, requant=rq))
    assert _load_stage_pops(ahead.last_program) == tasks - window

    _held_to_threads(monkeypatch)
    held = device(cfg)
    out = conv2d(held, x, w, bias, stride=2, requant=rq, tiling=t)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, stride=2, requant=rq))
    assert _load_stage_pops(held.last_program) == tasks - t.threads
    assert ahead.last_result.cycles <= held.last_result.cycles


def test_a_weights_bound_layer_streams_its_loads(rng, int8, device, monkeypatch):
    """ResNet-18's C10 on ``huge`` (256 → 512 channels, 1×1 stride 2, 7×7 outputs): 32 tasks
    whose 64-beat weight LOADs take about as long as a GEMM and its drain. Held to two tasks
    ahead, every second LOAD waits for a GEMM to drain; ahead, they follow one another (fsim:
    2,861 cycles against 2,885; tsim 3,048 against 3,133)."""
    cfg = load_config("huge")
    x = int8((1, 256, 14, 14))
    w = int8((512, 256, 1, 1))
    bias = rng.integers(-1 << 14, 1 << 14, 512)
    rq = Requant(8, (0, 127))
    shape = Conv2dShape(1, 256, 14, 14, 512, 1, 1, 0, 2)
    t = plan_layer(cfg, shape, requant=rq, has_bias=True, bias_bound=bias_bound(bias))
    ahead = device(cfg)
    out = conv2d(ahead, x, w, bias, stride=2, requant=rq, tiling=t)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, stride=2, requant=rq))
    assert t.inp_resident and t.wgt_resident
    _held_to_threads(monkeypatch)
    held = device(cfg)
    conv2d(held, x, w, bias, stride=2, requant=rq, tiling=t)
    assert ahead.last_result.cycles < held.last_result.cycles
