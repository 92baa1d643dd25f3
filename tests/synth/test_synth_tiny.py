"""A real synthesis of ``tiny`` with Yosys (about 2 minutes the first time, then cached in the
avta cache): memories kept as macros exactly as planned, cells in every unit, the report's sums,
the cache, and the calibrated logic model's error on it. Larger configurations are slow tests
(test_synth_slow.py)."""

import pytest

from avta.floorplan.tech import load_technology
from avta.floorplan.vta import LogicModel
from avta.synth import synth_report, synthesize
from avta.synth.memories import plan_memories
from avta.synth.yosys import design_rtlil

TECH = load_technology("generic45")


@pytest.fixture(scope="module")
def tiny(request):
    from avta.isa.config import load_config
    cfg = load_config("tiny")
    return cfg, synthesize(cfg, TECH)


def test_exactly_the_planned_memories_stay_macros(tiny):
    cfg, result = tiny
    planned = plan_memories(design_rtlil(cfg), cfg, TECH)
    kept = {module: cells["$mem_v2"] for module, cells in result.cells.items()
            if "$mem_v2" in cells}
    expected = {}
    for m in planned:
        if m.macro:
            expected[m.module] = expected.get(m.module, 0) + 1
    # A scratchpad's banks and copies (docs/architecture.md, scratchpad memories).
    assert kept == expected == {"vta_top.core.uop_mem": 4, "vta_top.core.inp_mem": 1,
                                "vta_top.core.wgt_mem": 1, "vta_top.core.acc_mem": 2,
                                "vta_top.core.out_mem": 2, "vta_top.core.run.ld_insn_q.fifo": 1,
                                "vta_top.core.run.cp_insn_q.fifo": 1,
                                "vta_top.core.run.st_insn_q.fifo": 1}


def test_every_unit_has_cells_and_the_sums_agree(tiny):
    cfg, result = tiny
    report = synth_report(cfg, TECH, result)
    units = {u["unit"]: u for u in report.logic}
    assert all(u["cells"] > 0 and u["area_um2"] > 0 for u in units.values()), units
    # 16 int8 MACs: far more than a handful of gates each; the fetch ring (32 x 128, no legal
    # SRAM) is flip-flops.
    assert units["compute_gemm"]["cells"] > 16 * 100
    assert units["fetch"]["flops"] >= 32 * 128
    total = sum(u["area_um2"] for u in units.values())
    assert report.totals["logic_mm2"] == pytest.approx(total / 1e6)
    assert sum(b["area_um2"] for b in report.blocks.values()) == pytest.approx(total)
    assert report.totals["logic_cells"] == sum(u["cells"] for u in units.values())
    assert len(report.macros) == 13 and sum(m["scratchpad"] for m in report.macros) == 10


def test_a_second_synthesis_is_read_from_the_cache(tiny):
    cfg, result = tiny
    again = synthesize(cfg, TECH)
    assert again.cached and again.key == result.key and again.cells == result.cells


def test_the_calibrated_model_is_close_to_synthesis(tiny):
    cfg, result = tiny
    report = synth_report(cfg, TECH, result, logic=LogicModel())
    synth = sum(b["area_um2"] for b in report.blocks.values())
    model = sum(b["model_um2"] for b in report.blocks.values())
    assert model == pytest.approx(synth, rel=0.10)
    for name, block in report.blocks.items():
        assert abs(block["error"]) < 0.25, (name, block)
