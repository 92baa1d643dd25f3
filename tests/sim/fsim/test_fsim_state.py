"""The scratchpads' float32 copies that GEMM multiplies (sim/fsim/state.py): kept true across
LOADs by updating the rows written, not rebuilt from the whole scratchpad after each LOAD (a
layer's GEMMs read them between hundreds of small LOADs)."""

import numpy as np
import pytest

from avta.sim.fsim.state import Scratchpads


def _fresh(pads, name):
    return getattr(pads, name).astype(np.float32)


@pytest.mark.parametrize("name", ["inp", "wgt"])
@pytest.mark.parametrize("rows", [np.array([0, 5, 3]), slice(2, 6), slice(None)])
def test_float_copy_follows_row_writes(default_cfg, name, rows):
    pads = Scratchpads(default_cfg)
    rng = np.random.default_rng(1)
    raw = pads.raw(name)
    pads.write_rows(name, slice(None), rng.integers(0, 256, raw.shape, dtype=np.uint8))
    cached = pads.as_float(name)
    count = len(range(*rows.indices(raw.shape[0]))) if isinstance(rows, slice) else rows.size
    pads.write_rows(name, rows, rng.integers(0, 256, (count, raw.shape[1]), dtype=np.uint8))
    assert pads.as_float(name) is cached               # updated in place, not rebuilt
    np.testing.assert_array_equal(cached, _fresh(pads, name))


def test_memo_lasts_until_a_write_to_what_it_depends_on(default_cfg):
    """What GEMM derives from the micro-ops and weights (its matrix form, its weight matrix) is
    computed once between the LOADs that change them."""
    pads = Scratchpads(default_cfg)
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert pads.memo(("form", 0, 9), ("uop",), compute) == 1
    assert pads.memo(("form", 0, 9), ("uop",), compute) == 1
    assert pads.memo(("weights", 0, 9), ("uop", "wgt"), compute) == 2
    pads.write_rows("inp", slice(0, 1), np.zeros((1, pads.raw("inp").shape[1]), np.uint8))
    assert pads.memo(("weights", 0, 9), ("uop", "wgt"), compute) == 2      # INP: no matter
    pads.write_rows("wgt", slice(0, 1), np.zeros((1, pads.raw("wgt").shape[1]), np.uint8))
    assert pads.memo(("form", 0, 9), ("uop",), compute) == 1
    assert pads.memo(("weights", 0, 9), ("uop", "wgt"), compute) == 3
    pads.write_rows("uop", slice(0, 1), np.zeros((1, pads.raw("uop").shape[1]), np.uint8))
    assert pads.memo(("form", 0, 9), ("uop",), compute) == 4
