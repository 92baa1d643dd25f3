"""The parts of avta.synth that need no Yosys run: units, cell areas, memories as macros, the
script, the logic model's terms, the model report and the fit."""

import dataclasses

import pytest

from avta.floorplan.tech import load_technology
from avta.floorplan.vta import LogicModel, build_floorplan, plan_inventory
from avta.floorplan.vta.logic import TERMS, quantities
from avta.synth.calibrate import CALIBRATION, HELD_OUT, fit, point_config
from avta.synth.cells import UnknownCell, cell_area
from avta.synth.memories import plan_memories, rtlil_memories
from avta.isa.memories import scratchpad
from avta.synth.report import model_report
from avta.synth.units import UNITS, unit_of
from avta.synth.yosys import design_rtlil, yosys_script

TECH = load_technology("generic45")


@pytest.fixture(scope="module")
def tiny_rtlil(tiny_cfg_module):
    return design_rtlil(tiny_cfg_module)


@pytest.fixture(scope="module")
def tiny_cfg_module():
    from avta.isa.config import load_config
    return load_config("tiny")


@pytest.mark.parametrize("module,unit", [
    ("vta_top", "glue"), ("vta_top.core.run", "glue"),
    ("vta_top.core.run.compute.gemm.loop", "compute_gemm"),
    ("vta_top.core.run.compute.alu.lanes", "compute_alu"),
    ("vta_top.core.run.compute.loader.pad", "compute_other"),
    ("vta_top.core.run.compute", "compute_other"), ("vta_top.core.run.cp_ctrl", "compute_other"),
    ("vta_top.core.run.fetch.decode", "fetch"), ("vta_top.core.run.ld_ctrl", "load"),
    ("vta_top.core.run.store.queue", "store"), ("vta_top.core.run.st_insn_q.fifo", "queues"),
    ("vta_top.core.run.tok_c2s", "queues"), ("\\vta_top.vme.reader", "memory_engine"),
    ("vta_top.core.acc_mem", "scratchpad_ports"), ("vta_top.core.uop_mem", "scratchpad_ports"),
    ("vta_top.vcr", "control_registers"),
])
def test_modules_belong_to_their_unit(module, unit):
    assert unit_of(module) == unit


def test_every_module_of_the_design_has_a_unit_and_every_unit_a_module(tiny_rtlil):
    modules = [line.split()[1] for line in tiny_rtlil.splitlines() if line.startswith("module ")]
    assert len(modules) > 30
    assert {unit_of(m) for m in modules} == set(UNITS)
    with pytest.raises(ValueError, match="not below vta_top"):
        unit_of("other.core")


def test_cell_areas_come_from_the_technology():
    areas = TECH.logic_cells
    assert cell_area("$_NAND_", areas) == pytest.approx(0.798)
    assert cell_area("$_DFF_P_", areas) == pytest.approx(4.522)
    assert cell_area("$_DFFE_PP_", areas) == pytest.approx(4.522 + 1.862)
    assert cell_area("$_SDFF_PP0_", areas) == pytest.approx(4.522 + 1.064)
    assert cell_area("$_SDFFE_PP0P_", areas) == pytest.approx(4.522 + 1.862 + 1.064)
    assert cell_area("$_SDFFCE_PN1N_", areas) == pytest.approx(4.522 + 1.862 + 1.064)
    assert cell_area("$_DFF_PP0_", areas) == pytest.approx(4.522 + 0.798)
    with pytest.raises(UnknownCell, match=r"\$_FOO_"):
        cell_area("$_FOO_", areas)


def test_scratchpads_are_the_floorplans_macros_and_small_memories_flops(tiny_rtlil,
                                                                        tiny_cfg_module):
    cfg = tiny_cfg_module
    declared = rtlil_memories(tiny_rtlil)
    memories = {m.path: m for m in plan_memories(tiny_rtlil, cfg, TECH)}
    # UOP 2 interleaved banks x 2 copies, INP, WGT, ACC and OUT 2 banks each, three
    # instruction queues, fetch's ring and the store queue.
    assert len(memories) == len(declared) == 15
    inventory = plan_inventory(cfg, TECH)
    for pad in ("uop", "inp", "wgt", "acc", "out"):
        # Each bank and copy of the scratchpad is its share of the floorplan's macros.
        mine = [m for path, m in memories.items() if path.startswith(f"vta_top.core.{pad}_mem/")]
        info, plan = scratchpad(cfg, pad), inventory[pad]
        assert len(mine) == info.banks * info.copies
        for m in mine:
            assert (m.scratchpad, m.macro) == (pad, plan.master.name)
        assert sum(m.count for m in mine) == plan.count
        assert sum(m.macro_um2 for m in mine) == pytest.approx(
            plan.count * TECH.um(plan.master.width) * TECH.um(plan.master.height))
    # 510 x 160 (a legal SRAM): of a queue's 512 entries, the FIFO's read register holds one
    # and the head register another (hw/core/queue.py).
    for queue in ("ld", "cp", "st"):
        m = memories[f"vta_top.core.run.{queue}_insn_q.fifo/storage"]
        assert m.scratchpad is None and m.macro == "sram45_510x160" and m.macro_um2 > 0
    # The fetch ring (32 x 128) has no legal macro (too wide for its depth); the store
    # queue is 4 deep: both are flip-flops.
    assert memories["vta_top.core.run.fetch/fetch_buf"].macro is None
    assert memories["vta_top.core.run.store.queue/storage"].macro is None


def test_the_script_keeps_exactly_the_macros():
    script = yosys_script([("vta_top.core", "inp_mem"), ("vta_top.core.run.x", "storage")])
    assert "setattr -set avta_macro 1 vta_top.core/inp_mem\n" in script
    assert "setattr -set avta_macro 1 vta_top.core.run.x/storage\n" in script
    assert "memory_map t:$mem_v2 a:avta_macro %d\n" in script
    assert "-flatten" not in script and "stat -json" in script


def test_the_logic_model_sums_its_terms(tiny_cfg_module, default_cfg):
    model = LogicModel()
    for cfg in (tiny_cfg_module, default_cfg):
        q = quantities(cfg)
        for block, terms in TERMS.items():
            assert model.block(cfg, block) == sum(getattr(model, f) * q[k] for f, k in terms)
    assert quantities(default_cfg) == {"one": 1, "macs": 256, "lanes": 16, "scale_lanes": 0,
                                       "wide_scale_lanes": 0, "axi_bits": 64}
    # SCL's multipliers, one per lane, only where ALU_SCALE is 1
    scaled = default_cfg.replace(alu_scale=1)
    assert quantities(scaled)["scale_lanes"] == 16
    assert model.alu(scaled) - model.alu(default_cfg) == 16 * model.ge_per_scale_lane
    # ALU_SCALE 2: a 32×24 multiplier per lane instead
    wide = default_cfg.replace(alu_scale=2)
    assert quantities(wide)["scale_lanes"] == 0 and quantities(wide)["wide_scale_lanes"] == 16
    assert model.alu(wide) - model.alu(default_cfg) == 16 * model.ge_per_wide_scale_lane
    assert model.ge_per_wide_scale_lane > model.ge_per_scale_lane
    with pytest.raises(ValueError, match="ge_per_mac = -1"):
        LogicModel(ge_per_mac=-1)


def test_the_model_report_adds_up(default_cfg):
    report = model_report(default_cfg, TECH)
    plan = build_floorplan(default_cfg, "tiled", technology=TECH).report()
    t = report.totals
    assert t["die_mm2"] == pytest.approx(plan["die_area_mm2"])
    assert t["sram_mm2"] + t["logic_mm2"] + t["other_mm2"] == pytest.approx(t["die_mm2"])
    assert sum(m["area_um2"] for m in report.macros) / 1e6 == pytest.approx(t["sram_mm2"])
    assert t["logic_mm2"] == pytest.approx(plan["logic_area_mm2"], rel=1e-3)
    assert [m["memory"] for m in report.macros] == ["uop", "inp", "wgt", "acc", "out"]
    assert report.table()[0].startswith("default: area (floorplan model)")


def test_the_fit_recovers_a_known_model():
    truth = LogicModel(ge_gemm_fixed=5000, ge_per_mac=700, ge_gemm_per_lane=250,
                       ge_alu_fixed=1200, ge_per_alu_lane=4100, ge_control=52000,
                       ge_control_per_lane=900, ge_per_axi_bit=75)
    points = [point_config(*p) for p in CALIBRATION + HELD_OUT]
    samples = [(cfg, {b: truth.block(cfg, b) for b in TERMS}) for cfg in points]
    assert fit(samples) == truth


def test_the_fit_drops_a_term_that_would_be_negative():
    points = [point_config(*p) for p in CALIBRATION]
    # Control shrinking with lanes cannot be fitted with non-negative terms: that term goes.
    samples = [(cfg, {"gemm": 1000 * quantities(cfg)["macs"], "alu": 5000,
                      "ctrl": 90_000 - 500 * quantities(cfg)["lanes"]}) for cfg in points]
    model = fit(samples)
    assert model.ge_control_per_lane == 0 and model.ge_per_mac == 1000
    assert dataclasses.asdict(model)["ge_alu_fixed"] == 5000
