"""``avta bench tps`` (the paper's Figure 10) and ``avta bench tsim-resnet18``'s table."""

import numpy as np
import pytest

from avta.cli import main
from avta.isa.config import load_config
from avta.runtime.ops.conv2d import conv2d
from avta.runtime.ops.conv_plan import Conv2dShape, fallback_tiling
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.workloads import resnet18_layers
from avta.sim.bench.resnet18_cycles import resnet18_cycles
from avta.sim.bench.tps import layer_traffic
from avta.sim.fsim.backend import fsim_device


def test_fallback_schedule_runs_and_moves_the_expected_bytes():
    """TVM's fallback on fsim: bit-exact, and per 1x1-pixel task one clipped 3x3 input window
    of one block and one kernel block of weights."""
    cfg = load_config("default")
    rng = np.random.default_rng(7)
    n, cib, cob, h, w = 1, 2, 3, 5, 4
    x = rng.integers(-128, 128, (n, cib * cfg.block_in, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (cob * cfg.block_out, cib * cfg.block_in, 3, 3), dtype=np.int8)
    bias = rng.integers(-1000, 1000, wt.shape[0])
    shape = Conv2dShape(n, x.shape[1], h, w, wt.shape[0], 3, 3, 1, 1)
    tiling = fallback_tiling(cfg, shape, bias=True)
    assert (tiling.th, tiling.tw, tiling.tco, tiling.tci) == (1, 1, 1, 1)
    dev = fsim_device(cfg)
    rq = Requant(8, (0, 127))
    out = conv2d(dev, x, wt, bias, pad=1, requant=rq, tiling=tiling)
    np.testing.assert_array_equal(out, conv2d_ref(x, wt, bias, pad=1, requant=rq))
    window = sum((min(oh + 1, h - 1) - max(oh - 1, 0) + 1) * (min(ow + 1, w - 1) - max(ow - 1, 0)
                                                            + 1)
                 for oh in range(h) for ow in range(w))      # input pixels of every 3x3 window
    counters = dev.last_result.counters
    assert counters["INP_LD"] == window * cib * cob * cfg.inp_elem_bytes
    assert counters["WGT_LD"] == h * w * cib * cob * 9 * cfg.wgt_elem_bytes
    assert counters["OUT_ST"] == h * w * cob * cfg.out_elem_bytes


def test_c10_on_wide():
    """ResNet-18 C10 (14x14x256 → 7x7x512, 1x1 stride 2) on 1x32x32: the fallback reads one
    input block and one weight block per pixel, block pair; the search reads the weights once."""
    cfg = load_config("wide")
    fig = layer_traffic(cfg, resnet18_layers()["C10"])
    fallback, searched = fig["bytes"]["fallback"], fig["bytes"]["searched"]
    tasks = 7 * 7 * (512 // 32) * (256 // 32)
    assert fallback["INP_LD"] == tasks * 32
    assert fallback["WGT_LD"] == tasks * 32 * 32
    assert fallback["OUT_ST"] == searched["OUT_ST"] == 7 * 7 * 512
    # The bias (512 int32), loaded once: the accumulators start at it, so the second ACC bank's
    # copy is an ALU MOV of the first's, not a second LOAD (conv_emit._load_resident_rows).
    assert fallback["ACC_LD"] == searched["ACC_LD"] == 512 * 4
    assert searched["WGT_LD"] == 512 * 256
    # A strided 1x1 layer loads only the pixels it reads (conv_plan.Conv2dShape.subsampled):
    # once if they stay resident, else once per output-block tile.
    t = fig["tilings"]["searched"]
    loads = 1 if t.inp_resident else -(-16 // t.tco)
    assert searched["INP_LD"] == loads * 7 * 7 * 256
    assert fig["ratio"] == pytest.approx(fig["total"]["fallback"] / fig["total"]["searched"])
    assert 20 < fig["ratio"] < 40


@pytest.mark.slow
def test_tps_command(capsys):
    assert main(["bench", "tps"]) == 0
    out = capsys.readouterr().out
    assert "'wide'" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("C")]
    assert [r[0] for r in rows] == [f"C{i}" for i in range(2, 12)]
    ratios = [float(r[-1].rstrip("x")) for r in rows]
    assert all(20 <= r <= 400 for r in ratios), ratios     # the paper's range


def test_resnet18_cycles_table(capsys):
    """On fsim (the bench runs tsim): totals weighted by uses, the workload's MAC bound."""
    cfg = load_config("default")
    rows, total, ideal, exact = resnet18_cycles(cfg, lambda: fsim_device(cfg,
                                                                          dram_size=16 << 20))
    assert exact
    assert [r[0] for r in rows] == [f"C{i}" for i in range(2, 12)]
    assert ideal == 6_623_232                   # runtime/workloads/resnet18.yaml's figure
    assert total == sum(uses * cycles for _, uses, cycles, *_ in rows)
    assert all(bound < cycles for _, _, cycles, bound, *_ in rows)
    assert f"{total:,} cycles" in capsys.readouterr().out
