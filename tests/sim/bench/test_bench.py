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


def test_per_channel_layer_figures():
    """A layer with per-channel SCL rows (ALU_SCALE: 2) is bit-exact and reads its rows."""
    from avta.isa.enums import AluOp
    from avta.sim.bench.per_channel import scale_config
    layer = {"name": "small", "h": 7, "w": 7, "cin": 32, "cout": 32, "k": 1, "pad": 0,
             "stride": 1}
    cfg = scale_config(load_config("default"))
    assert cfg.alu_scale == 2 and cfg.name == "default-scale24"
    fig = bench_conv2d_layer(cfg, layer, repeats=1, per_channel=True)
    assert fig["exact"]
    rows = {i.alu_opcode for i in fig["program"].insns if i.opcode == 4 and not i.use_imm}
    assert {AluOp.SCL, AluOp.ADD, AluOp.SHR} <= rows


def test_per_channel_resnet18_prints_both_and_the_ratio(capsys, monkeypatch):
    """Two layers of the table (the run itself takes a minute): both cycle counts, the ratio,
    the weighted totals."""
    from avta.runtime import workloads
    from avta.sim.bench.per_channel import per_channel_resnet18
    layers = {k: v for k, v in workloads.resnet18_layers().items() if k in ("C1", "C10")}
    monkeypatch.setattr(workloads, "resnet18_layers", lambda: layers)
    rows, without, with_rows, exact = per_channel_resnet18(load_config("default"))
    out = capsys.readouterr().out
    assert exact and [r[0] for r in rows] == ["C10"]          # C1 (3 channels) is the host's
    assert with_rows > without and "ratio" in out and f"{with_rows:,}" in out


def test_target_is_only_for_benchmarks_that_take_it(capsys):
    assert main(["bench", "tps", "--target", "tsim"]) == 2
    assert "--target is for per-channel-resnet18" in capsys.readouterr().err
