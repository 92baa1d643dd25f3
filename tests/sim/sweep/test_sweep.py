"""``avta sweep``: the spec, a point's figures, Dask against one by one, resuming from the
cache, invalid points, the Pareto front and the chart. Points are ``tiny`` variants running a
four-layer network (a conv, a pool, a global pool and a dense), so a point takes well under a
second."""

import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from avta.cli import main
from avta.isa.config import load_config
from avta.sim.sweep.chart import write_chart
from avta.sim.sweep.engine import pareto, run_sweep, write_results
from avta.sim.sweep.point import area, evaluate, point_key, task
from avta.sim.sweep.spec import SpecError, parse_spec

_VOLATILE = ("seconds", "cached")


@pytest.fixture(scope="module")
def network(tmp_path_factory, write_small_network):
    """A small network YAML (with its .npz, a max pool among its layers) that every tiny
    variant runs in well under a second."""
    return write_small_network(tmp_path_factory.mktemp("net") / "small.yaml", max_pool=True)


def _spec(network, vary, **extra):
    lines = ["base: tiny", "vary:"] + [f"  {k}: {v}" for k, v in vary.items()]
    lines += [f"workload: {network}"] + [f"{k}: {v}" for k, v in extra.items()]
    return parse_spec("\n".join(lines) + "\n", source="spec.yaml")


def _stable(row):
    return {k: v for k, v in row.items() if k not in _VOLATILE + ("pareto",)}


# -- the spec -------------------------------------------------------------------------------------

def test_values_lists_ranges_and_the_block_shorthand(network):
    spec = _spec(network, {"LOG_BLOCK": "{from: 2, to: 3}",
                           "AXI_DATA_BITS": "{from: 64, to: 512, times: 2}",
                           "TOKEN_BITS": "{from: 4, to: 9, step: 2}", "ACC_READ_PORTS": 1})
    assert spec.vary == {"LOG_BLOCK": [2, 3], "AXI_DATA_BITS": [64, 128, 256, 512],
                         "TOKEN_BITS": [4, 6, 8], "ACC_READ_PORTS": [1]}
    points = spec.points()
    assert len(points) == 24 and [p.index for p in points] == list(range(24))
    cfg = points[-1].config
    assert (cfg.log_block_in, cfg.log_block_out, cfg.axi_data_bits, cfg.token_bits) == \
        (3, 3, 512, 8)
    assert cfg.log_acc_buff_size == load_config("tiny").log_acc_buff_size


def test_a_group_varies_keys_together(network):
    text = (f"base: tiny\nvary:\n  LOG_BLOCK: [2, 3]\n  scratchpads:\n"
            f"    - {{label: half, LOG_INP_BUFF_SIZE: 9, LOG_ACC_BUFF_SIZE: 11}}\n"
            f"    - {{}}\n"
            f"    - {{LOG_INP_BUFF_SIZE: 11, LOG_ACC_BUFF_SIZE: 13}}\n"
            f"workload: {network}\n")
    spec = parse_spec(text, source="spec.yaml")
    assert [str(g) for g in spec.vary["scratchpads"]] == \
        ["half", "base", "LOG_INP_BUFF_SIZE=11,LOG_ACC_BUFF_SIZE=13"]
    points = spec.points()
    assert len(points) == 6                                       # 2 x 3, not 2 x 3 x 3
    tiny = load_config("tiny")
    half, base, double = points[3:]
    assert half.values == {"LOG_BLOCK": 3, "scratchpads": "half"}
    assert (half.config.log_inp_buff_size, half.config.log_acc_buff_size,
            half.config.log_block_in) == (9, 11, 3)
    assert (base.config.log_inp_buff_size, base.config.log_wgt_buff_size) == \
        (tiny.log_inp_buff_size, tiny.log_wgt_buff_size)
    assert (double.config.log_inp_buff_size, double.config.log_acc_buff_size) == (11, 13)
    assert double.config.name == \
        "tiny-LOG_BLOCK_3-scratchpads_LOG_INP_BUFF_SIZE_11_LOG_ACC_BUFF_SIZE_13"
    assert double.config.log_wgt_buff_size == tiny.log_wgt_buff_size


@pytest.mark.parametrize("vary, message", [
    ("  LOG_INP_BUFF_SIZE: [13]\n  pads:\n    - {LOG_INP_BUFF_SIZE: 14}\n",
     "spec.yaml:4: vary: pads sets LOG_INP_BUFF_SIZE, which LOG_INP_BUFF_SIZE sets too"),
    ("  gemm:\n    - {LOG_BLOCK: 3}\n  LOG_BLOCK_IN: [2]\n",
     "spec.yaml:5: vary: LOG_BLOCK_IN, which gemm sets too"),
    ("  gemm:\n    - {LOG_BLOK: 3}\n", "spec.yaml:4: vary gemm: unknown configuration key"),
    ("  gemm:\n    - {label: a, LOG_BLOCK: 2}\n    - {label: a, LOG_BLOCK: 3}\n",
     "spec.yaml:4: vary gemm: two values have the same label"),
    ("  gemm:\n    - {LOG_BLOCK: x}\n", "spec.yaml:4: vary gemm LOG_BLOCK = 'x' must be"),
    ("  Shape:\n    - {LOG_BLOCK: 2}\n", "spec.yaml:3: vary: unknown configuration key 'Shape'"),
    ("  shape:\n    - {LOG_BLOCK: 2}\n", "spec.yaml:3: vary: a group cannot be named 'shape'"),
])
def test_a_group_mistake_names_its_line(vary, message):
    with pytest.raises(SpecError) as error:
        parse_spec(f"base: tiny\nvary:\n{vary}workload: resnet18\n", source="spec.yaml")
    assert message in str(error.value)


def test_a_builtin_workload_has_an_input_size(network):
    text = "base: default\nvary:\n  AXI_DATA_BITS: [64]\nworkload: resnet18\n"
    assert parse_spec(text).input_size == 224
    assert parse_spec(text + "input_size: 32\n").input_size == 32


@pytest.mark.parametrize("text, message", [
    ("base: tiny\nvary:\n  AXI_DATA_BITS: [64]\n  LOG_BLOK_IN: [2]\nworkload: resnet18\n",
     "spec.yaml:4: vary: unknown configuration key 'LOG_BLOK_IN'"),
    ("base: tiny\nvary:\n  LOG_BLOCK_IN: {from: 5, to: 3}\nworkload: resnet18\n",
     "spec.yaml:3: vary LOG_BLOCK_IN: impossible range from 5 to 3"),
    ("base: tiny\nvary:\n  LOG_BLOCK_IN: {from: 2, to: 3, step: 0}\nworkload: resnet18\n",
     "spec.yaml:3: vary LOG_BLOCK_IN: step 0 must be at least 1"),
    ("base: tiny\nvary:\n  LOG_BLOCK_IN: [2, x]\nworkload: resnet18\n",
     "spec.yaml:3: vary LOG_BLOCK_IN value = 'x' must be an integer"),
    ("base: tiny\nvary:\n  LOG_BLOCK: [2]\n  LOG_BLOCK_IN: [2]\nworkload: resnet18\n",
     "spec.yaml:4: vary: LOG_BLOCK_IN, which LOG_BLOCK sets too"),
    ("base: tiny\nvary:\n  LOG_BLOCK: [2]\nworkload: resnet18\nworkers: 3\n",
     "spec.yaml:5: unknown key 'workers'"),
    ("base: nosuch\nvary:\n  LOG_BLOCK: [2]\nworkload: resnet18\n",
     "spec.yaml:1: base nosuch: "),
    ("base: tiny\nvary:\n  LOG_BLOCK: [2]\nworkload: lenet\n",
     "spec.yaml:4: workload 'lenet' is neither"),
    ("base: tiny\nworkload: resnet18\n", "spec.yaml: vary is missing"),
])
def test_a_mistake_names_its_line(text, message):
    with pytest.raises(SpecError) as error:
        parse_spec(text, source="spec.yaml")
    assert message in str(error.value)


def test_input_size_is_refused_for_a_network_file(network):
    with pytest.raises(SpecError, match="spec.yaml:5: input_size is for the built-in"):
        _spec(network, {"LOG_BLOCK": "[2]"}, input_size=32)


# -- points ---------------------------------------------------------------------------------------

def test_the_area_breakdown_adds_up():
    for name in ("tiny", "default"):
        row = area(load_config(name))
        assert row["sram_mm2"] + row["logic_mm2"] + row["other_mm2"] == \
            pytest.approx(row["area_mm2"])
        memories = [v for k, v in row.items() if k.startswith("sram_") and k != "sram_mm2"]
        assert len(memories) == 5 and sum(memories) == pytest.approx(row["sram_mm2"])
        assert row["other_mm2"] >= 0 and row["logic_mm2"] > 0


def test_an_invalid_point_is_recorded_with_its_message(network, tmp_path):
    spec = _spec(network, {"LOG_ACC_BUFF_SIZE": "[12, 20]"})
    result = run_sweep(spec, tmp_path, workers=0)
    ok, bad = result.rows
    assert ok["status"] == "ok" and bad["status"] == "invalid"
    assert bad["LOG_ACC_BUFF_SIZE"] == 20 and result.invalid == 1 and result.ran == 1
    assert "invalid VTA configuration" in bad["message"]
    assert "LOG_UOP_WIDTH" in bad["message"]           # the configuration error's own words


def test_fit_formats_makes_an_overflowing_point_valid(network, tmp_path):
    spec = _spec(network, {"LOG_ACC_BUFF_SIZE": "[12, 16]"}, fit_formats="true")
    plain, fitted = spec.points()
    assert plain.fitted == {} and fitted.fitted == {"LOG_ACC_FACTOR_RESTRICT": 1}
    assert fitted.config.log_acc_factor_restrict == 1 and fitted.config.log_acc_buff_size == 16
    assert _spec(network, {"LOG_ACC_BUFF_SIZE": "[16]"}).points()[0].config is None
    rows = run_sweep(spec, tmp_path, workers=0).rows
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert [r["fitted"] for r in rows] == ["", "LOG_ACC_FACTOR_RESTRICT=1"]
    with pytest.raises(SpecError, match="spec.yaml:5: fit_formats must be true or false"):
        _spec(network, {"LOG_ACC_BUFF_SIZE": "[12]"}, fit_formats="3")


def test_a_point_with_rectangular_blocks_counts_its_host_layers(network, tmp_path):
    spec = _spec(network, {"LOG_BLOCK_OUT": "[2, 3]"})
    square, rect = run_sweep(spec, tmp_path, workers=0).rows
    assert square["host_layers"] == 0 and square["pareto"]
    assert rect["status"] == "ok" and rect["host_layers"] > 0 and not rect["pareto"]
    assert "on the host" in rect["message"]


# -- the engine -----------------------------------------------------------------------------------

def test_dask_gives_what_running_the_points_one_by_one_gives(network, tmp_path):
    spec = _spec(network, {"LOG_BLOCK_OUT": "[2, 3]", "AXI_DATA_BITS": "[64, 128]"})
    result = run_sweep(spec, tmp_path, workers=2)
    assert result.ran == 4 and result.cached == 0
    alone = [evaluate(task(spec, p)) for p in spec.points()]
    assert [_stable(r) for r in result.rows] == [_stable(r) for r in alone]
    assert all(r["status"] == "ok" and r["cycles"] > 0 for r in result.rows)


class _Counter:
    def __init__(self):
        self.runs = []

    def __call__(self, t):
        self.runs.append(t["index"])
        return evaluate(t)


def test_a_rerun_runs_only_the_missing_points(network, tmp_path):
    small = _spec(network, {"LOG_BLOCK": "[2]", "AXI_DATA_BITS": "[64, 128, 256]"})
    spec = _spec(network, {"LOG_BLOCK": "[2, 3]", "AXI_DATA_BITS": "[64, 128, 256]"})
    first = _Counter()
    run_sweep(small, tmp_path, workers=0, evaluate_fn=first)      # a subset first
    assert first.runs == [0, 1, 2]
    second = _Counter()
    result = run_sweep(spec, tmp_path, workers=0, evaluate_fn=second)
    assert second.runs == [3, 4, 5] and result.cached == 3 and result.ran == 3
    # an interrupted sweep: two points lost, one half-written
    keys = [r["key"] for r in result.rows]
    (tmp_path / "cache" / f"{keys[1]}.json").unlink()
    (tmp_path / "cache" / f"{keys[4]}.json").unlink()
    (tmp_path / "cache" / f"{keys[5]}.json").write_text('{"status": "o')
    third = _Counter()
    again = run_sweep(spec, tmp_path, workers=0, evaluate_fn=third)
    assert third.runs == [1, 4, 5]
    assert [_stable(r) for r in again.rows] == [_stable(r) for r in result.rows]
    # a different avta version or sources, workload or exactness is another key
    t = task(spec, spec.points()[0])
    assert point_key(t) != point_key(t | {"version": "0.0.0"})
    assert point_key(t) != point_key(t | {"sources": "0" * 24})
    assert point_key(t) != point_key(t | {"exact": True})
    assert point_key(t) != point_key(t | {"input_size": 64})


def test_the_key_follows_every_source_a_row_depends_on(network):
    """The sources' digest covers the runtime, both simulators, the RTL, the floorplan and the
    clock and energy models: a change in any of them is another key."""
    from avta.files import package_source_files
    from avta.sim.sweep.point import SOURCES, sources_digest
    names = {name for name, _ in package_source_files(SOURCES)}
    for module in ("avta.runtime/ops/conv_plan.py", "avta.sim/fsim/timing.py",
                   "avta.hw/core/compute.py", "avta.floorplan/vta/inventory.py",
                   "avta.synth/clock.py", "avta.sim/energy/table.py"):
        assert module in names
    spec = _spec(network, {"AXI_DATA_BITS": [64]})
    assert task(spec, spec.points()[0])["sources"] == sources_digest()


def test_the_key_hashes_the_weights_file_the_network_names(tmp_path):
    """A network whose ``weights:`` names a file other than ``<stem>.npz``: changing that
    file's biases is another key (the old key would return the old cycles, marked cached)."""
    from avta.runtime.net import GraphBuilder, load, save
    weights = np.random.default_rng(2).integers(-9, 9, (16, 16, 1, 1), dtype=np.int8)

    def graph(bias):
        b = GraphBuilder("w")
        y = b.conv2d("c", b.input("x", (1, 16, 4, 4)), weights,
                     bias=np.full(16, bias, np.int32))
        return b.build([y])
    path, npz = save(graph(1), tmp_path / "net.yaml")
    shared = npz.rename(tmp_path / "shared-weights.npz")
    path.write_text(path.read_text().replace("weights: net.npz", "weights: shared-weights.npz"))
    assert load(path).nodes[0].bias[1] == 1
    spec = parse_spec(f"base: tiny\nvary:\n  AXI_DATA_BITS: [64]\nworkload: {path}\n")
    before = point_key(task(spec, spec.points()[0]))
    save(graph(7), tmp_path / "other.yaml")
    (tmp_path / "other.npz").replace(shared)           # new biases under the named file
    assert load(path).nodes[0].bias[1] == 7
    assert point_key(task(spec, spec.points()[0])) != before


def test_a_cached_row_counts_only_for_its_own_point(network, tmp_path):
    """A cache file holding another point's row (or a row short of its figures, or not a row
    at all) is run again, never taken as this point's result."""
    spec = _spec(network, {"AXI_DATA_BITS": "[64, 128]"})
    first = run_sweep(spec, tmp_path, workers=0)
    keys = [r["key"] for r in first.rows]
    cache = tmp_path / "cache"
    (cache / f"{keys[1]}.json").write_text((cache / f"{keys[0]}.json").read_text())
    counter = _Counter()
    again = run_sweep(spec, tmp_path, workers=0, evaluate_fn=counter)
    assert counter.runs == [1]
    assert [_stable(r) for r in again.rows] == [_stable(r) for r in first.rows]
    for text in ("[]", '{"status": "ok"}',
                 json.dumps({"key": keys[1], "status": "ok", "cycles": "many"})):
        (cache / f"{keys[1]}.json").write_text(text)
        counter = _Counter()
        run_sweep(spec, tmp_path, workers=0, evaluate_fn=counter)
        assert counter.runs == [1], text


def test_a_worker_that_dies_loses_only_its_point(network, tmp_path):
    import dask
    # Loaded before the override: otherwise distributed's defaults land inside the key that
    # dask.config.set inserts and leave with it, and every later Client in this process fails
    # (KeyError: 'distributed').
    import distributed  # noqa: F401

    def die_on_point_one(t):
        # A local function: pickle cannot send it by reference (the workers cannot import this
        # test module), so Dask sends it by value with cloudpickle.
        if t["index"] == 1:
            os._exit(3)
        return evaluate(t)

    spec = _spec(network, {"AXI_DATA_BITS": "[64, 128, 256]"})
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        result = run_sweep(spec, tmp_path, workers=2, evaluate_fn=die_on_point_one)
    statuses = [r["status"] for r in result.rows]
    assert statuses == ["ok", "error", "ok"]
    assert "KilledWorker" in result.rows[1]["message"]
    cached = sorted(p.stem for p in (tmp_path / "cache").glob("*.json"))
    assert cached == sorted([result.rows[0]["key"], result.rows[2]["key"]])


# -- the front, the files, the command ------------------------------------------------------------

def test_the_pareto_front_of_a_hand_made_table():
    rows = [{"status": "ok", "cycles": c, "area_mm2": a, "host_layers": h}
            for c, a, h in [(100, 1.0, 0), (80, 2.0, 0), (80, 2.5, 0), (120, 1.0, 0),
                            (50, 4.0, 0), (50, 4.0, 0), (10, 0.5, 2), (200, 0.9, 0)]]
    rows.append({"status": "invalid"})
    rows.append({"status": "error"})
    flags = [r["pareto"] for r in pareto(rows)]
    #           100/1   80/2  80/2.5 120/1  50/4  50/4  host  200/0.9 invalid error
    assert flags == [True, True, False, False, True, True, False, True, False, False]


def test_results_and_chart_files(network, tmp_path):
    spec = _spec(network, {"LOG_BLOCK": "[2, 3]", "AXI_DATA_BITS": "[64, 128]",
                           "LOG_ACC_BUFF_SIZE": "[12, 20]"})
    result = run_sweep(spec, tmp_path, workers=0)
    files = write_results(result, tmp_path) | write_chart(result, tmp_path)
    header = files["csv"].read_text().splitlines()[0].split(",")
    for column in ("LOG_BLOCK", "AXI_DATA_BITS", "LOG_ACC_BUFF_SIZE", "status", "cycles",
                   "utilization", "area_mm2", "sram_mm2", "logic_mm2", "other_mm2", "pareto",
                   "host_layers"):
        assert column in header
    data = json.loads(files["json"].read_text())
    assert len(data["rows"]) == 8 and data["varied"] == ["LOG_BLOCK", "AXI_DATA_BITS",
                                                          "LOG_ACC_BUFF_SIZE"]
    assert any(r["pareto"] for r in data["rows"])
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ET.parse(files["svg"]).getroot().tag.endswith("svg")


def test_the_command(network, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"base: tiny\nvary:\n  LOG_BLOCK: [2, 3]\nworkload: {network}\n")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--workers", "0"]) == 0
    out = capsys.readouterr().out
    assert "2 points (2 run, 0 cached, 0 invalid, 0 failed)" in out
    assert "Pareto front" in out
    for name in ("results.csv", "results.json", "sweep.svg", "sweep.png"):
        assert (tmp_path / "out" / name).is_file()
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "--workers", "0"]) == 0
    assert "(0 run, 2 cached" in capsys.readouterr().out
    spec.write_text("base: tiny\nvary:\n  LOG_BLOCK: {from: 3, to: 2}\nworkload: resnet18\n")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "spec.yaml:3: vary LOG_BLOCK: impossible range" in err


@pytest.mark.tsim
def test_exact_counts_cycles_on_tsim(network, tmp_path):
    """``--exact``: the same point on tsim, its cycles a count (not fsim's estimate) in another
    cache entry."""
    spec = _spec(network, {"LOG_BLOCK": "[2]"})
    fsim = run_sweep(spec, tmp_path, workers=0).rows[0]
    tsim = run_sweep(spec, tmp_path, exact=True, workers=0).rows[0]
    assert tsim["status"] == "ok", tsim["message"]
    assert tsim["estimated"] is False and fsim["estimated"] is True
    assert tsim["key"] != fsim["key"] and tsim["area_mm2"] == fsim["area_mm2"]
    assert tsim["cycles"] > 0 and tsim["ideal_cycles"] == fsim["ideal_cycles"]


def test_a_builder_point_loads_no_weights_and_counts_the_bit_exact_cycles(monkeypatch):
    """A timing-only point of a built-in network loads its timing graph (zero weights, the
    biases and shifts kept: the same programs), and its cycles are a bit-exact fsim run's."""
    from avta.runtime.net import random_input
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim import targets
    spec = _spec("resnet18", {"AXI_DATA_BITS": "[64]"}, input_size=32)
    loaded = []
    original = targets.load_network

    def spy(*args, **kwargs):
        loaded.append(kwargs.get("timing_only"))
        return original(*args, **kwargs)
    monkeypatch.setattr(targets, "load_network", spy)
    (point,) = spec.points()
    row = evaluate(task(spec, point))
    assert row["status"] == "ok" and loaded == [True]
    graph = original("resnet18", 32, 0, point.config)
    device = targets.make_device(point.config, "fsim", dram_bytes(point.config, graph))
    assert row["cycles"] == run_network(device, graph, random_input(graph, seed=0)).total["cycles"]
