"""The C++ header of the tsim harness (``avta_harness.h``): what ``harness.cpp`` and ``events.h``
share with Python, generated from the Python definitions so that C++ copies none of them.

It holds the control register offsets and CTRL bits (:mod:`avta.isa.registers`), the AXI response
codes (:class:`avta.hw.axi.signatures.Resp`), the codes the harness's entry points return to
:mod:`.driver` (:class:`RunStatus`, :class:`TraceStart`), and the names a trace is written with
(:mod:`avta.sim.trace.schema`, :mod:`avta.hw.core.trace_port`): modes, stages, stage states,
traced memories and event kinds. Each list of names becomes an index constant per name, a count
and an array of the names, e.g. ``kStageLoad``, ``kStageCount``, ``kStageName[]``. The trace
port names are C++ identifiers, so the traced stages and memories also come as X-macros
(``AVTA_TRACE_STAGES(X)`` expands ``X(kStageLoad, load) ...``).

Nothing here depends on the configuration: :mod:`.build` writes the same header for every design.
"""

import enum
from dataclasses import dataclass, replace

from avta.hw.axi.signatures import Resp
from avta.hw.core.trace_port import STATE_NAMES, TRACED_MEMORIES, StageState
from avta.isa.enums import MemType
from avta.isa.memories import stage_of
from avta.isa.registers import IDLE_COUNTERS, REGISTERS, STALL_COUNTERS, Ctrl, counter_offset
from avta.sim.trace.schema import EVENT_KINDS, MODE_LEVELS, STAGES

__all__ = ["HEADER_NAME", "NAMESPACE", "RunStatus", "TraceStart", "Constant", "Macro",
           "harness_constants", "harness_macros", "harness_header"]

#: The header's file name, as harness.cpp and events.h include it.
HEADER_NAME = "avta_harness.h"
#: The C++ namespace of its constants.
NAMESPACE = "avta_harness"
#: A run is a deadlock after two windows of this many cycles in a row in which every stage was
#: idle or waiting on a token and nothing moved on the bus (long next to any memory latency).
DEADLOCK_WINDOW = 4096


class RunStatus(enum.IntEnum):
    """What ``tsim_run`` returns: how a run ended."""
    #: CTRL showed finish.
    FINISH = 0
    #: CTRL showed error (ERR_CODE says which).
    ERROR = 1
    #: The cycle limit came first.
    TIMEOUT = 2
    #: No stage can start and nothing moves on the bus (docs/isa.md §3.5, deadlock).
    DEADLOCK = 3
    #: The register file did not answer a launch or a poll.
    NO_ANSWER = -1


class TraceStart(enum.IntEnum):
    """What ``tsim_trace_begin`` returns."""
    STARTED = 0
    #: The trace file cannot be opened for appending.
    NO_FILE = -1
    #: The library was built without the trace manager (the design has no trace ports).
    NO_PORTS = -2


@dataclass(frozen=True)
class Constant:
    """One ``constexpr`` of the header: ``value`` is an int, or a tuple of ints or of strings
    (an array). ``comment`` heads the group of constants it begins."""
    name: str
    ctype: str
    value: object
    comment: str = ""


@dataclass(frozen=True)
class Macro:
    """An X-macro ``name(X)`` expanding ``X(index, name)`` for each ``(index, name)`` of
    ``entries``."""
    name: str
    entries: tuple
    comment: str


def _camel(name):
    """``INSN_COUNT`` → ``InsnCount`` (and ``load`` → ``Load``): C++ constant name style."""
    return "".join(word.capitalize() for word in name.split("_"))


def _group(comment, constants):
    """``constants`` under one ``comment``."""
    return [replace(constants[0], comment=comment)] + constants[1:]


def _codes(prefix, codes, ctype, comment):
    """A constant ``k<Prefix><Name>`` per ``(name, value)`` of ``codes``."""
    return _group(comment, [Constant(f"k{prefix}{_camel(name)}", ctype, int(value))
                            for name, value in codes])


def _named(prefix, names, comment):
    """An index constant per name (``k<Prefix><Name>``), their count (``k<Prefix>Count``) and
    the array of the names (``k<Prefix>Name``)."""
    return _codes(prefix, [(name, index) for index, name in enumerate(names)], "int", comment) \
        + [Constant(f"k{prefix}Count", "int", len(names)),
           Constant(f"k{prefix}Name", "const char*", tuple(names))]


def _state_names():
    """The stage states' trace names, indexed by their encoding (the harness looks a sampled
    ``state`` port up in them)."""
    if [state.value for state in StageState] != list(range(len(StageState))):
        raise ValueError("the stage states must be encoded 0, 1, ... in order: the harness "
                         "indexes their names by the encoding")
    return STATE_NAMES


def harness_constants():
    """Every :class:`Constant` of the header, in order."""
    c = _codes("Reg", REGISTERS.items(), "uint32_t", "Control register byte offsets.")
    # BUSY is LAUNCH read back: __members__ keeps the alias.
    c += _codes("Ctrl", Ctrl.__members__.items(), "uint32_t", "CTRL bits.")
    c += _codes("Resp", Resp.__members__.items(), "uint32_t", "AXI response codes.")
    c += _codes("Run", RunStatus.__members__.items(), "int", "What tsim_run returns.")
    c += _codes("Trace", TraceStart.__members__.items(), "int", "What tsim_trace_begin returns.")
    c += _named("Mode", MODE_LEVELS, "Trace modes, each recording more than the one before.")
    c += _named("Stage", STAGES, "Stages.")
    c += _named("State", _state_names(), "Stage states, by their encoding on the trace port.")
    c += _named("Memory", tuple(TRACED_MEMORIES), "Traced scratchpads, in trace port order.")
    c += [Constant("kMemoryStage", "int",
                   tuple(STAGES.index(stage) for stage in TRACED_MEMORIES.values()),
                   "The stage whose instructions write each traced scratchpad."),
          Constant("kDramStage", "int", int(stage_of(MemType.OUT)),
                   "The stage whose instructions write DRAM.")]
    c += _named("Kind", tuple(EVENT_KINDS), "Event kinds.")
    c += [Constant("kIdleCounter", "uint32_t", tuple(counter_offset(n) for n in IDLE_COUNTERS),
                   "Per stage: the register counting its cycles without an instruction."),
          Constant("kStallCounter", "uint32_t", tuple(counter_offset(n) for n in STALL_COUNTERS),
                   "Per stage: the register counting its cycles waiting on a token."),
          Constant("kDeadlockWindow", "uint64_t", DEADLOCK_WINDOW,
                   "Cycles without progress after which a run is checked for a deadlock.")]
    return c


def harness_macros():
    """Every :class:`Macro` of the header: the trace port names by stage and by memory."""
    return [
        Macro("AVTA_TRACE_STAGES",
              tuple((f"{NAMESPACE}::kStage{_camel(name)}", name) for name in STAGES),
              "Each stage's trace ports: <stage>_insn, <stage>_retire, <stage>_state."),
        Macro("AVTA_TRACED_MEMORIES",
              tuple((f"{NAMESPACE}::kMemory{_camel(name)}", name) for name in TRACED_MEMORIES),
              "Each traced scratchpad's trace ports: <memory>_en, <memory>_addr, <memory>_data."),
    ]


def _literal(ctype, value):
    if isinstance(value, str):
        return f'"{value}"'
    return hex(value) if ctype == "uint32_t" else str(value)


def _definition(constant):
    value = constant.value
    if isinstance(value, tuple):
        items = ", ".join(_literal(constant.ctype, item) for item in value)
        return f"constexpr {constant.ctype} {constant.name}[{len(value)}] = {{{items}}};"
    return f"constexpr {constant.ctype} {constant.name} = {_literal(constant.ctype, value)};"


def harness_header():
    """The text of ``avta_harness.h``."""
    lines = [
        "// Generated by avta.sim.tsim.harness_header from avta's Python definitions. Do not",
        "// edit: change the definitions (avta.isa.registers, avta.sim.trace.schema, ...).",
        "#pragma once",
        "",
        "#include <cstdint>",
        "",
        f"namespace {NAMESPACE} {{",
    ]
    for constant in harness_constants():
        if constant.comment:
            lines += ["", f"// {constant.comment}"]
        lines.append(_definition(constant))
    lines += ["", f"}}  // namespace {NAMESPACE}"]
    for macro in harness_macros():
        entries = [f"    X({index}, {name})" for index, name in macro.entries]
        lines += ["", f"// {macro.comment}", f"#define {macro.name}(X) \\"]
        lines += [f"{entry} \\" for entry in entries[:-1]] + entries[-1:]
    return "\n".join(lines) + "\n"
