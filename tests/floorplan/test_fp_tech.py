"""The technology description: the shipped generic45 and its SRAM shape model."""

import copy

import pytest
import yaml

from avta.floorplan.tech import (TECH_DIR, Technology, TechnologyError, load_technology,
                                 shipped_technologies)


@pytest.fixture(scope="module")
def tech():
    return load_technology("generic45")


@pytest.fixture
def data():
    with open(TECH_DIR / "generic45.yaml") as stream:
        return yaml.safe_load(stream)


def test_generic45_is_shipped_with_the_nangate45_grid(tech):
    assert "generic45" in shipped_technologies()
    assert tech.dbu_per_micron == 2000
    assert tech.grid == (380, 2800)                       # 0.19 um sites, 1.4 um rows
    assert tech.nand2_area == tech.dbu2(0.798)
    assert tech.core_margin % 380 == 0 and tech.core_margin % 2800 == 0


# The fakeram45 abstracts of OpenROAD-flow-scripts' nangate45 platform the model is fitted to.
FAKERAM45 = [(64, 32, 20.14, 61.6), (512, 64, 152.57, 113.4), (2048, 39, 206.91, 219.8)]


@pytest.mark.parametrize("words,bits,width,height", FAKERAM45)
def test_model_gives_the_fakeram45_areas_within_five_percent(tech, words, bits, width, height):
    shape = tech.sram_shape(words, bits)
    area = tech.um(shape.width) * tech.um(shape.height)
    assert area == pytest.approx(width * height, rel=0.05)


@pytest.mark.parametrize("words,bits", [(2048, 256), (1024, 32), (256, 128), (32, 64)])
def test_macros_are_on_the_grid_and_as_square_as_the_mux_allows(tech, words, bits):
    macro = tech.sram(words, bits)
    assert macro.width % tech.site_width == 0 and macro.height % tech.row_height == 0
    assert macro.properties["words"] == words and macro.properties["bits"] == bits
    chosen = tech.sram_shape(words, bits)
    for mux in (1, 2, 4, 8):
        if words % mux == 0 and words // mux >= 16:
            other = Technology(_with_mux(tech, [mux]))
            assert chosen.aspect <= other.sram_shape(words, bits).aspect + 1e-9


def _with_mux(tech, mux):
    with open(tech.source) as stream:
        data = yaml.safe_load(stream)
    data["sram"]["column_mux"] = mux
    return data


def test_same_size_gives_the_same_master(tech):
    assert tech.sram(1024, 256) is tech.sram(1024, 256)


@pytest.mark.parametrize("words,bits,reason", [
    (4096, 32, "deeper than the 2048-word limit"),
    (8, 32, "shallower than the 16-word minimum"),
    (1024, 512, "wider than the 256-bit limit"),
    (32, 256, "aspect 11.07 > 4"),
])
def test_illegal_macros_say_why(tech, words, bits, reason):
    assert reason in tech.sram_problem(words, bits)
    with pytest.raises(ValueError, match=f"no legal {words} x {bits} SRAM.*split"):
        tech.sram(words, bits)


@pytest.mark.parametrize("change,message", [
    (lambda d: d.pop("site"), "site: missing"),
    (lambda d: d.update(colour="red"), "colour: unknown key"),
    (lambda d: d["sram"].update(cell_width=-1.0), "sram.cell_width = -1.0: must be positive"),
    (lambda d: d["sram"].update(column_mux=[1, 3]), "column_mux = [1, 3]: must be a non-empty"),
    (lambda d: d["standard_cells"].update(target_utilization=1.5), "target_utilization = 1.5"),
    (lambda d: d["sram"].update(max_aspect=0.5), "max_aspect = 0.5"),
    (lambda d: d["sram"].update(name_format="ram_{depth}"), "name_format = 'ram_{depth}'"),
    (lambda d: d["spacing"].update(macro="wide"), "spacing.macro = 'wide': must be a float"),
])
def test_bad_descriptions_are_refused_with_the_value(data, change, message):
    broken = copy.deepcopy(data)
    change(broken)
    with pytest.raises(TechnologyError) as error:
        Technology(broken, source="broken.yaml")
    assert message in str(error.value)
    assert "broken.yaml" in str(error.value)


def test_every_problem_is_listed_at_once(data):
    data["sram"]["max_bits"] = 0
    data["dbu_per_micron"] = "many"
    with pytest.raises(TechnologyError) as error:
        Technology(data)
    assert len(error.value.problems) == 2


def test_load_by_path_and_unknown_names(tmp_path, data):
    path = tmp_path / "mine.yaml"
    data["name"] = "mine"
    path.write_text(yaml.safe_dump(data))
    assert load_technology(path).name == "mine"
    with pytest.raises(FileNotFoundError, match="generic45"):
        load_technology("nosuch")
    path.write_text("site: [unclosed")
    with pytest.raises(TechnologyError, match="not valid YAML"):
        load_technology(path)
