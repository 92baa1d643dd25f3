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


def _kernel_programs(cfg):
    """(id, instructions): GEMM and ALU kernels whose indices reach past a scratchpad, each
    field alone, and micro-ops that wrap past the UOP scratchpad (error 10 in strict mode,
    wrapping otherwise)."""
    from avta.isa.enums import AluOp
    from avta.sim.image import alu, finish, gemm
    acc, inp, wgt, uop = cfg.acc.depth, cfg.inp.depth, cfg.wgt.depth, cfg.uop.depth
    return [
        ("GEMM acc", [gemm(iters=(1, 3), dst=(0, acc - 1)), finish()]),
        ("GEMM inp", [gemm(iters=(3, 1), src=(inp - 1, 0)), finish()]),
        ("GEMM wgt", [gemm(iters=(3, 1), wgt=(wgt - 1, 0)), finish()]),
        ("GEMM reset acc", [gemm(iters=(1, 3), dst=(0, acc - 1), reset=1), finish()]),
        ("GEMM reset, inp and wgt past the end are not read",
         [gemm(iters=(3, 1), src=(inp - 1, 0), wgt=(wgt - 1, 0), reset=1), finish()]),
        ("GEMM in range", [gemm(iters=(2, 3), dst=(1, 2)), finish()]),
        ("ALU dst", [alu(AluOp.ADD, iters=(3, 1), dst=(acc // 2, 0), imm=1), finish()]),
        ("ALU src", [alu(AluOp.ADD, iters=(3, 1), src=(acc // 2, 0)), finish()]),
        ("ALU then GEMM beside it", [alu(AluOp.ADD, iters=(2, 1), dst=(1, 0), imm=1),
                                     gemm(iters=(2, 1), dst=(1, 0)), finish()]),
        ("micro-ops wrap", [gemm(uops=(uop - 1, uop + 1)), finish()]),
        ("no steps", [gemm(iters=(0, 3), dst=(0, acc - 1)), finish()]),
    ]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("case", range(len(_kernel_programs(load_config("tiny")))))
def test_kernel_checks_end_alike(case, strict):
    """The compiled path checks a stream's GEMM and ALU kernels at once (sim/fsim/prepare.py);
    a kernel past a scratchpad ends as the Python scheduler ends it (error 10, or wrapping)."""
    from avta.sim.image import Image
    cfg = load_config("tiny")
    name, insns = _kernel_programs(cfg)[case]
    results = []
    for compiled in (False, True):
        image = Image(cfg, size=1 << 14)
        image.add(*insns)
        sim = Fsim(cfg, strict=strict, timing_only=True)
        sim.compiled = compiled
        result, _ = image.run(sim)
        results.append([getattr(result, f) for f in FIELDS])
    assert results[0] == results[1], name


def test_kernels_in_range_are_checked_at_once(monkeypatch):
    """A layer's kernels, all in range, are checked together, not one at a time in Python
    (which costs a ResNet-18 run most of its preparation)."""
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.runtime.net import random_input
    from avta.sim.fsim.launch import Launch
    from avta.sim.targets import load_network, make_device
    cfg = load_config("tiny")
    graph = load_network("resnet18", 32, 0, cfg, timing_only=True)
    alone = []
    original = Launch._check_once
    monkeypatch.setattr(Launch, "_check_once",
                        lambda self, *args: alone.append(args) or original(self, *args))
    device = make_device(cfg, "fsim", dram_bytes(cfg, graph), timing_only=True)
    device.backend.sim.compiled = True
    run = run_network(device, graph, random_input(graph, seed=0))
    assert all(layer.cycles > 0 for layer in run.layers)
    assert alone == []


def test_timing_only_runs_are_checked_by_the_compiled_interpreters_pass(monkeypatch):
    """A timing-only run's checks, micro-op LOADs and ``meets`` are the compiled pass the
    bit-exact interpreter makes (sim/fsim/prepare.py, compiled_checks.check_stream), one call a
    run: a kernel's checks and ACC row bounds have one fast form, held equal to the Python
    machine's by the tests above."""
    from avta.sim.fsim import compiled_checks, prepare
    calls = []
    original = compiled_checks.check_stream
    monkeypatch.setattr(compiled_checks, "check_stream",
                        lambda *args: calls.append(args) or original(*args))
    monkeypatch.setattr(prepare, "load", _unloaded(prepare.load))
    prog = random_program(load_config("tiny"), 3)
    result, _ = _run(prog, compiled=True)
    assert result.status == "ok" and len(calls) == 1


def test_a_micro_op_load_of_bytes_a_store_writes_runs_compiled_in_timing_only():
    """A timing-only run's STOREs write nothing, so a micro-op LOAD of bytes a STORE before it
    names reads DRAM as it was at launch, as the compiled pass's copy does: the stream runs
    compiled (a bit-exact run leaves it to Python), and ends as the Python scheduler ends it."""
    from avta.isa.enums import MemType
    from avta.isa.insn import Uop
    from avta.sim.fsim import compiled
    from avta.sim.image import Image, finish, gemm, load, store
    cfg = load_config("tiny")
    runs, scheduled = [], []
    original = compiled.schedule

    def spy(*args):
        scheduled.append(original(*args))
        return scheduled[-1]
    for run_compiled in (False, True):
        image = Image(cfg, size=1 << 14)
        image.put_uops(0x1000, [Uop(3, 0), Uop(5, 1)])
        image.add(store(sram=0, dram=0x1000 // cfg.out_elem_bytes, x=2),
                  load(MemType.UOP, dram=0x1000 // cfg.uop_elem_bytes, x=2),
                  gemm(uops=(0, 2), iters=(1, 2), dst=(0, 1)), finish())
        sim = Fsim(cfg, strict=True, timing_only=True)
        sim.compiled = run_compiled
        compiled.schedule = spy
        try:
            result, _ = image.run(sim)
        finally:
            compiled.schedule = original
        runs.append(([getattr(result, f) for f in FIELDS], sim.sram("uop").copy()))
    assert runs[0][0] == runs[1][0] and runs[0][0][0] == "ok"
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[1][1][:2].any() and len(scheduled) == 1 and scheduled[0] is not None
