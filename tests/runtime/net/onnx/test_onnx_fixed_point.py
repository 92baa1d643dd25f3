"""Fixed-point requantization (``import_onnx(fixed_point=True)``, ALU SCL): small models whose
scale ratios are not powers of two, in QDQ and operator form, run on a configuration with
``ALU_SCALE: 1`` and compared with onnxruntime: every value within one step, and equal except
where onnxruntime's float result lies within a hair of a rounding boundary (docs/onnx.md)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from avta.isa.config import load_config  # noqa: E402
from avta.runtime.net.onnx_import import import_onnx  # noqa: E402

SCALE_TINY = load_config("tiny").replace(alu_scale=1)
FORMS = ["QDQ", "QOp"]


def _agree(kit, model, x, sy, config=SCALE_TINY):
    """Import in fixed point, run, compare with onnxruntime; the imported network."""
    imported = import_onnx(model, batch=x.shape[0], fixed_point=True)
    (ours,) = kit.run_device(imported.graph, x, config=config)[0].values()
    (theirs,) = kit.run_ort(model, x)
    steps = np.rint((ours.astype(np.float64) - theirs) / sy)
    assert np.abs(steps).max() <= 1, "a value more than one step from onnxruntime"
    assert (steps == 0).mean() >= 0.99, f"only {(steps == 0).mean():.2%} equal"
    return imported, (steps == 0).mean()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("pad, zx, stride", [(1, -128, 1), (0, 5, 2), (1, 0, 2)])
def test_conv(onnx_kit, form, pad, zx, stride):
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(11)
    m = getattr(onnx_kit, form)((2, 4, 9, 8), SX, zx)
    y = m.conv(m.x, _weights(rng, (8, 4, 3, 3)), SW, rng.integers(-3000, 3000, 8), SY, -3,
               stride=stride, pad=pad)
    imported, _ = _agree(onnx_kit, m.build(y), _input(rng, (2, 4, 9, 8), zx), SY)
    (scale,) = imported.scales
    assert scale.fixed is not None and abs(scale.error) < 32e-6
    assert "ppm" in imported.report() and "1 fixed-point (SCL)" in imported.report()
    assert imported.graph.nodes[0].requant.multiplier == scale.fixed


@pytest.mark.parametrize("form", FORMS)
def test_dense(onnx_kit, form):
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(12)
    m = getattr(onnx_kit, form)((3, 32), SX, 9)
    y = m.gemm(m.x, _weights(rng, (32, 8)), SW, None, SY, 2, matmul=True)
    _agree(onnx_kit, m.build(y), _input(rng, (3, 32), 9), SY)


@pytest.mark.parametrize("form", FORMS)
def test_add_of_two_scales(onnx_kit, form):
    """Inputs at scales 1.37 apart: both multiplied by integers exactly, summed, rounded once."""
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(13)
    m = getattr(onnx_kit, form)((2, 4, 5, 5), SX, -20)
    a = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, 0.05, 3)
    b = m.conv(m.x, _weights(rng, (4, 4, 1, 1)), SW, None, 0.05 * 1.37, -7)
    y = m.add(a, b, SY * 1.9, 11)
    imported, _ = _agree(onnx_kit, m.build(y), _input(rng, (2, 4, 5, 5), -20), SY * 1.9)
    add = imported.graph.nodes[-1]
    assert add.op == "add" and add.attrs["scale_a"] and add.attrs["scale_b"]
    assert all(s.fixed is not None for s in imported.scales)


@pytest.mark.parametrize("form", FORMS)
def test_avg_pools(onnx_kit, form):
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(14)
    for pool in ("avg", "global"):
        m = getattr(onnx_kit, form)((2, 4, 6, 6), SX, -9)
        y = m.avg_pool(m.x, 3, 3, SY, 6) if pool == "avg" else m.global_avg_pool(m.x, SY, 6)
        imported, _ = _agree(onnx_kit, m.build(y), _input(rng, (2, 4, 6, 6), -9), SY)
        assert imported.scales[0].fixed is not None


def test_without_alu_scale_the_fixed_point_layers_run_on_the_host(onnx_kit):
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(15)
    m = onnx_kit.QDQ((3, 32), SX, 9)
    model = m.build(m.gemm(m.x, _weights(rng, (32, 8)), SW, None, SY, 2, matmul=True))
    imported = import_onnx(model, batch=3, fixed_point=True)
    x = _input(rng, (3, 32), 9)
    outputs, run = onnx_kit.run_device(imported.graph, x, config="tiny")
    assert [layer.on for layer in run.layers] == ["host"]
    assert "ALU_SCALE: 1" in run.layers[0].why
    on_device, run = onnx_kit.run_device(imported.graph, x, config=SCALE_TINY)
    assert [layer.on for layer in run.layers] == ["device"]
    (ours,), (theirs,) = outputs.values(), on_device.values()
    assert ours.shape == (3, 8) and np.array_equal(ours, theirs)   # the same arithmetic


def test_fixed_point_and_host_requant_exclude_each_other(onnx_kit):
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    from avta.errors import UserError
    m = onnx_kit.QDQ((3, 32), SX, 9)
    model = m.build(m.gemm(m.x, _weights(np.random.default_rng(0), (32, 8)), SW, None, SY, 2,
                           matmul=True))
    with pytest.raises(UserError, match="not both"):
        import_onnx(model, batch=3, fixed_point=True, host_requant=True)


@pytest.mark.parametrize("form", FORMS)
def test_per_channel_weights(onnx_kit, form):
    """Weight scales one per output channel, 30× apart: a multiplier and a shift per channel,
    as rows of ACC loaded once per layer with the bias."""
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(16)
    ws = SW * np.exp(rng.uniform(-1.7, 1.7, 8))
    m = getattr(onnx_kit, form)((2, 4, 7, 7), SX, -128)
    y = m.conv(m.x, _weights(rng, (8, 4, 3, 3)), ws, rng.integers(-3000, 3000, 8), SY, 4,
               pad=1, stride=2)
    imported, _ = _agree(onnx_kit, m.build(y), _input(rng, (2, 4, 7, 7), -128), SY)
    (scale,) = imported.scales
    assert not scale.uniform and len(scale.fixed) == 8 and abs(scale.error) < 32e-6
    assert imported.graph.nodes[0].requant.per_channel
    assert "×8" in imported.report()


@pytest.mark.tsim
def test_per_channel_conv_add_and_pool_on_tsim(onnx_kit):
    """The Verilated RTL with SCL runs the fixed-point layers as fsim does (run_device checks
    the device's int8 tensors against the numpy reference)."""
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(17)
    model = onnx_kit.conv_add_pool(rng)
    x = _input(rng, (1, 4, 6, 6), -128)
    imported = import_onnx(model, batch=1, fixed_point=True)
    outputs, run = onnx_kit.run_device(imported.graph, x, config=SCALE_TINY, target="tsim")
    assert all(layer.on == "device" for layer in run.layers)
    (ours,), (theirs,) = outputs.values(), onnx_kit.run_ort(model, x)
    assert np.abs(np.rint((ours - theirs) / SY)).max() <= 1


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_depthwise(onnx_kit, form, per_channel):
    """A depthwise convolution (group = channels) in fixed point, per tensor and per channel
    (the importer lowers it as a convolution with the other groups' weights zero)."""
    SX, SW, SY, _input, _weights = onnx_kit.fixed_point
    rng = np.random.default_rng(41)
    ws = SW * np.exp(rng.uniform(-1.5, 1.5, 16)) if per_channel else SW
    m = getattr(onnx_kit, form)((2, 16, 7, 7), SX, -128)
    y = m.conv(m.x, _weights(rng, (16, 1, 3, 3)), ws, rng.integers(-3000, 3000, 16), SY, 4,
               pad=1, group=16)
    _agree(onnx_kit, m.build(y), _input(rng, (2, 16, 7, 7), -128), SY)
