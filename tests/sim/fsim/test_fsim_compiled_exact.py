"""fsim's compiled data interpreter (sim/fsim/compiled_exact.py) against the Python machine, the
reference: on the fuzzer's random legal programs (wrapping indices, token bursts, error paths
and corners among them) on every shape of configuration, and on the layers of ResNet-18, a
bit-exact run ends alike (status, cycles, every counter, error and its detail) and leaves every
byte of DRAM and of every scratchpad alike. Streams it does not run whole go to the Python
machine untouched; the operator and network tests of tests/runtime hold it equal too
(tests/runtime/conftest.py)."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.sim.fsim import Fsim, compiled_exact
from avta.sim.fuzz.program import random_program

FIELDS = ("status", "cycles", "counters", "error_code", "error_insn", "detail")
PADS = ("uop", "inp", "wgt", "acc", "out")


def _run(prog, *, compiled, runs=1):
    """``(result, DRAM, scratchpads)`` after ``runs`` runs of ``prog`` on one machine (its
    scratchpads carry over from run to run)."""
    sim = Fsim(prog.cfg, strict=prog.strict)
    sim.compiled = compiled
    dram = np.frombuffer(prog.dram(), dtype=np.uint8).copy()
    for _ in range(runs):
        result = sim.run(dram, prog.insn_addr, prog.insn_count, bases=prog.bases)
    return result, dram, [sim.sram(name).copy() for name in PADS]


def _assert_alike(python, fast):
    assert [getattr(fast[0], f) for f in FIELDS] == [getattr(python[0], f) for f in FIELDS]
    np.testing.assert_array_equal(fast[1], python[1])
    for name, a, b in zip(PADS, python[2], fast[2]):
        np.testing.assert_array_equal(b, a, err_msg=f"scratchpad {name}")


CONFIGS = ["tiny", "tight", "default", "big_acc", "batch2", "rect", "wide", "huge", "fpga"]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(12))
def test_random_programs_run_alike(config, seed):
    prog = random_program(load_config(config), seed)
    _assert_alike(_run(prog, compiled=False), _run(prog, compiled=True))


@pytest.mark.parametrize("config", ["tiny", "default"])
@pytest.mark.parametrize("seed", range(12))
def test_random_programs_run_alike_with_a_24_bit_scale(config, seed):
    """ALU_SCALE: 2, SCL's multiplier 24 bits wide (an immediate shifted into its top bits)."""
    prog = random_program(load_config(config).replace(alu_scale=2), seed)
    _assert_alike(_run(prog, compiled=False), _run(prog, compiled=True))


@pytest.mark.parametrize("seed", range(4))
def test_a_second_run_sees_the_scratchpads_the_first_left(seed):
    """Scratchpads persist across runs; the memos the Python machine keeps of them (micro-op
    fields, float copies of INP and WGT) are dropped when the compiled run writes them."""
    prog = random_program(load_config("default"), seed)
    _assert_alike(_run(prog, compiled=False, runs=2), _run(prog, compiled=True, runs=2))


def test_the_interpreter_runs_most_random_programs(monkeypatch):
    """Most random programs run whole on the compiled passes, so the comparisons above are not
    all fallback."""
    ran = []
    original = compiled_exact.run

    def keep(launch):
        done = original(launch)
        ran.append(done is not None)
        return done
    monkeypatch.setattr(compiled_exact, "run", keep)
    for seed in range(20):
        _run(random_program(load_config("tiny"), seed), compiled=True)
    assert sum(ran) >= 12


def test_a_stream_it_refuses_is_left_untouched(monkeypatch):
    """A stream with an error (here a STORE past the end of DRAM) goes to the Python machine,
    which says what went wrong, with DRAM and scratchpads as the first pass found them."""
    from avta.isa.encoding import codec, finish
    from avta.isa.enums import MemType, Opcode
    from avta.isa.insn import MemoryInsn
    cfg = load_config("tiny")
    enc = codec(cfg)
    dram = np.zeros(4096, np.uint8)
    store = MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0,
                       dram_base=4000, y_size=1, x_size=8, x_stride=8)
    load = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, sram_base=0, dram_base=64,
                      y_size=1, x_size=2, x_stride=2)
    dram[1024:1040] = 7
    for k, insn in enumerate((load, store, finish())):
        dram[16 * k:16 * k + 16] = np.frombuffer(enc.encode_bytes(insn), np.uint8)
    results = []
    for compiled in (False, True):
        sim = Fsim(cfg, strict=True)
        sim.compiled = compiled
        image = dram.copy()
        results.append((sim.run(image, 0, 3), image, [sim.sram(n).copy() for n in PADS]))
    _assert_alike(*results)
    assert results[1][0].status == "error" and results[1][0].error_code == 9


def test_resnet18_layers_run_alike():
    """Every layer of ResNet-18 at 224 on default, bit-exact: the same outputs, cycles and
    counters layer by layer, and the same DRAM at the end."""
    from avta.runtime.net import random_input
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim.targets import load_network, make_device
    cfg = load_config("default")
    graph = load_network("resnet18", None, 0, cfg)
    x = random_input(graph, seed=0)
    runs = []
    for compiled in (False, True):
        device = make_device(cfg, "fsim", dram_bytes(cfg, graph))
        device.backend.sim.compiled = compiled
        run = run_network(device, graph, x)
        runs.append(([(layer.name, layer.cycles, layer.counters) for layer in run.layers],
                     {name: run.outputs[name] for name in graph.outputs},
                     device.backend.read(0, device.backend.dram_size).copy()))
    assert runs[0][0] == runs[1][0]
    for name in graph.outputs:
        np.testing.assert_array_equal(runs[1][1][name], runs[0][1][name])
    np.testing.assert_array_equal(runs[1][2], runs[0][2])


def test_auto_turns_to_the_interpreter_once_loading_it_pays(monkeypatch):
    """``"auto"`` runs bit-exact streams in Python until the process has spent
    BREAK_EVEN_SECONDS there, then compiled; False keeps them in Python."""
    import functools
    monkeypatch.setattr(compiled_exact, "_python_seconds", 0.0)
    monkeypatch.setattr(compiled_exact, "_kernels",
                        functools.cache(compiled_exact._kernels.__wrapped__))
    sim = Fsim(load_config("tiny"))
    assert sim.compiled == "auto" and not sim._compiled_ok()
    compiled_exact.ran_in_python(compiled_exact.BREAK_EVEN_SECONDS / 2)
    assert not sim._compiled_ok()
    compiled_exact.ran_in_python(compiled_exact.BREAK_EVEN_SECONDS / 2)
    assert sim._compiled_ok()
    sim.compiled = False
    assert not sim._compiled_ok()


def test_auto_counts_what_it_runs_in_python(monkeypatch):
    import functools
    monkeypatch.setattr(compiled_exact, "_python_seconds", 0.0)
    monkeypatch.setattr(compiled_exact, "_kernels",
                        functools.cache(compiled_exact._kernels.__wrapped__))
    result, _, _ = _run(random_program(load_config("tiny"), 3), compiled="auto")
    assert result.status == "ok" and compiled_exact._python_seconds > 0


def test_a_traced_run_is_the_python_one():
    """A trace sees every write as the Python machine makes it: a traced run is never the
    compiled one, whatever ``compiled`` says."""
    sim = Fsim(load_config("tiny"), trace=lambda event: None)
    sim.compiled = True
    assert not sim._compiled_ok()


@pytest.mark.parametrize("count", [0, 1])
def test_a_stream_of_no_or_one_instruction_ends_alike(count):
    """No instruction at all (the Python machine says the stream ended without FINISH), or a
    lone FINISH."""
    from avta.isa.encoding import codec, finish
    cfg = load_config("tiny")
    results = []
    for compiled in (False, True):
        sim = Fsim(cfg)
        sim.compiled = compiled
        dram = np.zeros(8192, np.uint8)
        dram[:16] = np.frombuffer(codec(cfg).encode_bytes(finish()), np.uint8)
        results.append((sim.run(dram, 0, count), dram, [sim.sram(n).copy() for n in PADS]))
    _assert_alike(*results)
