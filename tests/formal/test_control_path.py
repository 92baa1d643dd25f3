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
    # The proof's depth (10) reaches the duplicate at cycle 7 (the ring's read register, then
    # the dispatch register): a counterexample, not "bounded".
    result = _run("fetch", "order", tmp_path, faults={FaultName.FETCH_DUP_STORE})
    assert result.status == "failed" and result.cycle == 7


#: The bounded checks (block, check, depth, covers): fetch's dispatch; an error stops every stage
#: and raises the error bit (about a minute on tiny: the whole core's control with models of the
#: three units); the control protocol over relaunches (a launch clears FINISH and ERROR, both
#: covered; busy follows and ends with exactly one).
BOUNDED = [("fetch", "dispatch", 11, 8), ("stage_control", "halt", 32, 11),
           ("stage_control", "ctrl", 40, 5)]


@pytest.mark.slow
@pytest.mark.parametrize("block, name, depth, covers", BOUNDED,
                         ids=[f"{b}.{n}" for b, n, _, _ in BOUNDED])
def test_bounded_checks_hold_with_every_cover(tmp_path, block, name, depth, covers):
    result = _run(block, name, tmp_path, timeout=900)
    assert result.status == "bounded" and result.depth == depth, result.message
    assert result.covers_reached == result.covers_total == covers


@pytest.mark.slow
def test_the_error_bound_is_tight(tmp_path, monkeypatch):
    # One cycle less than BOUND fails: the bound is the smallest that holds.
    from avta.formal.blocks import stage_control
    monkeypatch.setattr(stage_control, "BOUND", stage_control.BOUND - 1)
    result = _run("stage_control", "halt", tmp_path, timeout=900)
    assert result.status == "failed"
    assert "since != BOUND" in result.message
