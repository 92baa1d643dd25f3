"""avta fpga's cache: an entry that is not a whole result of its key (truncated, a list, a
field of another type) is run again and overwritten, never a traceback. A GEMM lane of two
products: synthesis, place and route in seconds."""

import json

import pytest

from avta.synth.fpga import DEVICES, run_design
from avta.synth.fpga.flow import read_cached

DEV = DEVICES["ecp5-25k"]


@pytest.mark.parametrize("broken", ['{"key": "', "[]", "seed"])
def test_a_corrupt_cache_entry_is_run_again(gemm_lane, tmp_path, monkeypatch, broken):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    first = run_design(gemm_lane(2), "lane", DEV)
    (entry,) = (tmp_path / "fpga").glob("*.json")
    good = json.loads(entry.read_text())
    entry.write_text(json.dumps(good | {"seed": "one"}) if broken == "seed" else broken)
    again = run_design(gemm_lane(2), "lane", DEV)
    assert not again.run["cached"] and again.fmax_mhz == first.fmax_mhz
    assert read_cached(entry, first.run["key"]) is not None
