"""Blocked GEMM with a requantization tail, one and two virtual threads (upstream test_gemm)."""

import numpy as np
import pytest

from avta.runtime.ops.conv_plan import PlanError, tiling_for
from avta.runtime.ops.matmul import dense, dense_shape, matmul, matmul_shape
from avta.runtime.ops.reference import matmul_ref
from avta.runtime.ops.requant import Requant

TAILS = {"shr-max-min": Requant(8, (0, 127)), "shr-clp": Requant(7, (-90, 90), use_clp=True),
         "none": Requant()}


@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("threads", [1, 2], ids=["default", "smt"])
def test_gemm_upstream_shape(cfg, int8, device, tail, threads):
    """upstream test_gemm: o = 4 row blocks, n = 1 reduction block, m = 4 output blocks."""
    m, k, n = 4 * cfg.batch, 1 * cfg.block_in, 4 * cfg.block_out
    a, w = int8((m, k)), int8((n, k))
    out = matmul(device(cfg), a, w, requant=TAILS[tail], threads=threads)
    np.testing.assert_array_equal(out, matmul_ref(a, w, requant=TAILS[tail]))


@pytest.mark.parametrize("sizes", [(1, 1, 1), (2, 3, 2), (3, 2, 1)], ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_tiled(cfg, rng, int8, device, sizes, threads):
    """Tiles over rows, columns and K (accumulating over load tasks) with a bias."""
    m, k, n = 5 * cfg.batch, 3 * cfg.block_in, 3 * cfg.block_out
    a, w = int8((m, k)), int8((n, k))
    bias = rng.integers(-5000, 5000, n)
    tw, tco, tci = sizes
    tiling = tiling_for(cfg, matmul_shape(cfg, m, k, n), 1, tw, tco, tci, threads, bias=True)
    assert tiling is not None
    rq = Requant(6, (-128, 127))
    dev = device(cfg, schedule="random", seed=tw)
    out = matmul(dev, a, w, bias, requant=rq, threads=threads, tiling=tiling)
    np.testing.assert_array_equal(out, matmul_ref(a, w, bias, requant=rq))


def test_dense_layer(default_cfg, rng, int8, device):
    """upstream test_benchmark_topi_dense: 16 x 512 by 512 x 1008 on the default config."""
    cfg = default_cfg
    x, w = int8((16, 512)), int8((1008, 512))
    bias = rng.integers(-1 << 14, 1 << 14, 1008)
    rq = Requant(8, (0, 127))
    out = dense(device(cfg, dram_size=4 << 20), x, w, bias, requant=rq)
    np.testing.assert_array_equal(out, matmul_ref(x, w, bias, requant=rq))


# (n, K blocks, extra K, O blocks, extra O)
DENSE = {"batch1": (1, 2, 0, 2, 0), "batch1-ragged": (1, 1, 3, 1, 5), "batch3": (3, 1, 0, 1, 0)}


@pytest.mark.parametrize("sizes", DENSE)
def test_dense_any_batch(cfg, rng, int8, device, sizes):
    """A batch of 1 (and 3) on BATCH 1 and 2, with K and O that are not whole blocks: padded
    with zeros on the host, the padding's results dropped."""
    n, kb, kx, ob, ox = DENSE[sizes]
    k, o = kb * cfg.block_in + kx, ob * cfg.block_out + ox
    x, w = int8((n, k)), int8((o, k))
    bias = rng.integers(-3000, 3000, o)
    rq = Requant(7, (0, 127))
    out = dense(device(cfg), x, w, bias, requant=rq)
    assert out.shape == (n, o)
    np.testing.assert_array_equal(out, matmul_ref(x, w, bias, requant=rq))


@pytest.mark.parametrize("cfg", ["batch2"], indirect=True)
def test_matmul_one_row(cfg, int8, device):
    """M = 1 < BATCH = 2: the row is padded with a zero row on the host."""
    a, w = int8((1, 2 * cfg.block_in)), int8((cfg.block_out, 2 * cfg.block_in))
    rq = Requant(6, (-128, 127))
    np.testing.assert_array_equal(matmul(device(cfg), a, w, requant=rq),
                                  matmul_ref(a, w, requant=rq))


def test_shape_errors_are_clear(default_cfg, device):
    with pytest.raises(ValueError, match="K = 20 is not a multiple of BLOCK_IN = 16"):
        matmul_shape(default_cfg, 4, 20, 16)
    with pytest.raises(ValueError, match="W must be N x K"):
        matmul(device(default_cfg), np.zeros((1, 16), np.int8), np.zeros((16, 32), np.int8))
    with pytest.raises(PlanError, match="cout = 1000 is not a multiple of BLOCK_OUT = 16"):
        dense_shape(default_cfg, 1, 512, 1000)
    with pytest.raises(ValueError, match="x must be N x K"):
        dense(device(default_cfg), np.zeros((1, 16), np.int8), np.zeros((16, 32), np.int8))
