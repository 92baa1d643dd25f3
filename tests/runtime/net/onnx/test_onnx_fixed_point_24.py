"""24-bit fixed point (``import_onnx(fixed_point=24)``, ``ALU_SCALE: 2``): onnxruntime's own
float32 ratios in 24-bit ACC rows for convolutions and dense layers, two 15-bit factors for
pools and adds. On models whose onnxruntime kernels requantize in float32 (QLinearConv, QGemm,
QLinearGlobalAveragePool) every value is equal; elsewhere (a float Add) all but values within
a hair of a rounding boundary (docs/onnx.md)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from avta.errors import UserError  # noqa: E402
from avta.isa.config import load_config  # noqa: E402
from avta.runtime.net.onnx_import import import_onnx  # noqa: E402

from .test_onnx_fixed_point import SW, SX, SY, _input, _weights  # noqa: E402

WIDE_TINY = load_config("tiny").replace(alu_scale=2)


def _steps(kit, model, x, sy, config=WIDE_TINY, target="fsim"):
    """Import with 24-bit multipliers, run, and the steps from onnxruntime's outputs."""
    imported = import_onnx(model, batch=x.shape[0], fixed_point=24)
    outputs, run = kit.run_device(imported.graph, x, config=config, target=target)
    (ours,) = outputs.values()
    (theirs,) = kit.run_ort(model, x)
    assert all(layer.on == "device" for layer in run.layers)
    return imported, np.rint((ours.astype(np.float64) - theirs) / sy)


@pytest.mark.parametrize("form", ["QDQ", "QOp"])
def test_per_tensor_and_per_channel_convs_are_equal(onnx_kit, form):
    rng = np.random.default_rng(31)
    m = getattr(onnx_kit, form)((2, 4, 9, 8), SX, -128)
    a = m.conv(m.x, _weights(rng, (8, 4, 3, 3)), SW, rng.integers(-3000, 3000, 8), 0.05, -3,
               pad=1)
    y = m.conv(a, _weights(rng, (8, 8, 3, 3)), SW * np.exp(rng.uniform(-1.7, 1.7, 8)), None,
               SY, 4, stride=2)
    imported, steps = _steps(onnx_kit, m.build(y), _input(rng, (2, 4, 9, 8), -128), SY)
    assert np.all(steps == 0)
    for node in imported.graph.nodes:
        assert node.requant.per_channel and node.requant.multiplier_bits == 24
    assert all(abs(s.error) < 1e-6 for s in imported.scales)


@pytest.mark.parametrize("form", ["QDQ", "QOp"])
def test_dense_and_pools_are_equal(onnx_kit, form):
    rng = np.random.default_rng(32)
    m = getattr(onnx_kit, form)((2, 4, 6, 6), SX, -9)
    g = m.global_avg_pool(m.avg_pool(m.x, 3, 3, SY, 6), SY * 0.7, -2)
    imported, steps = _steps(onnx_kit, m.build(g), _input(rng, (2, 4, 6, 6), -9), SY * 0.7)
    assert np.all(steps == 0)
    pools = [n.requant for n in imported.graph.nodes]
    assert all(q.multiplier2 is not None and q.pre_offset for q in pools)
    m = getattr(onnx_kit, form)((3, 32), SX, 9)
    y = m.gemm(m.x, _weights(rng, (32, 8)), SW, None, SY, 2, matmul=True)
    _, steps = _steps(onnx_kit, m.build(y), _input(rng, (3, 32), 9), SY)
    assert np.all(steps == 0)


def test_add_by_two_factors(onnx_kit):
    rng = np.random.default_rng(33)
    m = onnx_kit.QDQ((2, 4, 5, 5), SX, -20)
    a = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, 0.05, 3)
    b = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, 0.05 * 1.37, -7)
    imported, steps = _steps(onnx_kit, m.build(m.add(a, b, SY * 1.9, 11)),
                             _input(rng, (2, 4, 5, 5), -20), SY * 1.9)
    assert np.abs(steps).max() <= 1 and (steps == 0).mean() >= 0.999
    add = imported.graph.nodes[-1]
    assert all(add.attrs[k] for k in ("scale_a", "scale_a2", "scale_b", "scale_b2"))


def test_24_bit_layers_need_alu_scale_2(onnx_kit):
    """On ALU_SCALE: 1 the convolution runs on the host, bit for bit as on the device."""
    rng = np.random.default_rng(34)
    m = onnx_kit.QDQ((2, 4, 5, 5), SX, -128)
    model = m.build(m.conv(m.x, _weights(rng, (8, 4, 3, 3)), SW, None, SY, 4, pad=1))
    imported = import_onnx(model, batch=2, fixed_point=24)
    x = _input(rng, (2, 4, 5, 5), -128)
    on_host, run = onnx_kit.run_device(imported.graph, x, config=WIDE_TINY.replace(alu_scale=1))
    assert [layer.on for layer in run.layers] == ["host"] and "ALU_SCALE: 2" in run.layers[0].why
    on_device, _ = onnx_kit.run_device(imported.graph, x, config=WIDE_TINY)
    assert np.array_equal(*(next(iter(o.values())) for o in (on_host, on_device)))
    with pytest.raises(UserError, match="16 or 24"):
        import_onnx(model, batch=2, fixed_point=20)


@pytest.mark.tsim
def test_24_bit_conv_pool_and_add_on_tsim(onnx_kit):
    """The Verilated RTL with a 24-bit SCL runs the layers as fsim does."""
    rng = np.random.default_rng(35)
    m = onnx_kit.QDQ((1, 4, 6, 6), SX, -128)
    a = m.conv(m.x, _weights(rng, (4, 4, 3, 3)), SW * np.exp(rng.uniform(-1, 1, 4)), None,
               0.05, 3, pad=1)
    b = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, 0.05 * 1.37, -7)
    y = m.global_avg_pool(m.add(a, b, SY * 1.9, 11), SY, 2)
    _, steps = _steps(onnx_kit, m.build(y), _input(rng, (1, 4, 6, 6), -128), SY, target="tsim")
    assert np.abs(steps).max() <= 1


def test_a_15_bit_import_runs_alike_on_alu_scale_2(onnx_kit):
    """Q15 immediates mean the same at either width and Q15 rows are packed shifted left by 8:
    a network imported for ALU_SCALE: 1 gives the same outputs on ALU_SCALE: 2."""
    rng = np.random.default_rng(36)
    m = onnx_kit.QDQ((1, 4, 6, 6), SX, -128)
    a = m.conv(m.x, _weights(rng, (4, 4, 3, 3)), SW * np.exp(rng.uniform(-1, 1, 4)), None,
               0.05, 3, pad=1)
    b = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, 0.05 * 1.37, -7)
    y = m.global_avg_pool(m.add(a, b, SY * 1.9, 11), SY, 2)
    imported = import_onnx(m.build(y), batch=1, fixed_point=True)
    x = _input(rng, (1, 4, 6, 6), -128)
    runs = [onnx_kit.run_device(imported.graph, x, config=WIDE_TINY.replace(alu_scale=s))
            for s in (1, 2)]
    assert all(layer.on == "device" for _, run in runs for layer in run.layers)
    (first,), (second,) = (outputs.values() for outputs, _ in runs)
    assert np.array_equal(first, second)


def test_layer_by_layer_comparison_with_onnxruntime(onnx_kit, tmp_path):
    """The bench's per-layer comparison finds every layer in onnxruntime's optimized graph
    (fused or not) and, with 24-bit multipliers, no value that differs; with the nearest
    powers of two the first layer differs."""
    from avta.sim.bench.onnx_layers import compare_layers
    rng = np.random.default_rng(37)
    m = onnx_kit.QDQ((2, 4, 6, 6), SX, -128)
    a = m.conv(m.x, _weights(rng, (8, 4, 3, 3)), SW * np.exp(rng.uniform(-1, 1, 8)), None,
               0.05, -128, pad=1)
    y = m.global_avg_pool(a, SY, 2)
    path = tmp_path / "model.onnx"
    onnx.save(m.build(y), str(path))
    x = _input(rng, (2, 4, 6, 6), -128)
    rows = compare_layers(path, x, import_onnx(path, batch=2, fixed_point=24))
    assert [row.op for row in rows] == ["conv2d", "global_avg_pool"]
    assert all(row.chained == 0 and row.isolated == 0 for row in rows)
    rows = compare_layers(path, x, import_onnx(path, batch=2))
    assert rows[0].chained > 0 and rows[0].isolated == rows[0].chained


@pytest.mark.parametrize("args, bits", [(["--fixed-point"], None), (["--fixed-point", "16"], None),
                                        (["--fixed-point", "24"], 24)])
def test_the_command_takes_the_width(onnx_kit, tmp_path, capsys, args, bits):
    from avta.cli import main
    rng = np.random.default_rng(38)
    m = onnx_kit.QDQ((1, 4, 5, 5), SX, -128)
    path = tmp_path / "m.onnx"
    onnx.save(m.build(m.conv(m.x, _weights(rng, (8, 4, 3, 3)), SW, None, SY, 4, pad=1)), path)
    assert main(["import", str(path), *args, "-o", str(tmp_path / "n.yaml")]) == 0
    text = (tmp_path / "n.yaml").read_text()
    assert ("multiplier_bits: 24" in text) == (bits == 24) and "multiplier" in text
    with pytest.raises(SystemExit) as stop:
        main(["import", str(path), "--fixed-point", "20", "-o", str(tmp_path / "m.yaml")])
    assert stop.value.code == 2 and "invalid choice: 20" in capsys.readouterr().err
