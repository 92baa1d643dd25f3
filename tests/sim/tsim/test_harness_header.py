"""The tsim harness's generated header (avta_harness.h) compiles with g++ and says what Python
says; the trace port encodes stage states as the enum the header names them from."""

import shutil
import subprocess
from types import SimpleNamespace

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from avta.hw.axi.signatures import Resp
from avta.hw.core.trace_port import (STATE_NAMES, TRACE_STAGES, TRACED_MEMORIES, StageState,
                                     TraceSignature, drive_trace)
from avta.isa.enums import Stage
from avta.isa.memories import SCRATCHPADS, writer_stage
from avta.isa.registers import REGISTERS, Ctrl
from avta.sim.trace.schema import EVENT_KINDS, MEMORIES, MODE_LEVELS, MODES, STAGES, mode_level
from avta.sim.tsim.harness_header import (HEADER_NAME, RunStatus, TraceStart, harness_constants,
                                          harness_header, harness_macros)


def _print_statement(constant):
    if isinstance(constant.value, tuple):
        fmt, cast = ("%s", "") if isinstance(constant.value[0], str) else ("%lld", "(long long)")
        return (f'  for (int i = 0; i < {len(constant.value)}; ++i) std::printf("{constant.name}'
                f'[%d] {fmt}\\n", i, {cast}avta_harness::{constant.name}[i]);')
    return (f'  std::printf("{constant.name} %lld\\n", '
            f'(long long)avta_harness::{constant.name});')


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """What a C++ program including the header prints: ``{name: value}`` of every constant
    (``name[i]`` for array items) and ``{macro: [(index, name), ...]}`` of every X-macro."""
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    folder = tmp_path_factory.mktemp("harness_header")
    (folder / HEADER_NAME).write_text(harness_header())
    body = [_print_statement(constant) for constant in harness_constants()]
    for macro in harness_macros():
        body += [f'#define PRINT(index, name) std::printf("{macro.name} %d %s\\n", index, #name);',
                 f"  {macro.name}(PRINT)", "#undef PRINT"]
    # Included twice: the header guards itself.
    (folder / "main.cpp").write_text(
        f'#include <cstdio>\n#include "{HEADER_NAME}"\n#include "{HEADER_NAME}"\n'
        f"int main() {{\n" + "\n".join(body) + "\n  return 0;\n}\n")
    subprocess.run(["g++", "-std=c++20", "-Wall", "-Wextra", "-Werror", "-o", "main", "main.cpp"],
                   check=True, cwd=folder)
    out = subprocess.run([str(folder / "main")], check=True, capture_output=True, text=True)
    values, macros = {}, {}
    for line in out.stdout.splitlines():
        name, *rest = line.split()
        if name in {macro.name for macro in harness_macros()}:
            macros.setdefault(name, []).append((int(rest[0]), rest[1]))
        else:
            values[name] = rest[0]
    return values, macros


def _array(values, name, kind=str):
    items = sorted((int(key[len(name) + 1:-1]), value) for key, value in values.items()
                   if key.startswith(f"{name}["))
    return tuple(kind(value) for _, value in items)


def test_every_constant_prints_its_python_value(printed):
    values, _ = printed
    for constant in harness_constants():
        if isinstance(constant.value, tuple):
            kind = type(constant.value[0])
            assert _array(values, constant.name, kind) == constant.value, constant.name
        else:
            assert int(values[constant.name]) == constant.value, constant.name


def test_registers_and_ctrl_bits(printed):
    values, _ = printed
    assert int(values["kRegCtrl"]) == REGISTERS["CTRL"]
    assert int(values["kRegCycles"]) == REGISTERS["CYCLES"]
    assert int(values["kRegErrCode"]) == REGISTERS["ERR_CODE"]
    assert len([name for name in values if name.startswith("kReg")]) == len(REGISTERS)
    assert int(values["kCtrlLaunch"]) == Ctrl.LAUNCH == int(values["kCtrlBusy"])
    assert int(values["kCtrlFinish"]) == Ctrl.FINISH and int(values["kCtrlError"]) == Ctrl.ERROR
    assert int(values["kRespOkay"]) == Resp.OKAY and int(values["kRespSlverr"]) == Resp.SLVERR


def test_status_codes(printed):
    values, _ = printed
    expected = {"kRunFinish": RunStatus.FINISH, "kRunError": RunStatus.ERROR,
                "kRunTimeout": RunStatus.TIMEOUT, "kRunNoAnswer": RunStatus.NO_ANSWER,
                "kTraceStarted": TraceStart.STARTED, "kTraceNoFile": TraceStart.NO_FILE,
                "kTraceNoPorts": TraceStart.NO_PORTS}
    assert {name: int(values[name]) for name in expected} == expected


def test_trace_names(printed):
    values, macros = printed
    assert _array(values, "kModeName") == MODE_LEVELS
    assert int(values["kModeArch"]) == mode_level("arch") == mode_level("equiv")
    assert int(values["kModeFull"]) == mode_level("full")
    assert _array(values, "kStageName") == STAGES == ("load", "compute", "store")
    assert _array(values, "kStateName") == tuple(s.name.lower() for s in StageState)
    assert [int(values[f"kState{s.name.title()}"]) for s in StageState] == \
        [s.value for s in StageState]
    assert _array(values, "kMemoryName") == tuple(TRACED_MEMORIES) == MEMORIES
    assert _array(values, "kMemoryStage", int) == tuple(
        writer_stage(name) for name in MEMORIES)
    assert int(values["kDramStage"]) == Stage.STORE
    assert _array(values, "kKindName") == tuple(EVENT_KINDS)
    assert macros["AVTA_TRACE_STAGES"] == list(enumerate(STAGES))
    assert macros["AVTA_TRACED_MEMORIES"] == list(enumerate(MEMORIES))


def test_schema_names_derive_from_the_isa():
    assert MODES == ("retire", "arch", "equiv", "full")
    assert MEMORIES == tuple(name for name in SCRATCHPADS if name != "out")
    assert TRACED_MEMORIES == {"uop": "compute", "inp": "load", "wgt": "load", "acc": "compute"}
    assert tuple(TRACE_STAGES) == STAGES
    assert STATE_NAMES == ("idle", "wait", "busy", "halt")


def test_trace_port_encodes_states_as_the_enum(tiny_cfg):
    """Each stage's ``state`` port is ``StageState``-shaped and shows the enum's member for
    each condition of the stage's control: busy, idle, stalled, none (halting)."""
    signature = TraceSignature(tiny_cfg)
    for stage in STAGES:
        assert signature.members[f"{stage}_state"].shape is StageState
    trace = signature.flip().create()
    stages = {short: SimpleNamespace(busy=Signal(), idle_event=Signal(), stall_event=Signal(),
                                     retire=Signal(), retire_index=Signal(8),
                                     detached_index=Signal(8), owner_index=Signal(8),
                                     insn=SimpleNamespace(payload=SimpleNamespace(index=Signal(8))))
              for short in TRACE_STAGES.values()}
    ports = {name: SimpleNamespace(en=Signal(len(getattr(trace, f"{prefix}_en"))),
                                   addr=Signal(len(getattr(trace, f"{prefix}_addr"))),
                                   data=Signal(len(getattr(trace, f"{prefix}_data"))))
             for name, prefix in [(n, n) for n in TRACED_MEMORIES] + [("alu_acc", "alu_acc"),
                                                                       ("load_acc", "acc")]}
    m = Module()
    drive_trace(m, trace, stages, ports)
    cases = [((1, 0, 0), StageState.BUSY), ((1, 1, 1), StageState.BUSY),
             ((0, 1, 0), StageState.IDLE), ((0, 0, 1), StageState.WAIT),
             ((0, 0, 0), StageState.HALT)]

    async def bench(ctx):
        for (busy, idle, stall), expected in cases:
            for ctrl in stages.values():
                ctx.set(ctrl.busy, busy)
                ctx.set(ctrl.idle_event, idle)
                ctx.set(ctrl.stall_event, stall)
            for stage in STAGES:
                assert ctx.get(getattr(trace, f"{stage}_state")) == expected, (stage, expected)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
