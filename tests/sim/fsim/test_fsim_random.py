"""Random GEMM/ALU sequences (hypothesis) against the per-step references: any kernel, loop
bounds, factors (overlapping rows included), op and immediate must agree bit for bit."""

import numpy as np
from hypothesis import given, settings, strategies as st

from avta.isa.config import load_config
from avta.isa.enums import AluOp
from avta.isa.insn import Uop
from avta.sim.image import alu, gemm, run_alone

CFG = load_config("tiny").replace(alu_scale=1)      # every ALU op, SCL included
INP_ROWS, WGT_ROWS, ACC_ROWS = 64, 32, 64
UOPS, INP, WGT, ACC = 0x800, 0x1000, 0x2000, 0x4000

# Indices stay inside the loaded rows: 23 + 3·6 + 3·6 < 64 and 6 + 3·4 + 3·4 < 32.
uops = st.lists(st.builds(Uop, st.integers(0, 23), st.integers(0, 23), st.integers(0, 6)),
                min_size=1, max_size=6)
window = st.tuples(st.integers(0, 6), st.integers(0, 6))
iters = st.tuples(st.integers(0, 3), st.integers(0, 3))
factors = st.tuples(st.integers(0, 6), st.integers(0, 6))
gemms = st.builds(lambda w, i, d, s, g, r: gemm(uops=w, iters=i, dst=d, src=s,
                                                wgt=(g[0] % 5, g[1] % 5), reset=r),
                  window, iters, factors, factors, factors, st.integers(0, 1))
alus = st.builds(lambda op, w, i, d, s, imm: alu(op, uops=w, iters=i, dst=d, src=s, imm=imm),
                 st.sampled_from(list(AluOp)), window, iters, factors, factors,
                 st.none() | st.integers(-2**15, 2**15 - 1))


@settings(max_examples=60, deadline=None)
@given(kernel=uops, insns=st.lists(gemms | alus, min_size=1, max_size=4),
       seed=st.integers(0, 2**16))
def test_random_compute_sequences(random_tensor, reference_gemm, reference_alu, compute_image,
                                   kernel, insns, seed):
    kernel = (kernel * 6)[:6]          # windows reach micro-op 5
    rng = np.random.default_rng(seed)
    inp = random_tensor(rng, (INP_ROWS, CFG.batch, CFG.block_in), np.int8)
    wgt = random_tensor(rng, (WGT_ROWS, CFG.block_out, CFG.block_in), np.int8)
    acc = random_tensor(rng, (ACC_ROWS, CFG.batch, CFG.block_out), np.int32)
    image = compute_image(CFG, 1 << 15, kernel, inp, wgt, acc, (UOPS, INP, WGT, ACC),
                          uop_pop_prev=1)
    image.add(*insns[:-1])
    result, sim = run_alone(image, insns[-1], strict=True)
    assert result.status == "ok", result.detail

    expected = acc
    for insn in insns:
        if insn.opcode == 2:
            expected = reference_gemm(insn, kernel, inp, wgt, expected)
        else:
            expected = reference_alu(insn, kernel, expected).astype(np.int32) \
                .reshape(acc.shape)
    np.testing.assert_array_equal(sim.sram("acc")[:ACC_ROWS], expected)
    np.testing.assert_array_equal(sim.sram("out")[:ACC_ROWS], expected.astype(np.int8))
