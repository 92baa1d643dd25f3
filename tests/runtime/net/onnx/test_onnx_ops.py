"""Each operator the importer maps, as a small random model in QDQ and operator form, run on
fsim and compared with onnxruntime: equal wherever the scale ratios are powers of two, except
at rounding ties (the device rounds a half up, onnxruntime to even: docs/onnx.md)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from avta.errors import UserError  # noqa: E402
from avta.runtime.net.onnx_import import OnnxImportError, import_onnx  # noqa: E402

SX, SW, SY = 2.0 ** -4, 2.0 ** -6, 2.0 ** -3        # M = SX·SW/SY = 2^-7


def _input(rng, shape, zero, scale=SX, dtype=np.int8):
    """A float input that quantizes exactly: (q − zero)·scale for random int8/uint8 q."""
    info = np.iinfo(dtype)
    q = rng.integers(info.min, info.max + 1, shape)
    return ((q - zero) * scale).astype(np.float32)


def _weights(rng, shape, dtype=np.int8):
    return rng.integers(-128, 128, shape).astype(dtype)


def _check(kit, model, x, scale, **kwargs):
    graph = import_onnx(model, batch=x.shape[0], **kwargs).graph
    (ours,) = kit.run_device(graph, x)[0].values()
    (ort_out,) = kit.run_ort(model, x)
    kit.assert_matches_ort(graph, x, ours, ort_out, scale)
    return graph, ours, ort_out


FORMS = ["QDQ", "QOp"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("pad, zx, stride, relu", [
    (1, -128, 1, True),         # the padding holds -128 (LOAD PadValue.MIN)
    (0, 5, 2, False),           # a zero point folded into the bias
    (1, 0, 1, False),           # symmetric activations pad with 0
])
def test_conv(onnx_kit, form, pad, zx, stride, relu):
    rng = np.random.default_rng(1)
    m = getattr(onnx_kit, form)((2, 5, 7, 6), SX, zx)
    act = "relu" if relu and form == "QDQ" else None
    y = m.conv(m.x, _weights(rng, (6, 5, 3, 3)), SW, rng.integers(-3000, 3000, 6), SY, -3,
               stride=stride, pad=pad, act=act)
    graph, ours, _ = _check(onnx_kit, m.build(y), _input(rng, (2, 5, 7, 6), zx), SY)
    assert graph.nodes[0].op == "conv2d"
    assert graph.nodes[0].attrs.get("pad_value", 0) == (-128 if pad and zx else 0)
    if act:
        assert ours.min() >= 0


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("group", [2, 4])
def test_grouped_and_depthwise_conv(onnx_kit, form, group):
    """Two groups: a full convolution whose weights are zero outside each output's group.
    Four (one channel each, group = channels): the depthwise node, its weights ``[C, 1, K, K]``
    and the zero-point terms in its bias."""
    rng = np.random.default_rng(2)
    m = getattr(onnx_kit, form)((1, 4, 6, 6), SX, -128)
    y = m.conv(m.x, _weights(rng, (4, 4 // group, 3, 3)), SW, rng.integers(-500, 500, 4), SY,
               7, pad=1, group=group)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (1, 4, 6, 6), -128), SY)
    (node,) = graph.nodes
    if group == 4:
        assert node.op == "depthwise" and node.weights.shape == (4, 1, 3, 3)
        assert node.bias is not None and node.attrs["pad_value"] == -128
        return
    assert node.op == "conv2d" and node.weights.shape == (4, 4, 3, 3)
    # zero outside each output channel's group
    per = 4 // group
    for o in range(4):
        outside = np.ones(4, bool)
        outside[(o // per) * (4 // group):(o // per + 1) * (4 // group)] = False
        assert not node.weights[o, outside].any()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kernel", [(3, 3), (3, 1)], ids=["multiplier-2", "rectangular"])
def test_depthwise_like_convs_the_node_does_not_take(onnx_kit, form, kernel):
    """group = channels with two outputs a channel (a channel multiplier), or a rectangular
    kernel: not the depthwise node's ``[C, 1, K, K]``, so a full convolution with zeros, as
    exact."""
    rng = np.random.default_rng(6)
    outputs = 8 if kernel == (3, 3) else 4
    m = getattr(onnx_kit, form)((1, 4, 6, 6), SX, -128)
    y = m.conv(m.x, _weights(rng, (outputs, 1) + kernel), SW, rng.integers(-500, 500, outputs),
               SY, 7, pad=1, group=4)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (1, 4, 6, 6), -128), SY)
    (node,) = graph.nodes
    assert node.op == "conv2d" and node.weights.shape == (outputs, 4) + kernel


@pytest.mark.parametrize("form, matmul", [("QDQ", False), ("QDQ", True), ("QOp", True)])
def test_gemm_and_matmul(onnx_kit, form, matmul):
    rng = np.random.default_rng(3)
    m = getattr(onnx_kit, form)((3, 24), SX, 9)
    bias = None if matmul else rng.integers(-4000, 4000, 10)
    y = m.gemm(m.x, _weights(rng, (24, 10)), SW, bias, SY, 2, matmul=matmul)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (3, 24), 9), SY)
    assert [n.op for n in graph.nodes] == ["dense"]
    assert graph.host_outputs[graph.outputs[0]].shape == (3, 10)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("sb, shift_a", [(SX, 0), (SX / 2, 1)])
def test_add(onnx_kit, form, sb, shift_a):
    """Two tensors of one scale, or of scales 2× apart (the larger-scale one shifted left).
    They come from 1×1 convolutions that permute the channels with weights ±2^k, which round
    nothing, so the only ties are the add's."""
    rng = np.random.default_rng(4)
    m = getattr(onnx_kit, form)((2, 4, 5, 5), SX, -20)

    def permute(scale):
        w = np.zeros((4, 4, 1, 1), np.int8)
        w[np.arange(4), rng.permutation(4), 0, 0] = rng.choice([-1, 1], 4) * round(scale / SX * 64)
        return w
    a = m.conv(m.x, permute(SX), SW, None, SX, 3)
    b = m.conv(m.x, permute(sb), SW, None, sb, -7)
    y = m.add(a, b, SY, 11)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (2, 4, 5, 5), -20), SY)
    add = graph.nodes[-1]
    assert add.op == "add" and add.attrs.get("shift_a", 0) == shift_a


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("k, stride, pad", [(2, 2, 0), (3, 2, 1)])
def test_max_pool(onnx_kit, form, k, stride, pad):
    rng = np.random.default_rng(5)
    m = getattr(onnx_kit, form)((1, 3, 8, 8), SX, 4)
    y = m.max_pool(m.x, k, stride, pad)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (1, 3, 8, 8), 4), SX)
    assert [n.op for n in graph.nodes] == ["max_pool"]


@pytest.mark.parametrize("form", FORMS)
def test_avg_pools(onnx_kit, form):
    """AveragePool 2×2 and GlobalAveragePool over 4×4: windows of 4 and 16 values, so the
    divisions are shifts."""
    rng = np.random.default_rng(6)
    for pool in ("avg", "global"):
        m = getattr(onnx_kit, form)((2, 3, 8, 8) if pool == "avg" else (2, 3, 4, 4), SX, -9)
        y = m.avg_pool(m.x, 2, 2, SX, 6) if pool == "avg" else m.global_avg_pool(m.x, SX, 6)
        x = _input(rng, m.input_shape, -9)
        graph, _, _ = _check(onnx_kit, m.build(y), x, SX)
        assert [n.op for n in graph.nodes] == ["avg_pool" if pool == "avg" else
                                               "global_avg_pool"]


@pytest.mark.parametrize("form", FORMS)
def test_flatten_into_gemm(onnx_kit, form):
    rng = np.random.default_rng(7)
    m = getattr(onnx_kit, form)((2, 2, 4, 4), SX, -128)
    c = m.conv(m.x, _weights(rng, (4, 2, 3, 3)), SW, None, SY, -128, pad=1)
    y = m.gemm(m.flatten(c), _weights(rng, (64, 5)), SW, None, SY, 0, matmul=True)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (2, 2, 4, 4), -128), SY)
    assert [n.op for n in graph.nodes] == ["conv2d", "dense"]


def test_uint8_activations(onnx_kit):
    """uint8 tensors are held as int8 − 128 with their zero points moved."""
    rng = np.random.default_rng(8)
    m = onnx_kit.QOp((1, 4, 5, 5), SX, 0, dtype=np.uint8)
    y = m.conv(m.x, _weights(rng, (4, 4, 3, 3)), SW, None, SY, 128, pad=1)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (1, 4, 5, 5), 0, dtype=np.uint8),
                         SY)
    assert graph.host_inputs["x"].zero_point == -128


def test_inexact_scale_is_reported_and_host_requant_matches(onnx_kit):
    rng = np.random.default_rng(9)
    sy = SY * 1.3                                    # M = 2^-7 / 1.3: not a power of two
    m = onnx_kit.QDQ((1, 8), SX, 0)
    model = m.build(m.gemm(m.x, _weights(rng, (8, 4)), SW, None, sy, 0, matmul=True))
    x = _input(rng, (64, 8), 0)
    imported = import_onnx(model, batch=64)
    (scale,) = imported.scales
    assert scale.shift == 7 and scale.error == pytest.approx(0.3) and not scale.on_host
    assert "+30.00%" in imported.report()
    # the output's values are 1.3 times the model's, and its dequantization says so: away from
    # the clip, the real numbers are onnxruntime's to within a step
    (ours,) = onnx_kit.run_device(imported.graph, x)[0].values()
    (ort_out,) = onnx_kit.run_ort(model, x)
    inside = np.abs(ort_out) < 90 * sy
    assert inside.mean() > 0.3
    assert np.abs(ours - ort_out)[inside].max() <= sy
    host = import_onnx(model, batch=64, host_requant=True)
    assert host.scales[0].on_host
    (ours,) = onnx_kit.run_device(host.graph, x)[0].values()
    (ort_out,) = onnx_kit.run_ort(model, x)
    assert np.array_equal(ours, ort_out)                 # onnxruntime's own arithmetic


def test_unsupported_ops_are_listed_by_name_and_type(onnx_kit):
    m = onnx_kit.QDQ((1, 8), SX, 0)
    y = m.gemm(m.x, np.ones((8, 4), np.int8), SW, None, SY, 0, matmul=True)
    soft = m.node("Softmax", [y[0]], "soft")
    model = m.model(m.node("Sigmoid", [soft], "sig"))
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    text = str(info.value)
    names = [name for name, _, _ in info.value.unsupported]
    assert [op for _, op, _ in info.value.unsupported] == ["Softmax", "Sigmoid"]
    assert all(f"{name} (" in text for name in names) and "--outputs" in text
    # the part before them imports
    assert import_onnx(model, outputs=[y[0]]).graph.nodes[0].op == "dense"


@pytest.mark.parametrize("form", FORMS)
def test_the_host_pads_a_first_convolution_with_the_zero_point(onnx_kit, form):
    """The model's input has zero point 7: the host quantizes and pads it with 7 (the real 0),
    and the convolution runs unpadded."""
    rng = np.random.default_rng(11)
    m = getattr(onnx_kit, form)((2, 3, 5, 6), SX, 7)
    y = m.conv(m.x, _weights(rng, (4, 3, 3, 3)), SW, None, SY, 0, pad=1)
    graph, _, _ = _check(onnx_kit, m.build(y), _input(rng, (2, 3, 5, 6), 7), SY)
    (tensor, step), = graph.host_inputs.items()
    assert graph.inputs[tensor] == (2, 3, 7, 8) and (step.pad, step.pad_value) == (1, 7)
    assert graph.nodes[0].attrs["pad"] == 0


def test_padding_an_inner_tensor_with_another_zero_point_is_refused(onnx_kit):
    m = onnx_kit.QDQ((1, 4, 5, 5), SX, 0)
    c = m.conv(m.x, np.ones((4, 4, 1, 1), np.int8), SW, None, SY, 7)
    y = m.conv(c, np.ones((4, 4, 3, 3), np.int8), SW, None, SY, 0, pad=1)
    with pytest.raises(OnnxImportError, match=r"\(Conv\): it pads an input whose zero point "
                                              r"is 7"):
        import_onnx(m.build(y))


def test_missing_model_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        import_onnx(tmp_path / "none.onnx")


def test_without_the_extra_the_command_says_what_to_install(monkeypatch, capsys, tmp_path):
    import sys

    from avta.cli import main
    monkeypatch.setitem(sys.modules, "onnx", None)          # import onnx raises ImportError
    assert main(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "n.yaml")]) == 2
    assert "pip install 'avta[onnx]'" in capsys.readouterr().err


def test_the_command_writes_a_network_that_avta_run_takes(onnx_kit, tmp_path, capsys):
    """avta import, then avta run with the model's float input and output (docs/onnx.md)."""
    from avta.cli import main
    rng = np.random.default_rng(10)
    m = onnx_kit.QDQ((1, 2, 4, 4), SX, -128)
    y = m.conv(m.x, _weights(rng, (3, 2, 3, 3)), SW, None, SY, 1, pad=1, act="relu")
    onnx.save(m.build(y), tmp_path / "m.onnx")
    x = _input(rng, (1, 2, 4, 4), -128)
    np.save(tmp_path / "x.npy", x)
    assert main(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "n.yaml")]) == 0
    assert "1 of 1 requantizations are powers of two" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "n.yaml"), "--config", "tiny", "--input",
                 str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 0
    ours = np.load(tmp_path / "y.npy")
    (theirs,) = onnx_kit.run_ort(onnx.load(tmp_path / "m.onnx"), x)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= SY                  # equal but for ties
