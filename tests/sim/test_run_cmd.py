"""``avta run``: a whole network from the command line, its table, JSON report and exit status."""

import json

import numpy as np
import pytest

from avta.cli import main
from avta.runtime.net import build, random_input, run_reference, save


def test_a_built_in_network_on_fsim(tmp_path, capsys):
    report, out = tmp_path / "r.json", tmp_path / "y.npy"
    assert main(["run", "mobilenet1.0", "--config", "default", "--input-size", "32",
                 "--json", str(report), "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fsim (cycles are fsim estimates)" in text
    assert text.rstrip().endswith("output matches the numpy reference")
    data = json.loads(report.read_text())
    assert data["network"] == "mobilenet1.0" and data["config"] == "default"
    assert data["target"] == "fsim" and data["input_size"] == 32 and data["match"] is True
    assert data["estimated"] is True
    layer_keys = {"name", "op", "macs", "cycles", "ideal_cycles", "utilization", "bytes_loaded",
                  "bytes_stored", "insns", "bound", "on"}
    assert all(layer_keys <= set(layer) for layer in data["layers"])
    assert data["total"]["cycles"] == sum(layer["cycles"] for layer in data["layers"])
    assert data["total"]["macs"] == build("mobilenet1.0", input_size=32, calibrate=False).macs()
    graph = build("mobilenet1.0", input_size=32)
    want = run_reference(graph, random_input(graph, seed=0), keep=False)
    np.testing.assert_array_equal(np.load(out), next(iter(want.values())))


def test_a_network_file_and_an_input_file(tmp_path, capsys):
    graph = build("resnet18", input_size=32, seed=4)
    path, _ = save(graph, tmp_path / "r18.yaml")
    x = random_input(graph, seed=9)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(path), "--config", "default", "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy")]) == 0
    want = run_reference(graph, x, keep=False)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), next(iter(want.values())))


def test_bad_input_is_exit_2(tmp_path, capsys):
    assert main(["run", "resnet19", "--config", "tiny"]) == 2
    assert "resnet18" in capsys.readouterr().err          # the message lists the networks
    assert main(["run", "resnet18", "--config", "tiny", "--input-size", "33"]) == 2
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 16, 16), np.int8))
    assert main(["run", "resnet18", "--config", "tiny", "--input-size", "32",
                 "--input", str(tmp_path / "x.npy")]) == 2
    assert "[1, 3, 32, 32]" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.yaml"), "--config", "tiny"]) == 2
    assert main(["run", "resnet18", "--config", "tiny", "--json", str(tmp_path)]) == 2


def test_timing_only_gives_the_bit_exact_runs_cycles_and_checks_nothing(tmp_path, capsys):
    reports = {mode: tmp_path / f"{mode}.json" for mode in ("exact", "timing")}
    # default, not tiny: its programs build five times faster, and the mode is the same.
    args = ["run", "resnet18", "--config", "default", "--input-size", "32"]
    assert main(args + ["--json", str(reports["exact"])]) == 0
    assert main(args + ["--timing-only", "--json", str(reports["timing"])]) == 0
    text = capsys.readouterr().out
    assert "fsim timing-only (cycles are fsim estimates)" in text
    assert text.rstrip().endswith("output not computed (--timing-only: cycles, counters and "
                                  "bytes only)")
    exact, timing = (json.loads(path.read_text()) for path in reports.values())
    assert exact["match"] is True and timing["match"] is None and timing["timing_only"] is True
    assert timing["layers"] == exact["layers"] and timing["total"] == exact["total"]


def test_timing_only_is_fsims_and_writes_no_output(tmp_path, capsys):
    args = ["run", "resnet18", "--config", "tiny", "--input-size", "32", "--timing-only"]
    assert main(args + ["--target", "tsim"]) == 2
    assert "--timing-only is a mode of fsim" in capsys.readouterr().err
    assert main(args + ["--output", str(tmp_path / "y.npy")]) == 2
    assert "computes no output" in capsys.readouterr().err
    assert not (tmp_path / "y.npy").exists()


def test_output_is_written_at_exactly_the_path_given(tmp_path, capsys):
    out = tmp_path / "y.bin"
    assert main(["run", "resnet18", "--config", "default", "--input-size", "32",
                 "--output", str(out)]) == 0
    assert out.is_file() and not (tmp_path / "y.bin.npy").exists()
    assert np.load(out).dtype == np.int8


def test_input_size_zero_is_refused_not_224(capsys):
    assert main(["run", "resnet18", "--config", "tiny", "--input-size", "0"]) == 2
    assert "input size 0" in capsys.readouterr().err


def test_json_input_size_is_the_models_not_the_host_padded_one(tmp_path, capsys):
    """An imported model whose input the host pads (zero point 7, a padded first conv): the
    report gives the model's 8, not the device's 10."""
    from avta.runtime.net import Graph, GraphBuilder, HostInput
    b = GraphBuilder("padded")
    b.input("x", (1, 16, 10, 10))
    y = b.conv2d("c", "x", np.ones((16, 16, 3, 3), np.int8), stride=1, pad=0)
    g = b.build([y])
    g = Graph(g.name, g.inputs, g.nodes, g.outputs,
              host_inputs={"x": HostInput("x", (1, 16, 8, 8), "int8", pad=1, pad_value=7)})
    path, _ = save(g, tmp_path / "p.yaml")
    report = tmp_path / "r.json"
    assert main(["run", str(path), "--config", "tiny", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["input_size"] == 8
def test_latency_energy_and_edp(tmp_path, capsys, monkeypatch):
    """avta run prints the time and energy line; --json has them per layer and in total."""
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    report = tmp_path / "r.json"
    assert main(["run", "mobilenet1.0", "--config", "default", "--input-size", "32",
                 "--clock", "50", "--json", str(report)]) == 0
    text = capsys.readouterr().out
    assert "time and energy: clock 50.0 MHz (--clock), latency " in text
    data = json.loads(report.read_text())
    assert data["clock"]["mhz"] == 50 and data["tech"]["name"] == "horowitz45"
    device = [layer for layer in data["layers"] if layer["on"] == "device"]
    for layer in device:
        assert layer["latency_us"] == layer["cycles"] / 50
        assert layer["energy_uj"] == pytest.approx(sum(layer["energy_pj"].values()) * 1e-6)
        assert layer["edp_js"] == pytest.approx(layer["energy_uj"] * layer["latency_us"] * 1e-12)
    total = data["total"]
    assert total["energy_uj"] == pytest.approx(sum(layer["energy_uj"] for layer in device))
    assert total["latency_us"] == pytest.approx(total["cycles"] / 50)
    assert total["energy_pj"]["dram"] > 0 and total["energy_pj"]["leakage"] > 0


@pytest.mark.parametrize("option, message", [
    (["--clock", "0"], "--clock 0.0: give the clock in MHz"),
    (["--clock", "nan"], "--clock nan: give the clock in MHz"),
    (["--clock", "1e9"], "--clock 1000000000.0: give the clock in MHz"),
    (["--tech", "missing.yaml"], "energy table 'missing.yaml' does not exist"),
])
def test_a_bad_clock_or_table_is_refused(capsys, option, message):
    assert main(["run", "mobilenet1.0", "--input-size", "32", *option]) == 2
    assert message in capsys.readouterr().err
