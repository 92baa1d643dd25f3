"""The control path's proofs (docs/formal.md): the AXI4-Lite control registers, fetch and decode,
stage control's error propagation. The planted protocol faults of these blocks are checked by
``test_each_protocol_fault_fails_its_property`` in test_formal.py (it runs every fault)."""

import pytest

from avta.formal.blocks import find_check
from avta.formal.runner import run_check
from avta.isa.config import load_config

TINY = load_config("tiny")


def _run(block, name, tmp_path, cfg=TINY, faults=(), **kw):
    check = find_check(block, name, cfg, frozenset(faults))
    return run_check(check, tmp_path / f"{block}-{name}", timeout=300, **kw)


@pytest.mark.parametrize("name", ["write", "read", "regs"])
def test_control_registers_proven_with_every_cover(tmp_path, name):
    result = _run("vcr", name, tmp_path)
    assert result.status == "proven", result.message
    assert result.covers_total >= 2 and result.covers_reached == result.covers_total


def test_launch_while_busy_fails_the_register_property_at_the_launch(tmp_path):
    # The launch pulse is the promise that breaks, in the cycle after the CTRL write completes.
    result = _run("vcr", "regs", tmp_path, faults={"vcr-launch-busy"})
    assert result.status == "failed"
    assert "launch" in result.message and result.cycle == 2
