"""``avta bench``: the list, the errors and the fsim conv2d figures."""

import pytest

from avta.cli import main
from avta.isa.config import load_config
from avta.sim.bench.cli import BENCHMARKS
from avta.sim.bench.fsim import bench_conv2d_layer, fsim_conv2d


def test_list(capsys):
    assert main(["bench"]) == 0
    out = capsys.readouterr().out
    for name in BENCHMARKS:
        assert name in out


def test_unknown_benchmark(capsys):
    assert main(["bench", "nope"]) == 2
    captured = capsys.readouterr()
    assert "unknown benchmark 'nope'" in captured.err and captured.out == ""


def test_layer_figures():
    layer = {"name": "small", "h": 7, "w": 7, "cin": 32, "cout": 32, "k": 3, "pad": 1,
             "stride": 1}
    fig = bench_conv2d_layer(load_config("default"), layer, repeats=1)
    assert fig["exact"]
    assert fig["fsim"] > 0 and fig["numpy"] > 0
    assert fig["result"].counters["GEMM_STEPS"] == fig["program"].expected_counters()[
        "GEMM_STEPS"]


def test_fsim_conv2d_prints_ratio_and_counters(capsys):
    assert fsim_conv2d(load_config("default"), layer="C11") == 0
    out = capsys.readouterr().out
    assert "ratio fsim/numpy" in out and "bit-exact: yes" in out
    assert "GEMM_STEPS" in out and "(estimate)" in out


@pytest.mark.slow
@pytest.mark.tsim
def test_profile_overhead_prints_both_runs(capsys):
    from avta.sim.bench.profile import profile_overhead
    figures = profile_overhead(load_config("tiny"), input_size=32, rounds=1)
    out = capsys.readouterr().out
    assert "plain" in out and "recording costs" in out
    assert figures["cycles"] > 0 and len(figures["plain"]) == len(figures["recording"]) == 1
