"""``avta import`` writes what ``avta run`` takes, or says why not, and never leaves a mix of
an old and a new file of the pair NET.yaml / NET.npz."""

import numpy as np
import pytest

from avta.cli import main

onnx = pytest.importorskip("onnx")

SX, SW, SY = 2.0 ** -4, 2.0 ** -6, 2.0 ** -3


@pytest.fixture
def conv_model(onnx_kit, tmp_path):
    """A QDQ model of one 3x3 convolution with 16 x 16 channels (an .npz of about 2.8 kB, a
    YAML of under 1 kB)."""
    rng = np.random.default_rng(5)
    m = onnx_kit.QDQ((1, 16, 4, 4), SX, 0)
    y = m.conv(m.x, rng.integers(-128, 128, (16, 16, 3, 3)).astype(np.int8), SW, None, SY, 0,
               pad=1)
    path = tmp_path / "m.onnx"
    onnx.save(m.build(y), path)
    return path


def test_a_full_disk_leaves_the_old_pair_whole(conv_model, tmp_path, avta_on_a_full_disk):
    (tmp_path / "n.yaml").write_text("old yaml")
    (tmp_path / "n.npz").write_text("old npz")
    done = avta_on_a_full_disk(["import", conv_model, "-o", tmp_path / "n.yaml"], limit=1500,
                               cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "File too large" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "n.yaml").read_text() == "old yaml"
    assert (tmp_path / "n.npz").read_text() == "old npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "n.npz", "n.yaml"]


def test_an_output_name_that_run_would_refuse(conv_model, tmp_path, capsys):
    assert main(["import", str(conv_model), "-o", str(tmp_path / "n.txt")]) == 2
    assert "name the network file NAME.yaml" in capsys.readouterr().err
    assert not (tmp_path / "n.txt").exists() and not (tmp_path / "n.npz").exists()


def test_a_model_without_an_operator_is_refused(onnx_kit, tmp_path, capsys):
    m = onnx_kit.QDQ((1, 2, 4, 4), SX, 0)
    onnx.save(m.build(m.x), tmp_path / "m.onnx")
    assert main(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "n.yaml")]) == 2
    assert "there is no operator to run on the device" in capsys.readouterr().err
    assert not (tmp_path / "n.yaml").exists()
