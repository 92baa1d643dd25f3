"""Trace events fsim emits, one dict per event, handed to a callable.

The schema is :mod:`avta.sim.trace.schema` (docs/architecture.md, traces). Every event has
``kind``, ``stage`` (``load``, ``compute``, ``store``) and ``insn`` (the instruction's index in
the stream):

- ``{"kind": "retire", ...}``: the instruction completed (after its tokens were pushed);
- ``{"kind": "sram", "memory": "uop"|"inp"|"wgt"|"acc", "index": row, "data": hex}``: one whole
  scratchpad row written (``arch`` mode); ``data`` is the row's bytes in DRAM element order
  (ACC lanes little-endian), as ``bytes.hex()``. The OUT mirror is implied and not traced;
- ``{"kind": "dram", "address": byte address, "data": hex}``: one DRAM element written by a
  STORE (``arch`` mode).

Events of one instruction come in the order fsim writes them; GEMM and ALU emit one ``sram``
event per micro-op step, with the value that step wrote.
"""

from avta.sim.trace.schema import MODES, STAGES, canonical_mode

__all__ = ["Tracer", "TRACE_MODES", "STAGE_NAMES"]

#: The modes (``full`` adds per-cycle activity on tsim and is ``arch`` on fsim) and stage names
#: of the trace schema.
TRACE_MODES = MODES
STAGE_NAMES = STAGES


class Tracer:
    """Turns fsim's writes into events for ``sink``; only built when a trace is asked for."""

    def __init__(self, sink, mode):
        mode = canonical_mode(mode)      # a clear error for an unknown mode
        if not callable(sink):
            raise TypeError(f"trace must be a callable taking one event dict, got {sink!r}")
        self._sink = sink
        self.arch = mode != "retire"

    def retire(self, stage, insn):
        self._sink({"kind": "retire", "stage": STAGE_NAMES[stage], "insn": insn})

    def row_writer(self, stage, insn):
        """A ``(memory, rows, data)`` callback for the executors, or None in retire mode."""
        if not self.arch:
            return None
        stage_name = STAGE_NAMES[stage]

        def rows_written(memory, rows, data):
            for row, row_bytes in zip(rows.tolist(), data):
                self._sink({"kind": "sram", "stage": stage_name, "insn": insn,
                            "memory": memory, "index": row, "data": row_bytes.tobytes().hex()})
        return rows_written

    def dram_writer(self, stage, insn):
        """A ``(addresses, data)`` callback for STORE, or None in retire mode."""
        if not self.arch:
            return None
        stage_name = STAGE_NAMES[stage]

        def elements_written(addresses, data):
            for address, elem in zip(addresses.tolist(), data):
                self._sink({"kind": "dram", "stage": stage_name, "insn": insn,
                            "address": address, "data": elem.tobytes().hex()})
        return elements_written
