"""The trace schema: one JSON-lines format that fsim and tsim both write (docs/architecture.md, traces).

A trace is a text file with one JSON object per line. Every object has ``kind``; the first line
is the header and the last one (when the run ended) is the end record:

``header``
    ``{"kind": "header", "schema": 1, "target": "fsim"|"tsim", "mode": M, "config": {...},
    "config_id": "0x…", "insn_addr": A, "insn_count": N, "program": ["<32 hex digits>", ...]}``
    ``config`` is the configuration's dictionary (:meth:`Config.to_dict`, so a custom YAML
    configuration travels with the trace), ``program`` the raw instructions as handed to the
    device (16 bytes each, ``bytes.hex()``), so a trace can be read without its image.
``end``
    ``{"kind": "end", "status": "ok"|"error"|"timeout"|"deadlock", "cycles": C,
    "error_code": E, "error_insn": I}`` (the values of :class:`avta.runtime.backend.RunResult`).

Between them come the events. Each names its ``stage`` (``load``, ``compute``, ``store``: the
stage that executed the instruction, docs/isa.md §3) and ``insn`` (the instruction's index in the
stream). tsim events also carry ``cycle`` (the harness's clock cycle count when the event
happened, the time axis of its waveform); fsim has no cycles and leaves it out.

``retire`` (every mode)
    ``{"kind": "retire", "stage": S, "insn": I}``: the instruction completed (its tokens are
    pushed). An instruction that stops the run with an error does not retire.
``sram`` (``arch`` and ``full``)
    ``{"kind": "sram", "stage": S, "insn": I, "memory": "uop"|"inp"|"wgt"|"acc", "index": R,
    "data": "<hex>"}``: scratchpad row ``R`` written, whole: ``data`` is the row's bytes in
    DRAM element order (docs/isa.md §1; ACC lanes int32 little-endian). A row written in pieces
    (a row wider than the bus) is one event, when its last piece lands. GEMM and ALU write one
    event per micro-op step, with the value that step wrote. The OUT mirror of ACC is implied
    and not traced.
``dram`` (``arch`` and ``full``)
    ``{"kind": "dram", "stage": "store", "insn": I, "address": B, "data": "<hex>"}``: one whole
    DRAM element written by a STORE at byte address ``B`` (re-assembled from bus beats on tsim).
``activity`` (``full``, tsim only)
    ``{"kind": "activity", "stage": S, "insn": I, "state": "idle"|"wait"|"busy"|"halt",
    "cycle": C}``: the stage changed state (``idle``: no instruction queued; ``wait``: the head
    instruction waits for a token; ``busy``: executing ``insn``; ``halt``: the run is ending).
    One event per change rather than one per cycle, which says the same in far fewer lines.

Modes: ``retire`` (retire events only), ``arch`` (also every scratchpad row and DRAM element
written; ``equiv`` is an alias), ``full`` (``arch`` plus ``activity``; on fsim, which has no
cycles, ``full`` is ``arch``).

Order: each target writes events as they happen. tsim's stages run concurrently and a LOAD's rows
can land out of order, so only the order of one stage's instructions is meaningful across
targets; :mod:`avta.sim.trace.diff` compares on that basis.
"""

import json
from pathlib import Path

from avta.errors import UserError, read_input
from avta.isa.config import Config, ConfigError
from avta.isa.enums import Stage
from avta.isa.memories import SCRATCHPADS

__all__ = ["SCHEMA_VERSION", "MODES", "MODE_LEVELS", "MODE_ALIASES", "STAGES", "MEMORIES",
           "EVENT_KINDS", "canonical_mode", "mode_level", "header_record", "end_record",
           "TraceWriter", "Trace", "read_trace", "TraceFormatError", "trace_config"]

SCHEMA_VERSION = 1
#: The modes, each recording everything the one before does and more; tsim's harness is handed
#: a mode as its index here.
MODE_LEVELS = ("retire", "arch", "full")
#: Other names of modes.
MODE_ALIASES = {"equiv": "arch"}
#: Accepted modes (command-line choices): each level followed by its aliases.
MODES = tuple(name for level in MODE_LEVELS
              for name in (level, *(alias for alias, of in MODE_ALIASES.items() if of == level)))
#: Stage names, indexed by :class:`~avta.isa.enums.Stage`.
STAGES = tuple(stage.name.lower() for stage in Stage)
#: Scratchpads whose writes are traced, in :data:`~avta.isa.memories.SCRATCHPADS` order: all
#: but OUT, whose rows mirror ACC's.
MEMORIES = tuple(name for name in SCRATCHPADS if name != "out")
#: Event kinds and the keys each must have (besides ``kind``; ``cycle`` is optional).
EVENT_KINDS = {
    "retire": ("stage", "insn"),
    "sram": ("stage", "insn", "memory", "index", "data"),
    "dram": ("stage", "insn", "address", "data"),
    "activity": ("stage", "insn", "state"),
}


class TraceFormatError(UserError, ValueError):
    """A file that is not a trace of this schema; the message names the file and line."""


def canonical_mode(mode):
    """``mode`` with its alias resolved (``equiv`` → ``arch``); a clear error for anything else."""
    if mode not in MODES:
        raise ValueError(f"trace mode {mode!r} is not one of {', '.join(MODES)}")
    return MODE_ALIASES.get(mode, mode)


def mode_level(mode):
    """The index of ``mode`` (or of the mode it is an alias of) in :data:`MODE_LEVELS`."""
    return MODE_LEVELS.index(canonical_mode(mode))


def header_record(cfg, *, target, mode, insn_addr, insn_count, program):
    """The header line of a trace of ``insn_count`` instructions ``program`` (bytes)."""
    return {"kind": "header", "schema": SCHEMA_VERSION, "target": target,
            "mode": canonical_mode(mode), "config": {"name": cfg.name, **cfg.to_dict()},
            "config_id": f"0x{cfg.config_id:08x}", "insn_addr": insn_addr,
            "insn_count": insn_count,
            "program": [bytes(program[i:i + 16]).hex() for i in range(0, len(program), 16)]}


def end_record(result):
    """The end line for a :class:`~avta.runtime.backend.RunResult`."""
    return {"kind": "end", "status": result.status, "cycles": result.cycles,
            "error_code": result.error_code, "error_insn": result.error_insn}


class TraceWriter:
    """Writes one trace to a path or an open text file; usable as fsim's ``trace`` callable.

    >>> with TraceWriter("run.trace", cfg, target="fsim", mode="arch", ...) as w:
    ...     result = Fsim(cfg, trace=w, trace_mode="arch").run(...)
    ...     w.write(end_record(result))
    """

    def __init__(self, out, cfg, *, target, mode, insn_addr, insn_count, program):
        self._own = not hasattr(out, "write")
        #: The file's path (None when writing to a file object the caller opened).
        self.path = out if self._own else None
        self._file = open(out, "w") if self._own else out
        self.write(header_record(cfg, target=target, mode=mode, insn_addr=insn_addr,
                                 insn_count=insn_count, program=program))

    def write(self, record):
        self._file.write(json.dumps(record) + "\n")

    __call__ = write

    def close(self):
        if self._own and not self._file.closed:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Trace:
    """A trace read back: ``header`` (dict or None), ``events`` (list), ``end`` (dict or None),
    ``path``."""

    def __init__(self, path, header, events, end):
        self.path, self.header, self.events, self.end = path, header, events, end

    @property
    def target(self):
        return (self.header or {}).get("target", "?")

    @property
    def mode(self):
        return (self.header or {}).get("mode")

    def program(self):
        """The raw instructions of the header, as a list of 16-byte ``bytes``."""
        return [bytes.fromhex(word) for word in (self.header or {}).get("program", [])]


def read_trace(path):
    """Parse and check a trace file; :class:`TraceFormatError` names the bad line."""
    header, end, events = None, None, []
    path = Path(path)
    try:
        text = read_input(path, "trace")
    except UserError as error:
        raise TraceFormatError(str(error)) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise TraceFormatError(f"{where}: not JSON ({error.msg})") from None
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind == "header":
            if number != 1 and header is None and events:
                raise TraceFormatError(f"{where}: the header must be the first line")
            if record.get("schema") != SCHEMA_VERSION:
                raise TraceFormatError(f"{where}: trace schema {record.get('schema')!r}; this "
                                       f"avta reads schema {SCHEMA_VERSION}")
            header = record
        elif kind == "end":
            end = record
        elif kind in EVENT_KINDS:
            missing = [key for key in EVENT_KINDS[kind] if key not in record]
            if missing:
                raise TraceFormatError(f"{where}: a {kind} event needs {', '.join(missing)}")
            if record["stage"] not in STAGES:
                raise TraceFormatError(f"{where}: unknown stage {record['stage']!r}")
            events.append(record)
        else:
            raise TraceFormatError(f"{where}: unknown record kind {kind!r}; kinds are header, "
                                   f"end, {', '.join(EVENT_KINDS)}")
    if header is None and not events:
        raise TraceFormatError(f"{path}: empty trace (no header, no events)")
    return Trace(path, header, events, end)


def trace_config(trace):
    """The :class:`Config` a trace's header names (None without a header)."""
    if trace.header is None:
        return None
    try:
        return Config.from_dict(trace.header["config"])
    except (ConfigError, TypeError) as error:
        raise TraceFormatError(f"{trace.path}: the header's configuration is invalid: "
                               f"{error}") from None
