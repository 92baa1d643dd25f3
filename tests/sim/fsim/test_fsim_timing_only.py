"""fsim's timing-only mode (``Fsim(timing_only=True)``): the fuzzer's random programs, planted
errors and wrapping indices among them, end alike with the same cycles, counters and activity as
on the bit-exact model, and DRAM is left untouched. (Every operator and network test holds the
same through tests/runtime/conftest.py's ``device``.)"""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.sim.fsim import Fsim
from avta.sim.fuzz.program import random_program

FIELDS = ("status", "cycles", "counters", "error_code", "error_insn")


def _run(prog, *, timing_only, activity=False):
    sim = Fsim(prog.cfg, strict=prog.strict, timing_only=timing_only)
    dram = np.frombuffer(prog.dram(), dtype=np.uint8).copy()
    before = dram.copy()
    if activity:
        result, act = sim.run_activity(dram, prog.insn_addr, prog.insn_count, bases=prog.bases)
    else:
        result, act = sim.run(dram, prog.insn_addr, prog.insn_count, bases=prog.bases), None
    return result, act, not np.array_equal(dram, before)


@pytest.mark.parametrize("config", ["tiny", "tight", "default", "big_acc"])
@pytest.mark.parametrize("seed", range(12))
def test_random_programs_give_the_same_results(config, seed):
    prog = random_program(load_config(config), seed)
    exact, _, wrote = _run(prog, timing_only=False)
    timed, _, timed_wrote = _run(prog, timing_only=True)
    assert [getattr(timed, f) for f in FIELDS] == [getattr(exact, f) for f in FIELDS]
    assert not timed_wrote
    assert wrote or exact.status != "ok" or not prog.out_nbytes    # the exact run did store


@pytest.mark.parametrize("seed", range(4))
def test_the_activity_is_the_same(seed):
    prog = random_program(load_config("tiny"), seed)
    (exact, a, _), (timed, b, _) = (_run(prog, timing_only=t, activity=True) for t in (0, 1))
    assert timed.cycles == exact.cycles
    assert (a.bin_cycles, a.cycles, a.estimated) == (b.bin_cycles, b.cycles, b.estimated)
    assert a.lanes.keys() == b.lanes.keys()
    for lane, states in a.lanes.items():
        assert states.keys() == b.lanes[lane].keys()
        for state, counts in states.items():
            np.testing.assert_array_equal(counts, b.lanes[lane][state], err_msg=f"{lane} {state}")
    np.testing.assert_array_equal(a.insn_start, b.insn_start)


def test_a_timing_only_model_cannot_be_traced():
    with pytest.raises(ValueError, match="no writes to trace"):
        Fsim(load_config("tiny"), timing_only=True, trace=lambda event: None)
