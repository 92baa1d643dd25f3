"""Runtime programs on tsim and fsim: same results, same final DRAM image, same exact counters.

Each scenario runs an operator of the runtime on a fresh device of each target with the same
inputs; the final DRAM images must be identical byte for byte (docs/isa.md: bit-exact agreement for
well-formed programs), with a plain memory and with the memory model shaking the design
(random latency, reordering across IDs, backpressure on every channel).
"""

import numpy as np
import pytest

from avta.isa.enums import AluOp
from avta.runtime.ops.conv2d import conv2d
from avta.runtime.ops.depthwise import depthwise_conv2d
from avta.runtime.ops.elementwise import elementwise
from avta.runtime.ops.matmul import matmul
from avta.runtime.ops.pool import max_pool2d
from avta.runtime.ops.requant import Requant
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.mirror import run_differences

pytestmark = pytest.mark.tsim


def _i8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _i32(rng, shape, bound=1 << 20):
    return rng.integers(-bound, bound, shape, dtype=np.int32)


def scenario_matmul(dev, rng, threads):
    cfg = dev.cfg
    a = _i8(rng, (2 * cfg.batch, 3 * cfg.block_in))
    w = _i8(rng, (2 * cfg.block_out, 3 * cfg.block_in))
    return matmul(dev, a, w, requant=Requant(shift=6, clip=(-100, 100), use_clp=True),
                  threads=threads)


def scenario_matmul_bias_minmax(dev, rng, threads):
    cfg = dev.cfg
    a = _i8(rng, (cfg.batch, 2 * cfg.block_in))
    w = _i8(rng, (cfg.block_out, 2 * cfg.block_in))
    bias = _i32(rng, (cfg.block_out,), 1000)
    return matmul(dev, a, w, bias, requant=Requant(shift=4, clip=(-90, 70)), threads=threads)


def scenario_alu_immediates(dev, rng, threads):
    steps = [(AluOp.ADD, 77), (AluOp.MUL, -3), (AluOp.SHR, 2), (AluOp.SHR, -3),
             (AluOp.MAX, -500), (AluOp.MIN, 600), (AluOp.CLP, 300), (AluOp.MOV, 5),
             (AluOp.ADD, -7)]
    return elementwise(dev, _i32(rng, (3, dev.cfg.batch, dev.cfg.block_out)), steps,
                       threads=threads)


def scenario_alu_tensors(dev, rng, threads):
    shape = (4, dev.cfg.batch, dev.cfg.block_out)
    b = _i32(rng, shape, 40)
    steps = [(AluOp.ADD, "b"), (AluOp.MUL, "b"), (AluOp.SHR, "b"), (AluOp.MAX, "b"),
             (AluOp.MIN, "b"), (AluOp.CLP, "b"), (AluOp.MOV, "b")]
    return elementwise(dev, _i32(rng, shape), steps, b, threads=threads)


def scenario_acc_8bit(dev, rng, threads):
    shape = (2, dev.cfg.batch, dev.cfg.block_out)
    return elementwise(dev, _i8(rng, shape), [(AluOp.ADD, 1)], a_8bit=True, threads=threads)


def scenario_conv2d(dev, rng, threads):
    cfg = dev.cfg
    x = _i8(rng, (cfg.batch, 2 * cfg.block_in, 5, 5))
    w = _i8(rng, (cfg.block_out, 2 * cfg.block_in, 3, 3))
    return conv2d(dev, x, w, pad=1, requant=Requant(shift=8, clip=(-127, 127)),
                  threads=threads)


def scenario_max_pool(dev, rng, threads):
    cfg = dev.cfg
    return max_pool2d(dev, _i8(rng, (cfg.batch, cfg.block_out, 6, 6)), k=3, stride=2, pad=1,
                      threads=threads)


def scenario_depthwise(dev, rng, threads, path="gemm"):
    cfg = dev.cfg
    x = _i8(rng, (cfg.batch, 2 * cfg.block_out, 5, 5))
    w = _i8(rng, (2 * cfg.block_out, 1, 3, 3))
    return depthwise_conv2d(dev, x, w, pad=1, requant=Requant(shift=3, clip=(-127, 127)),
                            threads=threads, path=path)


def scenario_depthwise_alu(dev, rng, threads):
    return scenario_depthwise(dev, rng, threads, path="alu")


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items()
             if name.startswith("scenario_")}


@pytest.fixture
def run_both(both_targets):
    """``run(cfg, scenario, seed, *, threads=2, knobs=MemoryKnobs())``: the scenario on fresh
    fsim and tsim devices; ``[(device, result)]`` of each."""
    def run(cfg, scenario, seed, *, threads=2, knobs=MemoryKnobs()):
        return [(dev, np.asarray(SCENARIOS[scenario](dev, np.random.default_rng(seed), threads)))
                for dev in both_targets(cfg, knobs)]
    return run


def assert_same(outcomes):
    (fdev, fres), (tdev, tres) = outcomes
    assert np.array_equal(fres, tres), "operator results differ"
    differences = run_differences(fdev.last_result, tdev.last_result, fdev.backend.dram,
                                  tdev.backend.dram, ("fsim", "tsim"))
    assert not differences, differences


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_on_both_targets(run_both, cfg, scenario):
    assert_same(run_both(cfg, scenario, seed=11))


@pytest.mark.parametrize("scenario", ["matmul", "alu_tensors", "conv2d", "max_pool",
                                      "depthwise", "depthwise_alu"])
def test_same_with_a_shaking_memory(run_both, cfg, scenario):
    assert_same(run_both(cfg, scenario, seed=12, knobs=MemoryKnobs.random(seed=3)))


@pytest.mark.parametrize("threads", [1, 2])
def test_same_with_one_and_two_virtual_threads(run_both, cfg, threads):
    assert_same(run_both(cfg, "matmul", seed=13, threads=threads))
