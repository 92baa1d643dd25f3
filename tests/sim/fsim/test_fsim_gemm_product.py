"""GEMM kernels of the convolution form (every pair of R src rows and D dst rows, weights fixed
over the loops), which fsim runs as one matrix product (sim/fsim/gemm.py), against the naive
per-step reference: overlapping destinations, wrapping indices and sums, a dot product long
enough for float64, kernels with some pairs missing (zero weights stand in for them), and
kernels not of the form (the per-step path)."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.insn import Uop
from avta.sim.fsim import gemm as fsim_gemm
from avta.sim.image import gemm, run_alone

UOPS, INP, WGT, ACC = 0x800, 0x1000, 0x10000, 0x30000


def _kernel(srcs, dsts, first_wgt=0):
    return [Uop(d, s, first_wgt + i * len(dsts) + j)
            for i, s in enumerate(srcs) for j, d in enumerate(dsts)]


def _whole(rows, depth):
    """``rows`` at the start of a zeroed scratchpad of ``depth`` rows."""
    whole = np.zeros((depth,) + rows.shape[1:], rows.dtype)
    whole[:rows.shape[0]] = rows
    return whole


def _reference(insn, uops, inp, wgt, acc):
    """docs/isa.md §3.3 step by step, indices modulo the scratchpads' depths, wrapping sums."""
    acc = acc.astype(np.int64)
    for i_o in range(insn.iter_out):
        for i_i in range(insn.iter_in):
            for u in uops[insn.uop_bgn:insn.uop_end]:
                a = (u.dst_idx + i_o * insn.dst_factor_out + i_i * insn.dst_factor_in) % len(acc)
                i = (u.src_idx + i_o * insn.src_factor_out + i_i * insn.src_factor_in) % len(inp)
                w = (u.wgt_idx + i_o * insn.wgt_factor_out + i_i * insn.wgt_factor_in) % len(wgt)
                total = acc[a] + inp[i].astype(np.int64) @ wgt[w].astype(np.int64).T
                acc[a] = (total + 2**31) % 2**32 - 2**31
    return acc.astype(np.int32)


# (id, kernel, (iter_out, iter_in), dst factors, src factors, wgt factors, init)
CASES = [
    ("3 src x 2 dst", _kernel((0, 3, 5), (0, 7)), (3, 4), (12, 3), (16, 4), (0, 0), "random"),
    ("dst rows overlap across the loops", _kernel((0, 1), (0, 1, 2)), (4, 5), (1, 1), (2, 1),
     (0, 0), "random"),
    ("output blocks one after another (rows ascend D-major)", _kernel((0, 3), (0, 20)),
     (3, 4), (4, 1), (8, 2), (0, 0), "random"),
    ("every position into one row", _kernel((2, 4), (5,)), (6, 5), (0, 0), (3, 1), (0, 0),
     "random"),
    ("indices wrap past the scratchpads", _kernel((30, 60), (40, 63)), (3, 3), "half",
     "half", (0, 0), "random"),
    ("sums wrap past int32", _kernel((0, 1), (0,)), (4, 4), (0, 0), (1, 1), (0, 0), "max"),
    ("a dot product past float32", _kernel(tuple(range(140)), (0,)), (2, 2), (2, 1), (1, 1),
     (0, 0), "extreme"),
    ("weights move with the loops", _kernel((0, 3), (0, 7)), (2, 3), (12, 3), (6, 2), (1, 0),
     "random"),
    ("a pair missing", _kernel((0, 3), (0, 7))[:-1], (2, 3), (12, 3), (6, 2), (0, 0),
     "random"),
    ("9 of 12 pairs, as a 3x3 convolution's tile edge", _kernel((0, 1, 2), (0, 1, 2, 3))[:9],
     (3, 4), (12, 3), (16, 4), (0, 0), "random"),
    ("a diagonal, too sparse", [Uop(d, s, i) for i, (s, d) in enumerate(((0, 0), (3, 1), (5, 2),
                                                                         (7, 3)))],
     (2, 3), (12, 3), (6, 2), (0, 0), "random"),
    ("a pair twice", _kernel((0, 3), (0, 7)) + [Uop(7, 3, 4)], (2, 3), (12, 3), (6, 2), (0, 0),
     "random"),
]
#: The cases fsim runs step by step: the others have the product form.
STEPWISE = ("weights move with the loops", "a diagonal, too sparse", "a pair twice")


@pytest.mark.parametrize("config", ["default", "tiny", "batch2", "rect"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_product_form_matches_the_steps(random_tensor, compute_image, config, case, monkeypatch):
    name, kernel, iters, dst, src, wgt_f, init = case
    cfg = load_config(config)
    rng = np.random.default_rng(len(name))
    # "half": the outer loop steps half a scratchpad, so indices pass its end and wrap.
    dst = (cfg.acc_depth // 2 + 1, 1) if dst == "half" else dst
    src = (cfg.inp_depth // 2 + 3, 2) if src == "half" else src
    inp_rows, acc_rows = min(160, cfg.inp_depth), min(64, cfg.acc_depth)
    wgt_rows = 1 + max(u.wgt_idx for u in kernel)
    shapes = ((inp_rows, cfg.batch, cfg.block_in), (wgt_rows, cfg.block_out, cfg.block_in),
              (acc_rows, cfg.batch, cfg.block_out))
    if init == "max":
        inp, wgt = (np.full(s, 127, np.int8) for s in shapes[:2])
        acc = np.full(shapes[2], 2**31 - 1000, dtype=np.int32)
    elif init == "extreme":     # 140·BLOCK_IN products of 127·127: past 2^25, float32 rounds
        inp, wgt = (np.full(s, 127, np.int8) for s in shapes[:2])
        acc = np.zeros(shapes[2], np.int32)
    else:
        inp = random_tensor(rng, shapes[0], np.int8)
        wgt = random_tensor(rng, shapes[1], np.int8)
        acc = random_tensor(rng, shapes[2], np.int32)
    used = []
    product = fsim_gemm._as_matrix_product
    monkeypatch.setattr(fsim_gemm, "_as_matrix_product",
                        lambda *a: used.append(product(*a)) or used[-1])
    image = compute_image(cfg, 1 << 19, kernel, inp, wgt, acc, (UOPS, INP, WGT, ACC))
    insn = gemm(uops=(0, len(kernel)), iters=iters, dst=dst, src=src, wgt=wgt_f, pop_prev=1)
    result, sim = run_alone(image, insn)
    assert result.status == "ok", result.detail
    depths = [sim.sram(name).shape[0] for name in ("inp", "wgt", "acc")]
    expected = _reference(insn, kernel, *(_whole(a, d) for a, d in zip((inp, wgt, acc), depths)))
    np.testing.assert_array_equal(sim.sram("acc"), expected)
    np.testing.assert_array_equal(sim.sram("out"), expected.astype(np.int8))
    in_form = name not in STEPWISE
    assert used == [in_form]
    if init == "max":
        assert (expected < 0).any()
