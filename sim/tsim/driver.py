"""The tsim driver: runs a DRAM image on the Verilated design through the C++ harness.

Same contract as fsim: ``Tsim(cfg).run(dram, insn_addr, insn_count, bases=...)`` modifies
``dram`` in place and returns a :class:`avta.runtime.backend.RunResult`. Scratchpads keep their
contents across runs on one object (the design is reset once, at construction). The host side
follows :mod:`avta.runtime.host`: the register writes before the launch and the reads after it
come from there, and the harness launches and polls CTRL in C++ (no Python call per cycle) with
the bits the generated header gives it.
"""

import ctypes

import numpy as np

from avta.isa.enums import Stage
from avta.isa.registers import REGISTERS
from avta.runtime.host import RESULT_REGISTERS, check_bases, launch_writes, run_result

from ..design_cache import cached_top_verilog
from ..memory_knobs import MemoryKnobs
from .build import build_library
from .harness_header import DEADLOCK_WINDOW, RunStatus, TraceStart

__all__ = ["Tsim", "TsimError"]

#: The run statuses of the harness, as the host protocol names them.
_STATUS = {RunStatus.FINISH: "ok", RunStatus.ERROR: "error", RunStatus.TIMEOUT: "timeout",
           RunStatus.DEADLOCK: "deadlock"}


class TsimError(RuntimeError):
    """The harness could not talk to the design (e.g. the register file never answered)."""


def _load(lib_path):
    lib = ctypes.CDLL(str(lib_path))
    lib.tsim_create.restype = ctypes.c_void_p
    lib.tsim_create.argtypes = [ctypes.c_char_p]
    lib.tsim_destroy.argtypes = [ctypes.c_void_p]
    lib.tsim_reset.argtypes = [ctypes.c_void_p]
    lib.tsim_waiting_stages.restype = ctypes.c_uint32
    lib.tsim_waiting_stages.argtypes = [ctypes.c_void_p]
    lib.tsim_set_knobs.argtypes = [ctypes.c_void_p, ctypes.c_uint64] + [ctypes.c_uint32] * 6
    lib.tsim_attach_dram.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
    lib.tsim_reg_write.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]
    lib.tsim_reg_read.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                  ctypes.POINTER(ctypes.c_uint32)]
    lib.tsim_run.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.tsim_pending.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(ctypes.c_uint32)] * 3
    u32p = ctypes.POINTER(ctypes.c_uint32)
    lib.tsim_trace_begin.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, u32p, u32p,
                                     u32p, u32p, ctypes.c_uint64, ctypes.c_uint32]
    lib.tsim_trace_end.argtypes = [ctypes.c_void_p]
    lib.tsim_cycle.restype = ctypes.c_uint64
    lib.tsim_cycle.argtypes = [ctypes.c_void_p]
    if hasattr(lib, "tsim_activity_begin"):     # only in libraries with the activity recorder
        lib.tsim_activity_begin.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32]
        lib.tsim_activity_end.restype = ctypes.c_uint32
        lib.tsim_activity_end.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.POINTER(ctypes.c_uint64),
                                          ctypes.POINTER(ctypes.c_uint64)]
    return lib


class Tsim:
    """One simulated accelerator.

    Parameters
    ----------
    cfg : the configuration (its ``config_id`` is checked against the design's register).
    verilog : Verilog text of the top ``vta_top``; default: generated from ``cfg`` (read from
        the cache of :mod:`avta.sim.design_cache` when it holds it).
    knobs : :class:`MemoryKnobs` of the AXI memory model.
    waves : path of a waveform file to write, ``.vcd`` or ``.fst`` by its suffix (the design is
        then built with tracing; FST needs lz4's development headers).
    trace : bool
        Generate the design with trace ports, so that :meth:`run` can write a trace
        (:mod:`avta.sim.trace.schema`). A separate build; without it the design has no
        tracing logic.
    activity : bool
        Generate the design with activity ports and compile the activity recorder in, so that
        :meth:`run_activity` can record where the cycles go (:mod:`avta.sim.activity`). A
        separate build; without it the design and the harness have neither.
    faults : set of str
        Planted bugs (:mod:`avta.hw.core.faults`), for testing the verification tools only.
    """

    def __init__(self, cfg, *, verilog=None, knobs=MemoryKnobs(), waves=None, trace=False,
                 activity=False, faults=()):
        if verilog is None:
            verilog = cached_top_verilog(cfg, trace=trace, activity=activity, faults=faults)
        elif faults:
            raise ValueError("faults are planted by the generator: give them without verilog")
        self._cfg = cfg
        self._traced = bool(trace)
        self._activity = bool(activity)
        trace = None
        if waves is not None:
            trace = str(waves).rsplit(".", 1)[-1].lower()
            if trace not in ("vcd", "fst"):
                raise ValueError(f"waveform file {waves!s} must end in .vcd or .fst")
        self._lib = _load(build_library(verilog, data_bits=cfg.axi_data_bits, trace=trace,
                                        events=self._traced, activity=self._activity))
        self._handle = self._lib.tsim_create(str(waves).encode() if waves else None)
        self.set_knobs(knobs)
        # True after a run that did not end (timeout): the core may still be working.
        self._unfinished = False

    def close(self):
        """Free the simulated design (its waveform file is flushed and closed); the object
        cannot run again. Closing twice is harmless."""
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.tsim_destroy(handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _live(self):
        if not self._handle:
            raise TsimError("this Tsim was closed; make a new one")
        return self._handle

    def reset(self):
        """Reset the design (scratchpads and registers back to zero: the Verilated model is
        made anew unless a waveform is being written) and empty the memory model, as at
        construction."""
        self._lib.tsim_reset(self._live())
        self._unfinished = False

    def set_knobs(self, knobs):
        """Set the AXI memory model's timing (:class:`MemoryKnobs`) for the next runs."""
        low, high = knobs.latency
        # The harness takes backpressure in whole percent.
        self._lib.tsim_set_knobs(self._live(), knobs.seed, low, high, knobs.outstanding,
                                 int(knobs.reorder), round(knobs.backpressure * 100),
                                 knobs.write_latency)

    @property
    def cfg(self):
        return self._cfg

    @property
    def cycle(self):
        """Cycles since the design was created."""
        return self._lib.tsim_cycle(self._live())

    def pending(self):
        """``(reads, writes, responses)`` the memory model still holds (all 0 when idle)."""
        counts = [ctypes.c_uint32() for _ in range(3)]
        self._lib.tsim_pending(self._live(), *map(ctypes.byref, counts))
        return tuple(c.value for c in counts)

    def _begin_events(self, path, mode, out_base):
        from avta.hw.core.sram import geometry
        from avta.hw.core.trace_port import TRACED_MEMORIES
        from avta.sim.trace.schema import mode_level
        if not self._traced:
            raise ValueError("this Tsim has no trace ports: make it with Tsim(cfg, trace=True)")
        level = mode_level(mode)
        # The harness's memory order (avta_harness.h) is the trace port's.
        geos = [geometry(self._cfg, name) for name in TRACED_MEMORIES]
        rows = (ctypes.c_uint32 * len(geos))(*(g.row_bits // 8 for g in geos))
        pieces = (ctypes.c_uint32 * len(geos))(*(g.en_bits for g in geos))
        writes = (ctypes.c_uint32 * len(geos))(*(g.write_rows for g in geos))
        depths = (ctypes.c_uint32 * len(geos))(*(g.depth for g in geos))
        # OUT_BASE is aligned, or the run ends with error 11 before any store.
        status = self._lib.tsim_trace_begin(self._live(), str(path).encode(), level, rows,
                                            pieces, writes, depths, out_base,
                                            self._cfg.out_elem_bytes)
        if status == TraceStart.NO_FILE:
            raise OSError(f"cannot open trace file {path} for appending")
        if status != TraceStart.STARTED:
            raise TsimError("the tsim library was built without the trace manager")

    def write_reg(self, addr, value):
        resp = self._lib.tsim_reg_write(self._live(), addr, value & 0xFFFFFFFF)
        if resp < 0:
            raise TsimError(f"register write at {addr:#x} was never answered")
        return resp

    def read_reg(self, addr):
        value = ctypes.c_uint32()
        resp = self._lib.tsim_reg_read(self._live(), addr, ctypes.byref(value))
        if resp < 0:
            raise TsimError(f"register read at {addr:#x} was never answered")
        return value.value

    def run(self, dram, insn_addr, insn_count, *, bases=None, max_cycles=10_000_000,
            events_to=None, trace_mode="arch"):
        """Run ``insn_count`` instructions at byte ``insn_addr``; ``dram`` changes in place.

        ``events_to``: a path the harness appends this run's trace events to (mode
        ``trace_mode``); the object must have been made with ``trace=True``. Header and end
        records are :func:`avta.sim.trace.record.record_trace`'s job.

        A run after one that timed out starts with :meth:`reset`: the core may still be busy with
        the old program, would ignore the launch, and would report the old run's end.
        """
        buffer = np.frombuffer(dram, dtype=np.uint8) if not isinstance(dram, np.ndarray) \
            else dram
        if buffer.dtype != np.uint8 or not buffer.flags.c_contiguous or \
                not buffer.flags.writeable:
            raise TypeError("dram must be a writable, contiguous bytearray or uint8 array")
        self._lib.tsim_attach_dram(self._live(), buffer.ctypes.data, buffer.nbytes)
        if self._unfinished:
            self.reset()
        design_id = self.read_reg(REGISTERS["CONFIG_ID"])
        if design_id != self._cfg.config_id:
            raise TsimError(f"the design reports CONFIG_ID {design_id:#010x} but the "
                            f"configuration {self._cfg.name!r} is {self._cfg.config_id:#010x}")
        for offset, value in launch_writes(insn_addr, insn_count, bases):
            self.write_reg(offset, value)
        if events_to is not None:
            self._begin_events(events_to, trace_mode, check_bases(bases)["OUT"])
        self._unfinished = True         # until the run is seen to end
        try:
            status = self._lib.tsim_run(self._handle, max_cycles)
        finally:
            if events_to is not None:
                self._lib.tsim_trace_end(self._handle)
        # A deadlocked core is still running: like a timed-out one, it is reset before reuse.
        self._unfinished = status in (RunStatus.TIMEOUT, RunStatus.DEADLOCK, RunStatus.NO_ANSWER)
        if status == RunStatus.NO_ANSWER:
            raise TsimError("the register file stopped answering during the run")
        values = {name: self.read_reg(offset) for name, offset in RESULT_REGISTERS.items()}
        detail = self._deadlock_detail() if status == RunStatus.DEADLOCK else ""
        return run_result(_STATUS[RunStatus(status)], values, max_cycles=max_cycles,
                          detail=detail)

    def run_activity(self, dram, insn_addr, insn_count, *, bases=None, bin_cycles=1,
                     max_bins=None, **run_options):
        """:meth:`run`, recording the run's activity: ``(RunResult, Activity)``.

        The harness samples the activity ports every cycle of the run (the cycles CYCLES
        counts) and bins them in C++ (``sim/tsim/activity.h``): bins start ``bin_cycles`` wide
        and double whenever the run outgrows ``max_bins`` (default
        :data:`avta.sim.activity.DEFAULT_MAX_BINS`); both are powers of two. Exact: a lane's
        ``idle`` and ``wait`` cycles add up to its IDLE_x and STALL_x counters, and all bins to
        the result's ``cycles``. The object must have been made with ``activity=True``.
        """
        from avta.sim.activity import COLUMNS, DEFAULT_MAX_BINS, bin_width, from_columns
        if not self._activity:
            raise ValueError("this Tsim has no activity ports: make it with "
                             "Tsim(cfg, activity=True)")
        max_bins = DEFAULT_MAX_BINS if max_bins is None else max_bins
        bin_width(0, bin_cycles=bin_cycles, max_bins=max_bins)       # checks both
        self._lib.tsim_activity_begin(self._live(), bin_cycles, max_bins)
        counts = np.zeros((max_bins, len(COLUMNS)), dtype=np.uint64)
        width, cycles = ctypes.c_uint64(), ctypes.c_uint64()
        try:
            result = self.run(dram, insn_addr, insn_count, bases=bases, **run_options)
        finally:
            bins = self._lib.tsim_activity_end(self._handle, counts.ctypes.data,
                                               ctypes.byref(width), ctypes.byref(cycles))
        activity = from_columns(counts[:bins].astype(np.int64), bin_cycles=width.value,
                                cycles=cycles.value)
        return result, activity

    def _deadlock_detail(self):
        """Which stages wait on a token and which have no instruction (docs/isa.md §3.5)."""
        waiting = self._lib.tsim_waiting_stages(self._handle)
        parts = [f"the {stage.name.lower()} stage "
                 + ("waits on a token" if waiting >> stage & 1 else "has no instruction")
                 for stage in Stage]
        return (f"no stage can start: {', '.join(parts)}; nothing moved on the bus for "
                f"{2 * DEADLOCK_WINDOW} cycles")

    #: The ``target`` a trace of this simulator names in its header.
    TRACE_TARGET = "tsim"

    def run_traced(self, writer, mode, dram, insn_addr, insn_count, *, bases=None,
                   **run_options):
        """:meth:`run`, with the events of ``mode`` appended to the trace that ``writer`` (a
        :class:`~avta.sim.trace.schema.TraceWriter` that has written the header) opened; the
        harness appends them itself, so the writer is closed first."""
        writer.close()
        return self.run(dram, insn_addr, insn_count, bases=bases, events_to=writer.path,
                        trace_mode=mode, **run_options)
