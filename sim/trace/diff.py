"""The trace diff (docs/architecture.md, traces; ``avta trace-diff A B``).

Two targets agree when every stage did the same thing to the same rows and elements, instruction
by instruction. Timing is free: tsim's stages overlap and a LOAD's rows can land in any order. So:

* events are split by stage, and each stage's instructions are compared in program order;
* inside one instruction, events are grouped by what they wrote, their *key*: ``(memory,
  index)`` for a scratchpad row, ``address`` for a DRAM element, ``retire`` for the retire
  event. Writes to one key keep their order (a GEMM that accumulates into a row twice writes
  it twice, in program order on both targets); different keys are compared in key order;
* event kinds that only one trace has (``activity``: tsim's ``full`` mode) are ignored, and so
  are the ``sram``/``dram`` events when one trace was recorded in ``retire`` mode.

The first divergence of each stage is reported with the instruction disassembled, what differs
(for row data, the lanes that differ with both values), a few events of context, and the tsim
cycle of the event (the waveform is at time 2·cycle + 1 there). The last line says
``matched`` or ``mismatched``.
"""

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from avta.isa.asm import format_insn
from avta.isa.encoding import codec
from avta.isa.enums import MemType
from avta.isa.memories import memory as memory_info, scratchpad

from .schema import STAGES, read_trace, trace_config

__all__ = ["Divergence", "DiffReport", "diff_traces", "diff_files"]

#: Events of context shown before a divergence.
CONTEXT = 4
#: Lanes listed per differing row before "… and N more".
MAX_LANES = 8


@dataclass
class Divergence:
    """The first difference in one stage: at instruction ``insn``, about ``key``."""
    stage: str
    insn: int
    key: tuple
    what: str                      # one line: what differs
    details: list = field(default_factory=list)    # further lines (lanes, values)
    event_a: dict = None
    event_b: dict = None
    context_a: list = field(default_factory=list)
    context_b: list = field(default_factory=list)
    cycle_hint: int = None

    @property
    def cycle(self):
        """The tsim cycle of the divergent event (from whichever trace has cycles); when tsim
        lacks the event, the cycle of the write it made in its place."""
        for event in (self.event_b, self.event_a):
            if event is not None and "cycle" in event:
                return event["cycle"]
        if self.cycle_hint is not None:
            return self.cycle_hint
        for events in (self.context_b, self.context_a):
            if events and "cycle" in events[-1]:
                return events[-1]["cycle"]
        return None


@dataclass
class DiffReport:
    """The outcome: per-stage matches and divergences, plus the end records."""
    a: object
    b: object
    divergences: dict              # stage -> Divergence
    compared: dict                 # stage -> (instructions, events) compared
    end_difference: str = None
    ignored_kinds: tuple = ()
    names: tuple = ("A", "B")      # what the report calls the two traces

    @property
    def matched(self):
        return not self.divergences and self.end_difference is None

    def format(self):
        return "\n".join(_format_report(self))


def diff_files(path_a, path_b):
    """:func:`diff_traces` of two trace files."""
    return diff_traces(read_trace(path_a), read_trace(path_b))


def diff_traces(a, b):
    """Compare two :class:`~avta.sim.trace.schema.Trace` objects; a :class:`DiffReport`."""
    kinds_a = {e["kind"] for e in a.events} | _mode_kinds(a)
    kinds_b = {e["kind"] for e in b.events} | _mode_kinds(b)
    shared = kinds_a & kinds_b
    ignored = tuple(sorted((kinds_a | kinds_b) - shared))
    names = (a.target, b.target) if a.target != b.target else ("A", "B")
    divergences, compared = {}, {}
    for stage in STAGES:
        per_a = _by_insn(a.events, stage, shared)
        per_b = _by_insn(b.events, stage, shared)
        insns = sorted(set(per_a) | set(per_b))
        compared[stage] = (len(insns), sum(len(v) for v in per_a.values()))
        for insn in insns:
            found = _compare_insn(stage, insn, per_a.get(insn, []), per_b.get(insn, []), names)
            if found is not None:
                found.context_a = _context(a.events, stage, found, found.event_a)
                found.context_b = _context(b.events, stage, found, found.event_b)
                divergences[stage] = found
                break
    return DiffReport(a, b, divergences, compared, _compare_end(a, b), ignored, names)


def _mode_kinds(trace):
    """Kinds a trace's mode promises even when it has no such event (an empty program)."""
    mode = trace.mode
    if mode is None:
        return set()
    return {"retire"} | ({"sram", "dram"} if mode in ("arch", "full") else set())


def _key(event):
    kind = event["kind"]
    if kind == "sram":
        return (event["memory"], event["index"])
    if kind == "dram":
        return ("dram", event["address"])
    return (kind,)


def _sort_key(key):
    # Rows and elements in (memory, index) order, the retire event last.
    return (key[0] == "retire", key[0], key[1] if len(key) > 1 else 0)


def _by_insn(events, stage, kinds):
    out = defaultdict(list)
    for event in events:
        if event["stage"] == stage and event["kind"] in kinds:
            out[event["insn"]].append(event)
    return out


def _compare_insn(stage, insn, events_a, events_b, names):
    groups_a, groups_b = defaultdict(list), defaultdict(list)
    for event in events_a:
        groups_a[_key(event)].append(event)
    for event in events_b:
        groups_b[_key(event)].append(event)
    for key in sorted(set(groups_a) | set(groups_b), key=_sort_key):
        ga, gb = groups_a.get(key, []), groups_b.get(key, [])
        for n in range(max(len(ga), len(gb))):
            ea = ga[n] if n < len(ga) else None
            eb = gb[n] if n < len(gb) else None
            what = _event_difference(key, n, len(ga), len(gb), ea, eb, names)
            if what is not None:
                return Divergence(stage, insn, key, what[0], what[1], ea, eb)
    return None


def _describe_key(key):
    if key[0] == "retire":
        return "retire"
    if key[0] == "dram":
        return f"DRAM element at 0x{key[1]:x}"
    return f"{key[0].upper()} row {key[1]}"


def _event_difference(key, n, count_a, count_b, ea, eb, names):
    """``(line, details)`` when ``ea`` and ``eb`` (the n-th writes of ``key``) differ."""
    name = _describe_key(key)
    nth = f" (write {n + 1} of {max(count_a, count_b)})" if max(count_a, count_b) > 1 else ""
    if ea is None or eb is None:
        have = names[0] if eb is None else names[1]
        event = ea or eb
        if key[0] == "retire":
            return f"the instruction retires only in {have}", []
        return (f"{name}{nth} is written only in {have} ({names[0]} {count_a} write(s), "
                f"{names[1]} {count_b})", [f"{have}: {event['data']}"])
    if ea.get("data") != eb.get("data"):
        return (f"{name}{nth}: data differs",
                [f"{names[0]}: {ea['data']}", f"{names[1]}: {eb['data']}"])
    return None


def _context(events, stage, found, event):
    """Up to CONTEXT events of ``stage`` just before ``event``; when this trace lacks the event,
    the instruction's own events nearest the divergent key instead (what it wrote there)."""
    same = [e for e in events if e["stage"] == stage and e["kind"] != "activity"]
    if event is not None:
        end = next(i for i, e in enumerate(same) if e is event)
        return same[max(0, end - CONTEXT):end]
    own = sorted((e for e in same if e["insn"] == found.insn),
                 key=lambda e: _sort_key(_key(e)))
    at = next((i for i, e in enumerate(own)
               if _sort_key(_key(e)) >= _sort_key(found.key)), len(own))
    if at < len(own) and "cycle" in own[at] and found.cycle_hint is None:
        found.cycle_hint = own[at]["cycle"]     # where the missing write would have been
    start = max(0, at - CONTEXT // 2)
    return own[start:start + CONTEXT]


def _compare_end(a, b):
    if a.end is None or b.end is None:
        missing = [t.target for t in (a, b) if t.end is None]
        return f"no end record in {' and '.join(missing)} (the run did not finish writing)"
    fields = ("status", "error_code", "error_insn")
    diffs = [f"{f} {a.end.get(f)} ({a.target}) vs {b.end.get(f)} ({b.target})" for f in fields
             if a.end.get(f) != b.end.get(f)]
    return "; ".join(diffs) if diffs else None


# -- formatting ------------------------------------------------------------------------------------

def _row_layout(cfg, memory):
    """The :class:`~avta.isa.memories.RowLayout` of a traced row: a scratchpad's, or for
    ``dram`` an OUT element's."""
    if memory == "dram":
        return memory_info(cfg, MemType.OUT).element
    return scratchpad(cfg, memory).row


def _lane_lines(cfg, key, ea, eb, names):
    """The lanes where the data of ``ea`` and ``eb`` differ, one line each."""
    if cfg is None or ea is None or eb is None or key[0] == "retire":
        return []
    if key[0] == "uop":
        cod = codec(cfg)
        return [f"{names[0]}: {cod.decode_uop(bytes.fromhex(ea['data']))}",
                f"{names[1]}: {cod.decode_uop(bytes.fromhex(eb['data']))}"]
    row = _row_layout(cfg, key[0])
    lane_names = row.lane_names
    va = np.frombuffer(bytes.fromhex(ea["data"]), dtype=row.dtype)
    vb = np.frombuffer(bytes.fromhex(eb["data"]), dtype=row.dtype)
    if va.size != vb.size or va.size != len(lane_names):
        return [f"row sizes differ: {va.nbytes} vs {vb.nbytes} bytes"]
    lanes = np.flatnonzero(va != vb)
    lines = [f"lane {i} ({lane_names[i]}): {names[0]} {int(va[i])} vs {names[1]} {int(vb[i])}"
             for i in lanes[:MAX_LANES]]
    if lanes.size > MAX_LANES:
        lines.append(f"… and {lanes.size - MAX_LANES} more lanes")
    return lines


def _format_event(event):
    kind = event["kind"]
    at = f"  @ cycle {event['cycle']}" if "cycle" in event else ""
    if kind == "retire":
        return f"insn {event['insn']}: retire{at}"
    if kind == "sram":
        return (f"insn {event['insn']}: {event['memory'].upper()} row {event['index']} = "
                f"{_short(event['data'])}{at}")
    return f"insn {event['insn']}: DRAM 0x{event['address']:x} = {_short(event['data'])}{at}"


def _short(hex_text, limit=40):
    return hex_text if len(hex_text) <= limit else hex_text[:limit] + "…"


def _insn_text(trace, cfg, insn):
    program = trace.program()
    if cfg is None or not 0 <= insn < len(program):
        return "(instruction not in the trace header)"
    return format_insn(codec(cfg).decode(program[insn]))


def _label(trace):
    return f"{trace.path} ({trace.target}, {trace.mode or '?'} mode)"


def _format_report(report):
    a, b = report.a, report.b
    cfg = trace_config(a) or trace_config(b)
    names = report.names
    lines = [f"{names[0]}: {_label(a)}", f"{names[1]}: {_label(b)}"]
    if cfg is not None:
        lines.append(f"configuration {cfg.name} ({cfg.shape_name})")
    for header in ("config_id", "insn_count", "program"):
        if a.header and b.header and a.header.get(header) != b.header.get(header):
            lines.append(f"warning: the traces have different {header.replace('_', ' ')}s; "
                         f"they are not of the same program")
    if report.ignored_kinds:
        lines.append(f"ignored (in one trace only): {', '.join(report.ignored_kinds)}")
    for stage in STAGES:
        insns, events = report.compared[stage]
        found = report.divergences.get(stage)
        if found is None:
            lines.append(f"{stage:8} matched: {insns} instructions, {events} events")
            continue
        cycle = found.cycle
        at = f" (tsim cycle {cycle})" if cycle is not None else ""
        lines.append(f"{stage:8} DIVERGES at instruction {found.insn}{at}")
        lines.append(f"  instruction {found.insn}: {_insn_text(a, cfg, found.insn)}")
        lines.append(f"  {found.what}")
        lane_lines = _lane_lines(cfg, found.key, found.event_a, found.event_b, names)
        for line in lane_lines or found.details:
            lines.append(f"    {line}")
        for name, context, event in zip(names, (found.context_a, found.context_b),
                                        (found.event_a, found.event_b)):
            if context and event is None:
                lines.append(f"  what instruction {found.insn} wrote near there in {name}:")
                lines.extend(f"    {_format_event(e)}" for e in context)
            elif context:
                lines.append(f"  last {len(context)} {stage} events before it in {name}:")
                lines.extend(f"    {_format_event(e)}" for e in context)
    if report.end_difference:
        lines.append(f"end      DIFFERS: {report.end_difference}")
    elif a.end is not None:
        lines.append(f"end      matched: {a.end['status']}")
    if report.matched:
        lines.append(f"matched: {sum(n for n, _ in report.compared.values())} instructions "
                     f"agree in every stage")
    else:
        parts = [f"{s} at instruction {d.insn}" for s, d in report.divergences.items()]
        if report.end_difference:
            parts.append("end record")
        lines.append(f"mismatched: {', '.join(parts)}")
    return lines
