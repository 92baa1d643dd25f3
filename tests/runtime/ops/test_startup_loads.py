"""The compute stage's loads at a layer's start come before the load stage's bursts.

On the RTL the compute stage's LOADs (micro-ops, ACC rows) share the read engine with the load
stage's (hw/axi/vme.py) and wait behind its bursts: a conv2d whose bias loads and micro-op load
queued behind the first weights and windows started its compute chain about 250 cycles late on
tsim (``huge``), a delay the whole layer kept when the ALU binds it. The load stage now waits
for a token the compute stage pushes after those loads.
"""

import numpy as np
import pytest

from avta.isa.enums import MemType, Opcode, Stage
from avta.runtime.ops.conv2d import conv2d
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant


def _startup(program):
    """(index of the first load-stage instruction, index of the first GEMM, indices of the
    compute stage's LOADs before that GEMM)."""
    insns = program.insns
    first_load = next(i for i, insn in enumerate(insns) if insn.stage == Stage.LOAD)
    first_gemm = next(i for i, insn in enumerate(insns) if insn.opcode == Opcode.GEMM)
    compute_loads = [i for i, insn in enumerate(insns[:first_gemm])
                     if insn.stage == Stage.COMPUTE and insn.opcode == Opcode.LOAD]
    return first_load, first_gemm, compute_loads


@pytest.mark.parametrize("shift", [0, 8])
def test_load_stage_waits_for_the_bias_and_uop_loads(cfg, rng, int8, device, shift):
    x = int8((cfg.batch, 2 * cfg.block_in, 6, 5))
    w = int8((2 * cfg.block_out, 2 * cfg.block_in, 1, 1))
    bias = rng.integers(-8, 9, w.shape[0])
    rq = Requant(shift, (-128, 127))
    dev = device(cfg)
    out = conv2d(dev, x, w, bias, requant=rq)
    np.testing.assert_array_equal(out, conv2d_ref(x, w, bias, requant=rq))
    program = dev.last_program
    first_load, first_gemm, compute_loads = _startup(program)
    insns = program.insns
    assert any(insns[i].memory_type == MemType.ACC for i in compute_loads)
    # The first load-stage instruction pops C→L, pushed by the compute stage's last startup LOAD.
    assert insns[first_load].pop_next
    pusher = next(i for i, insn in enumerate(insns)
                  if insn.stage == Stage.COMPUTE and insn.push_prev)
    before = [i for i in compute_loads if i < first_load]
    assert insns[pusher].opcode == Opcode.LOAD and pusher == max(before)
    # With a shift the bias rows are shifted left by an ALU pass: its micro-ops load first too.
    assert any(insns[i].memory_type == MemType.UOP for i in before) == bool(shift)
