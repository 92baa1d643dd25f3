"""The control path's proofs (docs/formal.md): the AXI4-Lite control registers, fetch and decode,
stage control's error propagation. The planted protocol faults of these blocks (vcr-*,
decode-wrong-queue, fetch-dup-store, stage-ignore-halt) are checked by
``test_each_protocol_fault_fails_its_property`` in test_formal.py, which runs every fault."""

import pytest

from avta.formal.blocks import find_check
from avta.formal.runner import run_check
from avta.hw.core.faults import FaultName
from avta.isa.config import load_config

TINY = load_config("tiny")


def _run(block, name, tmp_path, cfg=TINY, faults=(), **kw):
    check = find_check(block, name, cfg, frozenset(faults))
    kw.setdefault("timeout", 300)
    return run_check(check, tmp_path / f"{block}-{name}", **kw)


@pytest.mark.parametrize("name", ["write", "read", "regs"])
def test_control_registers_proven_with_every_cover(tmp_path, name):
    result = _run("vcr", name, tmp_path)
    assert result.status == "proven", result.message
    assert result.covers_total >= 2 and result.covers_reached == result.covers_total


def test_decode_equals_the_isa_rules_for_every_instruction(tmp_path):
    result = _run("fetch", "decode", tmp_path)
    assert result.status == "proven", result.message
    assert result.covers_total == 10 and result.covers_reached == 10     # 7 codes, 3 stages


def test_fetch_order_proven_by_induction(tmp_path):
    result = _run("fetch", "order", tmp_path)
    assert result.status == "proven", result.message
    assert result.covers_reached == result.covers_total == 3


def test_duplicated_store_fails_the_order_in_the_base_case(tmp_path):
    # The proof's depth (10) reaches the duplicate at cycle 6: a counterexample, not "bounded".
    result = _run("fetch", "order", tmp_path, faults={FaultName.FETCH_DUP_STORE})
    assert result.status == "failed" and result.cycle == 6


@pytest.mark.slow
def test_fetch_dispatch_holds_with_every_cover(tmp_path):
    result = _run("fetch", "dispatch", tmp_path, timeout=900)
    assert result.status == "bounded" and result.depth == 11, result.message
    assert result.covers_reached == result.covers_total == 8


@pytest.mark.slow
def test_an_error_stops_every_stage_and_raises_the_error_bit(tmp_path):
    # About a minute on tiny: the whole core's control with models of the three units.
    result = _run("stage_control", "halt", tmp_path, timeout=900)
    assert result.status == "bounded" and result.depth == 32, result.message
    assert result.covers_reached == result.covers_total == 11


@pytest.mark.slow
def test_ctrl_protocol_over_relaunches(tmp_path):
    # A launch clears FINISH and ERROR (both covered), busy follows and ends with exactly one.
    result = _run("stage_control", "ctrl", tmp_path, timeout=900)
    assert result.status == "bounded" and result.depth == 40, result.message
    assert result.covers_reached == result.covers_total == 5


@pytest.mark.slow
def test_the_error_bound_is_tight(tmp_path, monkeypatch):
    # One cycle less than BOUND fails: the bound is the smallest that holds.
    from avta.formal.blocks import stage_control
    monkeypatch.setattr(stage_control, "BOUND", stage_control.BOUND - 1)
    result = _run("stage_control", "halt", tmp_path, timeout=900)
    assert result.status == "failed"
    assert "since != BOUND" in result.message
