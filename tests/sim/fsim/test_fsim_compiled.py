"""fsim's compiled scheduler (sim/fsim/compiled.py) against the Python one, the reference: on
the fuzzer's random legal programs (wrapping indices, token bursts and corners among them) and on
every layer of ResNet-18 at 224, a timing-only run ends alike, with the same cycles and counters
(STALL_x, IDLE_x, ACC_WR, bytes and steps) and the same micro-ops left in the scratchpad."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.sim.fsim import Fsim
from avta.sim.fuzz.program import random_program

FIELDS = ("status", "cycles", "counters", "error_code", "error_insn", "detail")


def _run(prog, *, compiled):
    sim = Fsim(prog.cfg, strict=prog.strict, timing_only=True)
    sim.compiled = compiled
    dram = np.frombuffer(prog.dram(), dtype=np.uint8).copy()
    result = sim.run(dram, prog.insn_addr, prog.insn_count, bases=prog.bases)
    return result, sim.sram("uop").copy()


@pytest.mark.parametrize("config", ["tiny", "tight", "default", "big_acc"])
@pytest.mark.parametrize("seed", range(40))
def test_random_programs_schedule_alike(config, seed):
    prog = random_program(load_config(config), seed)
    (python, uop_a), (fast, uop_b) = (_run(prog, compiled=c) for c in (False, True))
    assert [getattr(fast, f) for f in FIELDS] == [getattr(python, f) for f in FIELDS]
    np.testing.assert_array_equal(uop_a, uop_b)


def test_the_compiled_scheduler_runs_the_random_programs():
    """Most random programs run whole to FINISH, so the comparison above is not all fallback."""
    from avta.sim.fsim import compiled
    cfg = load_config("tiny")
    ran = 0
    for seed in range(20):
        prog = random_program(cfg, seed)
        sim = Fsim(cfg, strict=prog.strict, timing_only=True)
        dram = np.frombuffer(prog.dram(), dtype=np.uint8).copy()
        calls = []
        original = compiled.schedule

        def spy(*args):
            calls.append(original(*args))
            return calls[-1]
        compiled.schedule = spy
        try:
            sim.run(dram, prog.insn_addr, prog.insn_count, bases=prog.bases)
        finally:
            compiled.schedule = original
        ran += any(c is not None for c in calls)
    assert ran >= 10


def test_resnet18_layers_schedule_alike():
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.runtime.net import random_input
    from avta.sim.targets import load_network, make_device
    cfg = load_config("default")
    graph = load_network("resnet18", None, 0, cfg)
    x = random_input(graph, seed=0)
    runs = []
    for compiled in (False, True):
        device = make_device(cfg, "fsim", dram_bytes(cfg, graph), timing_only=True)
        device.backend.sim.compiled = compiled
        run = run_network(device, graph, x)
        runs.append([(layer.name, layer.cycles, layer.counters) for layer in run.layers])
    assert runs[0] == runs[1]
    assert all(counters["STALL_LD"] >= 0 and counters for _, _, counters in runs[1])


def test_auto_turns_to_the_compiled_scheduler_once_loading_it_pays(monkeypatch):
    """``"auto"`` schedules in Python until the process has run BREAK_EVEN timing-only
    instructions there (one ``avta run`` never pays numba's import), then compiled."""
    from avta.sim.fsim import compiled
    from avta.sim.fsim.machine import Fsim
    monkeypatch.setattr(compiled, "_python_instructions", 0)
    monkeypatch.setattr(compiled, "_compiled", _unloaded(compiled._compiled))
    sim = Fsim(load_config("tiny"), timing_only=True)
    assert sim.compiled == "auto" and not sim._compiled_ok()
    compiled.scheduled_in_python(compiled.BREAK_EVEN - 1)
    assert not sim._compiled_ok()
    compiled.scheduled_in_python(1)
    assert sim._compiled_ok()
    sim.compiled = False
    assert not sim._compiled_ok()


def test_auto_counts_what_it_schedules_in_python(monkeypatch):
    from avta.sim.fsim import compiled
    monkeypatch.setattr(compiled, "_python_instructions", 0)
    monkeypatch.setattr(compiled, "_compiled", _unloaded(compiled._compiled))
    prog = random_program(load_config("tiny"), 3)
    result, _ = _run(prog, compiled="auto")
    assert result.status == "ok"
    assert compiled._python_instructions == prog.insn_count


def _unloaded(function):
    """``function`` (a cached loader) as if never called in this process."""
    import functools
    return functools.cache(function.__wrapped__)


@pytest.mark.parametrize("count", [0, 1])
def test_a_stream_of_no_or_one_instruction_ends_alike(count):
    """No instruction at all (nothing to gather a table from), or a lone FINISH."""
    from avta.isa.encoding import codec, finish
    cfg = load_config("tiny")
    results = []
    for compiled in (False, True):
        sim = Fsim(cfg, timing_only=True)
        sim.compiled = compiled
        dram = np.zeros(8192, np.uint8)
        dram[:16] = np.frombuffer(codec(cfg).encode_bytes(finish()), np.uint8)
        result = sim.run(dram, 0, count)
        results.append([getattr(result, f) for f in FIELDS])
    assert results[0] == results[1]
