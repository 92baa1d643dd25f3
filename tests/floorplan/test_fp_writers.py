"""Outputs parse and agree with the floorplan: DEF (by the def_reader fixture), Hammer YAML,
SVG as XML, PNG, JSON and the OpenROAD Tcl script."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
import yaml
from PIL import Image

from avta.floorplan.cli import write_vta_floorplan
from avta.floorplan.geometry import Orientation
from avta.floorplan.vta import build_floorplan
from avta.floorplan.writers import SUFFIXES, floorplan_to_def


@pytest.fixture(scope="module", params=["functional", "tiled"])
def written(request, tmp_path_factory):
    from avta.isa.config import load_config
    plan = build_floorplan(load_config("default"), request.param)
    directory = tmp_path_factory.mktemp(request.param)
    violations, paths = write_vta_floorplan(plan, directory)
    return plan, violations, paths


#: default's macros: UOP 2 copies x 4 word ranges, INP 1, WGT 8 columns, ACC 2 columns x 2 banks,
#: OUT 2 banks (docs/architecture.md, scratchpad memories).
DEFAULT_MACROS = 23


def test_default_has_the_macros_counted_here():
    from avta.isa.config import load_config
    assert build_floorplan(load_config("default"), "tiled").inventory.macro_count == DEFAULT_MACROS


def test_every_output_is_written_with_its_name(written):
    plan, violations, paths = written
    assert violations == []
    assert sorted(paths) == sorted(SUFFIXES)
    for suffix, path in paths.items():
        assert path.name == f"default-{plan.style}.{suffix}" and path.stat().st_size > 0


def test_def_reads_back(written, def_reader):
    plan, _, paths = written
    fp = plan.floorplan
    data = def_reader.read(paths["def"].read_text())
    assert (data["design"], data["dbu_per_micron"], data["dividerchar"]) == \
        (fp.name, 2000, "/")
    die = fp.die_rect
    assert data["diearea"] == ((0, 0), (die.x1, die.y1))
    macros = {p.path: p for p in fp.macros()}
    assert len(data["components"]) == len(macros) == DEFAULT_MACROS
    for comp in data["components"]:
        p = macros[comp["name"]]
        assert comp["master"] == p.master.name and comp["status"] == "PLACED"
        assert comp["location"] == (p.rect.x0, p.rect.y0)
        assert Orientation.parse(comp["orientation"]) is p.orientation
        assert comp["halo"] == (5600, 5600, 5600, 5600)
    core = fp.core_rect
    assert len(data["rows"]) == core.height // 2800
    assert data["rows"][1]["origin"] == (core.x0, core.y0 + 2800)
    assert data["rows"][1]["orientation"] == "FS"
    fenced = {p.path.replace("/", "_"): p for p in fp.walk() if p.region}
    assert {r["name"] for r in data["regions"]} == set(fenced)
    for region in data["regions"]:
        rect = fenced[region["name"]].rect
        assert region["lower"] == (rect.x0, rect.y0) and region["type"] == "FENCE"
    for group in data["groups"]:
        assert group["region"] == group["name"]
        assert group["patterns"] == [fenced[group["name"]].path + "/*"]


def test_the_def_reader_is_strict(def_reader):
    with pytest.raises(def_reader.SyntaxError, match="declares 2 entries and holds 1"):
        def_reader.read("COMPONENTS 2 ;\n- a m + PLACED ( 0 0 ) N ;\nEND COMPONENTS\nEND DESIGN\n")
    with pytest.raises(def_reader.SyntaxError, match="no END DESIGN"):
        def_reader.read("DESIGN x ;\n")


def test_hammer_yaml_parses_and_matches(written):
    plan, _, paths = written
    fp = plan.floorplan
    data = yaml.safe_load(paths["yaml"].read_text())
    entries = data["vlsi.inputs.placement_constraints"]
    top = entries[0]
    assert top["type"] == "toplevel" and top["path"] == fp.name
    assert top["width"] == pytest.approx(fp.um(fp.die_rect.width))
    assert top["margins"]["left"] == pytest.approx(fp.um(fp.core_margin))
    hard = {e["path"]: e for e in entries if e["type"] == "hardmacro"}
    assert len(hard) == DEFAULT_MACROS
    for p in fp.macros():
        e = hard[f"{fp.name}/{p.path}"]
        assert (e["x"], e["y"]) == (pytest.approx(fp.um(p.rect.x0)), pytest.approx(fp.um(p.rect.y0)))
        assert e["orientation"] == p.orientation.hammer_name and e["master"] == p.master.name
    assert all(e["type"] in ("toplevel", "placement", "hardmacro") for e in entries)
    for e in entries:
        assert {"path", "type", "x", "y", "width", "height"} <= set(e)


def test_svg_is_xml_with_every_macro(written):
    plan, _, paths = written
    root = ET.parse(paths["svg"]).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    ns = {"s": "http://www.w3.org/2000/svg"}
    rects = root.findall("s:rect", ns)
    macro_fill = [r for r in rects if r.get("stroke") == "#1f1f1f"]
    assert len(macro_fill) == DEFAULT_MACROS
    texts = [t.text for t in root.findall("s:text", ns)]
    assert f"VTA {plan.name}" in texts
    assert any("wire estimate" in t for t in texts)


def test_png_is_a_real_drawing(written):
    _, _, paths = written
    with Image.open(paths["png"]) as image:
        assert image.format == "PNG" and image.width >= 560 and image.height > 500
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 20      # macros, blocks, text: not a blank image


def test_json_holds_instances_report_and_buses(written):
    plan, _, paths = written
    data = json.loads(paths["json"].read_text())
    macros = [i for i in data["instances"] if i["kind"] == "macro"]
    assert len(macros) == DEFAULT_MACROS and data["dbu_per_micron"] == 2000
    assert data["report"]["wire_mm"] == pytest.approx(plan.wires.total_mm)
    assert data["violations"] == []
    assert sum(b["bits"] for b in data["buses"] if b["name"].startswith("wgt->gemm")) == \
        plan.cfg.wgt_tensor_bits


def test_tcl_places_every_macro(written):
    plan, _, paths = written
    fp = plan.floorplan
    text = paths["tcl"].read_text()
    placed = re.findall(r"^place_macro -macro_name \{(\S+)\} -location \{(\S+) (\S+)\} "
                        r"-orientation (R0|R180|MX|MY) -exact$", text, re.M)
    assert len(placed) == DEFAULT_MACROS
    for path, x, y, orient in placed:
        p = fp.find(path)
        assert (float(x), float(y)) == (fp.um(p.rect.x0), fp.um(p.rect.y0))
        assert Orientation.parse(orient) is p.orientation
    regions = re.findall(r"^avta_region (\S+) EXCLUSIVE (\d+) (\d+) (\d+) (\d+) \{(\S+)\}$",
                         text, re.M)
    assert len(regions) == len([p for p in fp.walk() if p.region])
    assert "initialize_floorplan -die_area" in text


def test_region_name_clashes_are_refused():
    from avta.floorplan.layout import Block, Floorplan
    die = Block("top", width=1000, height=1000)
    soft = Block("soft", width=10, height=10)
    outer = Block("a", width=100, height=100)
    outer.add("b", soft, x=0, y=0, region="fence")
    die.add("a", outer, x=0, y=0)
    die.add("a_b", soft, x=500, y=500, region="guide")
    with pytest.raises(ValueError, match="same DEF region name"):
        floorplan_to_def(Floorplan("f", die=die, dbu_per_micron=1000))
