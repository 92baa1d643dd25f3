"""The memory plan: memories found in the Amaranth hierarchy, mapped as memory_libmap maps
them (checked against a real synth_ecp5 run in test_flow.py), and tiny's plan."""

import time

import pytest

from avta.isa.config import load_config
from avta.synth.fpga.devices import DEVICES, device
from avta.synth.fpga.plan import plan_design, plan_memories



def test_every_memory_of_a_small_design_is_found_and_mapped(known_memories):
    design, KNOWN = known_memories
    plan = {m.path: m for m in plan_memories(design, top="top")}
    assert set(plan) == {f"top.{name}.mem" for name in KNOWN}
    for name, (_args, kind, bram, lutram) in KNOWN.items():
        m = plan[f"top.{name}.mem"]
        assert (m.kind, m.dp16kd, m.lutram) == (kind, bram, lutram), name
    two_writes = plan["top.ff_2w1r.mem"]
    assert (two_writes.write_ports, two_writes.read_sync, two_writes.ffs) == (2, 1, 512)
    assert "2 write ports" in two_writes.why
    replicated = plan["top.bram_1w2r.mem"]
    assert (replicated.copies, replicated.read_sync) == (2, 2)
    assert plan["top.lutram_async.mem"].read_async == 1


@pytest.mark.parametrize("depth,width,blocks", [
    (512, 36, 1), (1024, 18, 1), (2048, 9, 1), (1024, 36, 2), (256, 128, 4), (4096, 8, 2),
])
def test_block_ram_tiling_takes_the_mode_with_fewest_blocks(depth, width, blocks, memory_unit):
    (m,) = plan_memories(memory_unit(depth, width), top="top")
    assert (m.kind, m.dp16kd) == ("bram", blocks)


def test_tiny_plan_is_elaboration_only_and_fast():
    start = time.monotonic()
    plan = plan_design(load_config("tiny"), device("ecp5-25k"))
    assert time.monotonic() - start < 5
    by = {m.path: m for m in plan.memories}
    for pad in ("uop", "inp", "wgt", "acc", "out"):
        assert f"vta_top.core.{pad}_mem" in by or any(
            p.startswith(f"vta_top.core.{pad}") for p in by), pad
    # Whatever the RTL has: a scratchpad with more than one write port cannot be a block RAM.
    for m in plan.memories:
        if m.write_ports > 2 or (m.write_ports == 2 and m.kind != "bram"):
            assert m.kind == "ff"
    assert plan.needs["mult18"] == 1 * 4 * 4 + 1 * 4
    text = "\n".join(plan.table())
    assert "verdict:" in text and "vta_top.core.run.fetch.fetch_buf" in text


def test_the_verdict_names_the_resource_and_the_excess():
    plan = plan_design(load_config("tiny"), DEVICES["ecp5-25k"])
    plan.needs["dp16kd"] = 60
    assert plan.verdict()["dp16kd"] == (60, 56)
    assert "DP16KD block RAMs 60 of 56 (+4)" in "\n".join(plan.table())
    assert plan.to_dict()["over"]["dp16kd"] == {"needed": 60, "available": 56}


@pytest.mark.parametrize("scale", [1, 2])
def test_scl_lanes_add_their_multipliers_to_the_plan(tiny_cfg, scale):
    from avta.synth.fpga.plan import SCALE_LANE_MULT18, estimate_multipliers
    lanes = tiny_cfg.batch * tiny_cfg.block_out
    assert estimate_multipliers(tiny_cfg.replace(alu_scale=scale)) \
        == estimate_multipliers(tiny_cfg) + SCALE_LANE_MULT18[scale] * lanes
