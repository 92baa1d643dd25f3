"""``avta area``: the model's report on the terminal and as JSON, bad input, and --synth on
tiny (synthesized once, then from the cache)."""

import json

import pytest

from avta import cli


def test_the_model_report_prints_and_writes_json(tmp_path, capsys):
    out = tmp_path / "area.json"
    assert cli.main(["area", "--config", "tiny", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("tiny: area (floorplan model)") and "gemm" in text
    data = json.loads(out.read_text())
    assert data["kind"] == "model" and [b["block"] for b in data["logic"]] == ["gemm", "alu", "ctrl"]
    t = data["totals"]
    assert t["sram_mm2"] + t["logic_mm2"] + t["other_mm2"] == pytest.approx(t["die_mm2"])


def test_bad_input_is_an_error_for_a_person(tmp_path, capsys):
    assert cli.main(["area", "--config", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert cli.main(["area", "--config", "tiny", "--json", str(tmp_path / "no" / "a.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_synth_reports_every_unit(tmp_path, capsys):
    out = tmp_path / "synth.json"
    assert cli.main(["area", "--config", "tiny", "--synth", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    for unit in ("fetch", "load", "compute_gemm", "compute_alu", "store", "memory_engine",
                 "control_registers"):
        assert f"\n  {unit} " in text
    data = json.loads(out.read_text())
    assert data["kind"] == "synth" and data["totals"]["logic_cells"] > 10_000
    assert {m["memory"] for m in data["memories_as_flops"]} == {
        "vta_top.core.run.fetch/fetch_buf", "vta_top.core.run.store.queue/storage"}
