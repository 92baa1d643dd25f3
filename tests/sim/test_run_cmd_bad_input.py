"""``avta run`` on bad input and on a full disk: one line and exit 2, never a traceback, and an
old report left whole. The networks are small hand-made ones on ``tiny``."""

import json

import numpy as np
import pytest

from avta.cli import main
from avta.runtime.net import Graph, Node, save
from avta.runtime.ops.requant import Requant


def _weights(rng, *shape):
    return rng.integers(-20, 20, size=shape, dtype=np.int8)


def _conv(rng, name, source, channels=16):
    return Node(name, "conv2d", [source], attrs=dict(pad=1),
                weights=_weights(rng, channels, 16, 3, 3), requant=Requant(6, (0, 127)))


@pytest.fixture
def one_conv(tmp_path):
    """A one-input, one-output network: a 3x3 convolution."""
    rng = np.random.default_rng(1)
    path, _ = save(Graph("one", {"x": (1, 16, 8, 8)}, [_conv(rng, "c", "x")], ["c"]),
                   tmp_path / "one.yaml")
    return path


def test_a_network_with_two_inputs_runs(tmp_path, capsys):
    rng = np.random.default_rng(2)
    graph = Graph("two-in", {"x": (1, 16, 8, 8), "y": (1, 16, 8, 8)},
                  [_conv(rng, "c", "x"), Node("s", "add", ["c", "y"], requant=Requant(1, (0, 127)))],
                  ["s"])
    path, _ = save(graph, tmp_path / "two.yaml")
    assert main(["run", str(path), "--config", "tiny"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("output matches the numpy reference")
    np.save(tmp_path / "x.npy", np.zeros((1, 16, 8, 8), np.int8))
    assert main(["run", str(path), "--config", "tiny", "--input", str(tmp_path / "x.npy")]) == 2
    assert "two-in has inputs ['x', 'y']; --input gives one array" in capsys.readouterr().err


def test_a_network_with_two_outputs_runs_and_checks_both(tmp_path, capsys):
    rng = np.random.default_rng(3)
    graph = Graph("two-out", {"x": (1, 16, 8, 8)}, [_conv(rng, "a", "x"), _conv(rng, "b", "a")],
                  ["b", "a"])
    path, _ = save(graph, tmp_path / "two.yaml")
    report = tmp_path / "r.json"
    assert main(["run", str(path), "--config", "tiny", "--json", str(report)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("every output matches the numpy reference")
    assert json.loads(report.read_text())["match"] is True
    assert main(["run", str(path), "--config", "tiny", "--output", str(tmp_path / "y.npy")]) == 2
    assert "--output takes one array, but two-out has 2 outputs (b, a)" in \
        capsys.readouterr().err


def test_an_npz_input_is_refused(one_conv, tmp_path, capsys):
    np.savez(tmp_path / "x.npz", x=np.zeros((1, 16, 8, 8), np.int8))
    assert main(["run", str(one_conv), "--config", "tiny", "--input",
                 str(tmp_path / "x.npz")]) == 2
    assert "an .npz archive; give one array as a .npy file" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["-1", str(1 << 32)])
def test_a_seed_outside_32_bits_is_refused(one_conv, seed, capsys):
    assert main(["run", str(one_conv), "--config", "tiny", "--seed", seed]) == 2
    assert f"--seed {seed}: give a seed from 0 to 4294967295" in capsys.readouterr().err
    assert main(["profile", "resnet18", "--config", "tiny", "--input-size", "32",
                 "--seed", seed, "-o", "unused"]) == 2


def test_a_network_beyond_the_32_bit_dram_is_refused_before_it_is_made(tmp_path, capsys):
    # 16 channels of 32768 x 32768: 16 GiB for the input alone, which numpy would allocate.
    rng = np.random.default_rng(4)
    path, _ = save(Graph("huge", {"x": (1, 16, 32768, 32768)}, [_conv(rng, "c", "x")], ["c"]),
                   tmp_path / "huge.yaml")
    assert main(["run", str(path), "--config", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "huge needs 220.1 GiB of device DRAM on tiny" in err and "4 GiB" in err
    # A built-in network is refused before its calibration runs it (8.6 GiB here).
    assert main(["run", "resnet18", "--config", "tiny", "--input-size", "8192"]) == 2
    assert "resnet18 needs 8.6 GiB of device DRAM on tiny" in capsys.readouterr().err


def test_a_full_disk_leaves_the_old_json_report_whole(one_conv, tmp_path, avta_on_a_full_disk):
    report = tmp_path / "r.json"
    report.write_text('{"old": "report"}\n')
    done = avta_on_a_full_disk(["run", one_conv, "--config", "tiny", "--json", report],
                               limit=300, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith("avta run: [Errno 27] File too large")
    assert report.read_text() == '{"old": "report"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.npz", "one.yaml", "r.json"]


def test_a_full_disk_leaves_the_old_output_whole(one_conv, tmp_path, avta_on_a_full_disk):
    out = tmp_path / "y.npy"
    np.save(out, np.arange(3))
    done = avta_on_a_full_disk(["run", one_conv, "--config", "tiny", "--output", out],
                               limit=1000, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert np.array_equal(np.load(out), np.arange(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.npz", "one.yaml", "y.npy"]
