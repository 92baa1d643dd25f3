"""GEMM (docs/isa.md §3.3) against a naive per-step reference, on a square, a rectangular and a
batch-2 configuration: reset, loop factors, repeated destinations, wrapping, degenerate loops."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import MemType
from avta.isa.insn import Uop
from avta.sim.image import Image, gemm, load, run_alone

INP_ROWS, WGT_ROWS, ACC_ROWS = 64, 32, 64
UOPS, INP, WGT, ACC = 0x800, 0x1000, 0x8000, 0x20000


KERNEL = [Uop(0, 0, 0), Uop(1, 1, 1), Uop(2, 0, 2), Uop(0, 3, 3)]   # dst 0 repeats
# (id, kernel micro-ops [bgn, end), (iter_out, iter_in), dst, src, wgt factors, reset, init)
CASES = [
    ("one step", (0, 1), (1, 1), (0, 0), (0, 0), (0, 0), 0, "random"),
    ("kernel with a repeated dst", (0, 4), (1, 1), (0, 0), (0, 0), (0, 0), 0, "random"),
    ("outer and inner factors", (0, 4), (3, 4), (12, 3), (16, 4), (1, 2), 0, "random"),
    ("loop-carried sum into one row", (0, 1), (5, 6), (0, 0), (6, 1), (3, 1), 0, "random"),
    ("uop window in the middle", (1, 3), (2, 2), (4, 8), (2, 5), (4, 0), 0, "random"),
    ("reset", (0, 4), (2, 3), (10, 3), (0, 0), (0, 0), 1, "random"),
    ("reset, repeated rows", (0, 2), (4, 4), (1, 0), (0, 0), (0, 0), 1, "random"),
    ("wraps past int32", (0, 1), (4, 4), (0, 0), (1, 1), (1, 1), 0, "max"),
    ("iter_out 0", (0, 4), (0, 4), (1, 1), (1, 1), (1, 1), 0, "random"),
    ("iter_in 0", (0, 4), (4, 0), (1, 1), (1, 1), (1, 1), 0, "random"),
    ("uop_end == uop_bgn", (2, 2), (4, 4), (1, 1), (1, 1), (1, 1), 0, "random"),
    ("uop_end < uop_bgn", (3, 1), (4, 4), (1, 1), (1, 1), (1, 1), 1, "random"),
]


@pytest.mark.parametrize("config", ["tiny", "rect", "batch2"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gemm(random_tensor, sram_rows, reference_gemm, compute_image, config, case):
    name, (bgn, end), iters, dst, src, wgt_f, reset, init = case
    cfg = load_config(config)
    rng = np.random.default_rng(len(name))
    if init == "max":
        inp = np.full((INP_ROWS, cfg.batch, cfg.block_in), 127, dtype=np.int8)
        wgt = np.full((WGT_ROWS, cfg.block_out, cfg.block_in), 127, dtype=np.int8)
        acc = np.full((ACC_ROWS, cfg.batch, cfg.block_out), 2**31 - 1000, dtype=np.int32)
    else:
        inp = random_tensor(rng, (INP_ROWS, cfg.batch, cfg.block_in), np.int8)
        wgt = random_tensor(rng, (WGT_ROWS, cfg.block_out, cfg.block_in), np.int8)
        acc = random_tensor(rng, (ACC_ROWS, cfg.batch, cfg.block_out), np.int32)
    image = compute_image(cfg, 1 << 18, KERNEL, inp, wgt, acc, (UOPS, INP, WGT, ACC))
    insn = gemm(uops=(bgn, end), iters=iters, dst=dst, src=src, wgt=wgt_f, reset=reset,
                pop_prev=1)
    result, sim = run_alone(image, insn)
    assert result.status == "ok", result.detail

    expected = reference_gemm(insn, KERNEL, inp, wgt, acc)
    np.testing.assert_array_equal(sim.sram("acc")[:ACC_ROWS], expected)
    np.testing.assert_array_equal(sim.sram("out")[:ACC_ROWS], expected.astype(np.int8))
    assert not sram_rows(sim, "acc")[ACC_ROWS:].any()
    assert result.counters["GEMM_STEPS"] == iters[0] * iters[1] * max(0, end - bgn)
    if init == "max":
        assert (expected < 0).any()   # the case really wraps


def test_gemm_default_config_matches_matmul(default_cfg, random_tensor):
    """A 16x16 block product with a real reduction loop: C = A·Bᵀ over 4 blocks of K."""
    cfg = default_cfg
    rng = np.random.default_rng(3)
    m_blocks, k_blocks, n_blocks = 5, 4, 3
    a = random_tensor(rng, (m_blocks * k_blocks, 1, cfg.block_in), np.int8)   # [m][k] rows
    b = random_tensor(rng, (n_blocks * k_blocks, cfg.block_out, cfg.block_in), np.int8)
    # One micro-op per (n, k); the outer loop walks m.
    kernel = [Uop(n, k, n * k_blocks + k) for n in range(n_blocks) for k in range(k_blocks)]
    image = Image(cfg, size=1 << 18)
    image.put_uops(UOPS, kernel)
    image.put(INP, a)
    image.put(WGT, b)
    image.add(load(MemType.INP, dram=INP // cfg.inp_elem_bytes, x=a.shape[0]),
              load(MemType.WGT, dram=WGT // cfg.wgt_elem_bytes, x=b.shape[0], push_next=1),
              load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=len(kernel)),
              gemm(uops=(0, len(kernel)), iters=(m_blocks, 1), dst=(n_blocks, 0),
                   reset=1),
              gemm(uops=(0, len(kernel)), iters=(m_blocks, 1), dst=(n_blocks, 0),
                   src=(k_blocks, 0), pop_prev=1))
    result, sim = run_alone(image, gemm(uops=(0, 0)))
    assert result.status == "ok", result.detail
    a_mat = a.reshape(m_blocks, k_blocks * cfg.block_in).astype(np.int64)
    b_mat = b.reshape(n_blocks, k_blocks, cfg.block_out, cfg.block_in) \
        .transpose(0, 2, 1, 3).reshape(n_blocks * cfg.block_out, -1).astype(np.int64)
    expected = (a_mat @ b_mat.T).reshape(m_blocks * n_blocks, 1, cfg.block_out)
    np.testing.assert_array_equal(sim.sram("acc")[:m_blocks * n_blocks], expected)
    assert result.counters["GEMM_STEPS"] == 2 * m_blocks * len(kernel)
