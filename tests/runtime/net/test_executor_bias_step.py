"""The network executor gives a convolution the bias step's operands (runtime/ops/conv2d.py
pack_bias_step), so a whole network starts the accumulators by the GEMM core where the planner
says that is faster, as a layer run alone does: bit for bit the reference, and no ALU MOV of
the bias rows left in the program."""

import numpy as np

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.runtime.net.executor import dram_bytes, run_network
from avta.runtime.net.graph import Graph, Node
from avta.runtime.net.reference import random_input, run_reference
from avta.runtime.ops.conv_plan import Conv2dShape
from avta.runtime.ops.conv_tail import plan_layer
from avta.runtime.ops.requant import Requant


def _per_channel(rng, channels):
    """Per-channel fixed point of 24-bit multipliers (huge's SCL with ALU_SCALE 2), shifts
    8..11, a rounding half and a zero point in the offsets, clip 0..127."""
    m = tuple(int(v) for v in rng.integers(1 << 22, 1 << 23, channels))
    s = tuple(int(v) for v in rng.integers(8, 12, channels))
    return Requant(0, (0, 127), bias_first=True, multiplier=m, shifts=s, multiplier_bits=24,
                   offsets=tuple(3 * (1 << k) + (1 << (k - 1)) for k in s))


def _bias_movs(program):
    """The tiles' bias MOVs: those before the load stage's first LOAD copy the resident rows
    into the second ACC bank (conv_emit) and start no tile."""
    first_load = next(k for k, i in enumerate(program.insns)
                      if i.opcode == Opcode.LOAD and i.memory_type in (MemType.INP, MemType.WGT))
    return sum(1 for i in program.insns[first_load:] if i.opcode == Opcode.ALU
               and i.alu_opcode == AluOp.MOV and not i.use_imm)


def test_a_network_layer_starts_by_the_gemm_core(device):
    """ResNet-18's C4 at a quarter of its pixels (a strided 1x1, ALU-bound on huge): the
    planner takes the GEMM start when it has the step's operands, and the executor gives them."""
    rng = np.random.default_rng(4)
    cfg = load_config("huge").replace(alu_scale=2)
    sh = Conv2dShape(1, 64, 28, 28, 128, 1, 1, 0, 2)
    q = _per_channel(rng, sh.cout)
    bias = rng.integers(-1 << 14, 1 << 14, sh.cout).astype(np.int32)
    w = rng.integers(-128, 128, (sh.cout, sh.cin, 1, 1), dtype=np.int8)
    bound = int(np.abs(bias).max())
    assert plan_layer(cfg, sh, requant=q, has_bias=True, bias_bound=bound,
                      bias_step=True).bias_step
    graph = Graph("c4", {"x": (1, sh.cin, sh.h, sh.w)},
                  [Node("c4", "conv2d", ["x"], attrs=dict(stride=2), weights=w, bias=bias,
                        requant=q)], ["c4"])
    x = random_input(graph, seed=3)
    dev = device(cfg, dram_size=dram_bytes(cfg, graph))
    run = run_network(dev, graph, x)
    want = run_reference(graph, x, keep=False)
    np.testing.assert_array_equal(run.outputs["c4"], want["c4"])
    assert np.unique(want["c4"]).size > 20
    resets = sum(1 for i in dev.last_program.insns if i.opcode == Opcode.GEMM and i.reset)
    assert resets > 1 and _bias_movs(dev.last_program) == 0
