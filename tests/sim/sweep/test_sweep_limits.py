"""``avta sweep`` on specs too large or wrong, on caches that are not caches, on a cluster
without workers and on a full disk: one line and exit 2 before any point runs, a recomputed
point, a message, the old results left whole."""

import json

import pytest

from avta.cli import main
from avta.sim.sweep.engine import run_sweep
from avta.sim.sweep.point import evaluate
from avta.sim.sweep.spec import load_spec


def _write_spec(folder, workload, vary="  LOG_ACC_BUFF_SIZE: [13, 14]", extra=""):
    path = folder / "spec.yaml"
    path.write_text(f"base: tiny\nvary:\n{vary}\nworkload: {workload}\n{extra}")
    return path


def _sweep(spec, out, *more):
    return main(["sweep", str(spec), "-o", str(out), "--workers", "0", *more])


@pytest.mark.parametrize("vary, message", [
    ("  LOG_ACC_BUFF_SIZE: {from: 1, to: 1000000000}",
     "spec.yaml:3: vary LOG_ACC_BUFF_SIZE: the range has 1,000,000,000 values, more than the "
     "100,000 points"),
    # 10^12 values: building the list alone would be a MemoryError.
    ("  LOG_ACC_BUFF_SIZE: {from: 1, to: 1000000000000}", "the range has 1,000,000,000,000"),
    ("  LOG_ACC_BUFF_SIZE: {from: 1, to: 1000}\n  LOG_INP_BUFF_SIZE: {from: 1, to: 1000}",
     "vary: 1000 x 1000 = 1,000,000 points, more than the 100,000 a sweep may have"),
])
def test_a_sweep_beyond_the_point_limit_is_refused_before_any_work(
        one_conv_network, tmp_path, capsys, vary, message):
    spec = _write_spec(tmp_path, one_conv_network, vary)
    assert _sweep(spec, tmp_path / "out") == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("workload, extra, message", [
    ("resnet18", "input_size: 33\n",
     "spec.yaml:4: workload: resnet18: input size 33 must be a positive multiple of 32"),
    ("resnet18", "input_size: 32\nseed: -1\n", "spec.yaml:6: seed -1: give a seed from 0"),
    ("dangling.yaml", "",
     "graph 'd': output 'nope' is neither an input nor produced by any node"),
])
def test_an_invalid_workload_fails_before_any_point_runs(tmp_path, capsys, workload, extra,
                                                         message):
    (tmp_path / "dangling.yaml").write_text("format: avta-network/1\nname: d\ninputs: {x: "
                                            "[1, 16, 8, 8]}\noutputs: [nope]\nnodes: []\n")
    spec = _write_spec(tmp_path, workload, extra=extra)
    assert _sweep(spec, tmp_path / "out") == 2
    captured = capsys.readouterr()
    assert message in captured.err and "point 0" not in captured.err + captured.out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("cached", ["[]", '{"status": "ok"}'])
def test_a_cache_file_that_is_not_a_row_is_run_again(one_conv_network, tmp_path, cached):
    spec = load_spec(_write_spec(tmp_path, one_conv_network))
    first = run_sweep(spec, tmp_path / "out", workers=0)
    assert first.ran == 2
    (broken, _) = sorted((tmp_path / "out" / "cache").glob("*.json"))
    broken.write_text(cached)
    again = run_sweep(spec, tmp_path / "out", workers=0)
    assert (again.ran, again.cached) == (1, 1)
    assert [r["cycles"] for r in again.rows] == [r["cycles"] for r in first.rows]
    assert json.loads(broken.read_text())["status"] == "ok"


def test_a_scheduler_address_that_is_not_one_is_refused(one_conv_network, tmp_path, capsys):
    spec = _write_spec(tmp_path, one_conv_network)
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"),
                 "--scheduler", "not a url"]) == 2
    assert "--scheduler 'not a url': not a scheduler address" in capsys.readouterr().err


def test_a_cluster_without_workers_times_out_and_a_rerun_resumes(one_conv_network, tmp_path):
    from dask.distributed import LocalCluster
    spec = load_spec(_write_spec(tmp_path, one_conv_network))
    heard = []
    with LocalCluster(n_workers=0, dashboard_address=":0") as cluster:
        result = run_sweep(spec, tmp_path / "out", scheduler=cluster.scheduler_address,
                           worker_timeout=1, log=heard.append)
    assert [r["status"] for r in result.rows] == ["error", "error"]
    assert "the cluster had no worker for 1 s" in result.rows[0]["message"]
    assert any(line.startswith("giving up") for line in heard)
    assert not list((tmp_path / "out" / "cache").glob("*.json"))
    again = run_sweep(spec, tmp_path / "out", workers=0)
    assert again.ran == 2 and [r["status"] for r in again.rows] == ["ok", "ok"]


@pytest.mark.parametrize("value", ["0", "nan", "-1"])
def test_a_worker_timeout_that_is_not_one_is_refused(one_conv_network, tmp_path, capsys, value):
    spec = _write_spec(tmp_path, one_conv_network)
    assert _sweep(spec, tmp_path / "out", "--worker-timeout", value) == 2
    assert f"--worker-timeout {value}: give a positive number" in capsys.readouterr().err


def test_a_full_disk_leaves_the_old_results_whole(one_conv_network, tmp_path,
                                                  avta_on_a_full_disk):
    spec = _write_spec(tmp_path, one_conv_network)
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.csv", "results.json"):
        (out / name).write_text(f"old {name}")
    # The cache rows (under 1 kB) fit, the results do not.
    done = avta_on_a_full_disk(["sweep", spec, "-o", out, "--workers", "0"], limit=1200,
                               cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "File too large" in done.stderr and "Traceback" not in done.stderr
    assert {p.name: p.read_text() for p in out.iterdir() if p.is_file()} == {
        "results.csv": "old results.csv", "results.json": "old results.json"}


def test_a_point_beyond_the_dram_is_an_error_row_not_a_memory_error(tmp_path):
    from avta.sim.sweep.point import task
    spec = load_spec(_write_spec(tmp_path, "resnet18", extra="input_size: 8192\n"))
    (point, _) = spec.points()
    row = evaluate(task(spec, point))
    assert row["status"] == "error" and "needs 8.6 GiB of device DRAM" in row["message"]
