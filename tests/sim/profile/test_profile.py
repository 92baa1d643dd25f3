"""avta.sim.profile: the timeline's data, the charts' files and the self-contained report."""

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from avta.isa.config import load_config
from avta.runtime.device import Device
from avta.runtime.net import random_input
from avta.runtime.net.executor import dram_bytes
from avta.sim.activity import LANES
from avta.sim.fsim.backend import FsimBackend
from avta.sim.profile import layer_rows, profile_network
from avta.sim.profile.charts import DPI
from avta.sim.profile.report import write_profile
from avta.sim.targets import load_network


@pytest.fixture(scope="module")
def profile():
    cfg = load_config("default")
    graph = load_network("resnet18", 32, 0)
    device = Device(cfg, FsimBackend(cfg, dram_size=dram_bytes(cfg, graph), activity=True))
    return profile_network(device, graph, random_input(graph, seed=0), target="fsim")


@pytest.fixture(scope="module")
def written(profile, tmp_path_factory):
    return write_profile(profile, tmp_path_factory.mktemp("profile"))


def test_bins_add_up_to_the_run(profile):
    timeline, run = profile.timeline, profile.run
    total = sum(layer.cycles for layer in run.layers)
    assert timeline.cycles == total == run.total["cycles"] > 0
    assert timeline.estimated
    lengths = timeline.bin_lengths()
    assert lengths.sum() == total
    for lane, states in LANES.items():
        per_bin = sum(timeline.lanes[lane][s] for s in states)
        assert np.array_equal(per_bin, lengths), lane
        assert sum(timeline.totals()[lane].values()) == total


def test_boundaries_at_cumulative_layer_cycles(profile):
    device = [layer for layer in profile.run.layers if layer.on == "device"]
    starts = np.concatenate(([0], np.cumsum([layer.cycles for layer in device])[:-1]))
    assert [b[0] for b in profile.timeline.boundaries] == starts.tolist()
    assert [b[1] for b in profile.timeline.boundaries] == [layer.cycles for layer in device]
    assert [b[2] for b in profile.timeline.boundaries] == [layer.name for layer in device]
    assert set(profile.timeline.edges[[0, -1]]) | {int(s) for s in starts} <= \
        set(profile.timeline.edges.tolist())


def test_resampled_keeps_totals(profile):
    edges, lanes = profile.timeline.resampled(100)
    assert len(edges) == 101 and edges[-1] == profile.timeline.cycles
    for lane, states in LANES.items():
        for s in states:
            assert lanes[lane][s].sum() == pytest.approx(profile.timeline.totals()[lane][s])


def test_rows(profile):
    rows = layer_rows(profile)
    assert [r["name"] for r in rows] == [layer.name for layer in profile.run.layers]
    for row in rows:
        if row["on"] != "device":
            continue
        for lane in LANES:
            assert row[f"{lane}_busy"] + row[f"{lane}_wait"] + row[f"{lane}_idle"] == \
                row["cycles"]
        assert row["intensity"] == pytest.approx(
            row["macs"] / (row["bytes_loaded"] + row["bytes_stored"]))
        assert row["macs_per_cycle"] == pytest.approx(row["macs"] / row["cycles"])


@pytest.mark.parametrize("kind, size", [("timeline", (1200, 500)), ("roofline", (800, 600))])
def test_charts_are_images(written, kind, size):
    with Image.open(written[f"{kind}_png"]) as image:
        image.verify()
    with Image.open(written[f"{kind}_png"]) as image:
        assert image.size == size
    root = ET.parse(written[f"{kind}_svg"]).getroot()
    assert root.tag.endswith("svg")
    width, height = (float(re.match(r"[\d.]+", root.get(a)).group()) for a in ("width", "height"))
    # matplotlib writes SVG sizes in points (72 per inch).
    assert (round(width / 72 * DPI), round(height / 72 * DPI)) == size


def test_table_files(written, profile):
    record = json.loads(written["json"].read_text())
    assert record["total"]["cycles"] == profile.timeline.cycles
    assert len(record["layers"]) == len(profile.run.layers)
    lines = written["csv"].read_text().splitlines()
    assert len(lines) == len(profile.run.layers) + 1 and "load_busy" in lines[0]


def test_html_is_self_contained(written):
    page = written["html"].read_text()
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', page)
    assert len(re.findall(r"<img ", page)) == 2
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "http" not in page.replace("http-equiv", "")
    assert "<link" not in page and "<script" not in page and "url(" not in page


def _small_network(cfg, blocks=1, size=4):
    """A conv (``blocks`` channel blocks in and out, ``size``×``size``) and a max pool."""
    from avta.runtime.net import GraphBuilder
    from avta.runtime.ops.requant import Requant
    rng = np.random.default_rng(1)
    b = GraphBuilder("small")
    x = b.input("x", (1, blocks * cfg.block_in, size, size))
    y = b.conv2d("conv", x, rng.integers(-9, 9, (blocks * cfg.block_out, blocks * cfg.block_in,
                                                 3, 3), dtype=np.int8), pad=1,
                 requant=Requant(shift=3, clip=(0, 127)))
    y = b.max_pool("pool", y, k=2, stride=2)
    return b.build([y])


@pytest.mark.tsim
def test_tsim_on_tiny(tmp_path):
    """tsim's exact activity, layer by layer, on a two-layer network on ``tiny``."""
    from avta.sim.targets import make_device
    cfg = load_config("tiny")
    graph = _small_network(cfg)
    device = make_device(cfg, "tsim", dram_bytes(cfg, graph), activity=True)
    result = profile_network(device, graph, random_input(graph, seed=0), target="tsim")
    device_layers = [layer for layer in result.run.layers if layer.on == "device"]
    assert device_layers and not result.timeline.estimated
    assert result.timeline.cycles == sum(layer.cycles for layer in device_layers)
    for lane, states in LANES.items():
        assert np.array_equal(sum(result.timeline.lanes[lane][s] for s in states),
                              result.timeline.bin_lengths())
    paths = write_profile(result, tmp_path)
    assert "fsim estimate" not in paths["html"].read_text()


@pytest.mark.tsim
def test_fsim_and_tsim_agree_per_layer(tmp_path):
    """fsim's timeline is within the stated tolerances of tsim's, layer by layer
    (avta.sim.profile.compare; docs/cli.md, avta profile-diff, has the ResNet-18 figures)."""
    from avta.sim.profile.compare import compare_profiles, load_record
    from avta.sim.targets import make_device
    cfg = load_config("tiny")
    graph = _small_network(cfg, blocks=2, size=8)
    for target in ("fsim", "tsim"):
        device = make_device(cfg, target, dram_bytes(cfg, graph), activity=True)
        result = profile_network(device, graph, random_input(graph, seed=0), target=target)
        write_profile(result, tmp_path / target)
    comparison = compare_profiles(load_record(tmp_path / "fsim"), load_record(tmp_path / "tsim"))
    assert [d.name for d in comparison.layers] == ["conv", "pool"]
    assert comparison.outside() == [], [(d.name, d.cycle_error, d.worst_share)
                                        for d in comparison.layers]
