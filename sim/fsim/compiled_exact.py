"""fsim's bit-exact run compiled: a whole stream's data and schedule in three numba calls.

The Python machine (:class:`~.launch.Launch`) runs one instruction at a time, and on a stream of
many small instructions (a ResNet-18 layer with small tiles) the calls around each one cost
more than its data work. When nothing but the result is wanted (bit-exact, no trace, no
activity, the in-order schedule) the run is made of three passes over the stream's fields as one
table (:mod:`.compiled_table`), each one numba call:

1. :func:`~.compiled_checks.check_stream` makes the machine's checks of every instruction (and
   refuses whatever would wrap), runs the micro-op LOADs on a copy of the micro-ops, and finds
   for each GEMM whether its ACC rows may meet the ALU instruction's before it; it changes
   nothing else;
2. :func:`~.compiled.schedule`, the compiled scheduler timing-only runs use, gives the cycles,
   stall and busy figures and the order the instructions run in;
3. :func:`~.compiled_data.execute_stream` runs the data work of every instruction in that order.

A stream the first pass refuses, or that does not run whole to FINISH (a deadlock, a token
counter overflow, instructions after FINISH), is left untouched and goes to the Python machine,
the reference, which says what went wrong (or wraps, in non-strict mode). The Python machine
stays the specification: tests/sim/fsim/test_fsim_compiled_exact.py holds the two equal, every
scratchpad and DRAM byte, the cycles and counters, on the fuzzer's random legal programs and
on the layers of ResNet-18.

Loading the kernels (importing numba, reading their machine code from numba's disk cache beside
these files) takes about 0.6 s of CPU once a process (the first use after installing compiles
them instead, about 9 s, once); ``Fsim.compiled = "auto"`` turns to them once the Python
machine has spent :data:`BREAK_EVEN_SECONDS` on bit-exact runs in the process.
"""

import functools
from typing import NamedTuple

import numpy as np

from avta.isa import costs
from avta.isa.enums import MemType, PadValue
from avta.isa.layout import layouts
from avta.isa.memories import memory, scratchpad

from . import compiled
from .alu import scale_widths
from .compiled_table import FIELDS, placement
from .prepare import by_type

__all__ = ["run", "wanted", "load", "ran_in_python", "BREAK_EVEN_SECONDS"]

#: CPU seconds of bit-exact runs in the Python machine after which ``"auto"`` loads the compiled
#: interpreter: twice what loading it costs (:func:`load`, 0.6 s), so that one ``avta run`` of
#: ResNet-18 at 224 (about 1.1 s of device runs in Python) never pays it (loaded half-way, it
#: cost that command 0.4 s more than it saved); a process that runs more (a sweep worker, the
#: bench) turns to it after a network or two, and never spends more than about 2.5 times what
#: the better of the two would have.
BREAK_EVEN_SECONDS = 1.2

_python_seconds = 0.0


def ran_in_python(seconds):
    """Count ``seconds`` of CPU a bit-exact run spent in the Python machine."""
    global _python_seconds
    _python_seconds += seconds


def wanted():
    """Whether ``"auto"`` runs a bit-exact stream compiled now: the kernels are loaded, or the
    Python machine has spent :data:`BREAK_EVEN_SECONDS` on bit-exact runs in this process."""
    return _kernels.cache_info().currsize > 0 or _python_seconds >= BREAK_EVEN_SECONDS


def load():
    """Load the compiled interpreter now (a caller that knows it will run many streams)."""
    _kernels()


@functools.cache
def _kernels():
    """``(fill_table, check_stream, execute_stream)``, with the compiled scheduler loaded
    beside them, and their machine code read from numba's disk cache (the first call of each
    reads it, which costs more than the import: it is part of loading, not of a run)."""
    from .compiled_checks import check_stream, fill_table
    from .compiled_data import execute_stream
    compiled.load()
    kernels = fill_table, check_stream, execute_stream
    _warm_up(kernels)
    return kernels


def _warm_up(kernels):
    """Run a lone FINISH on the kernels, through :func:`run` as every stream goes (a fresh
    machine of the smallest shipped configuration)."""
    from avta.isa.config import load_config
    from avta.isa.encoding import INSN_BYTES, codec, finish
    from .dram import Dram
    from .launch import Launch
    from .machine import Fsim
    cfg = load_config("tiny")
    dram = np.zeros(INSN_BYTES, np.uint8)
    dram[:] = np.frombuffer(codec(cfg).encode_bytes(finish()), np.uint8)
    launch = Launch(Fsim(cfg), Dram(dram), 0, 1)
    if launch._fetch() is not None or _run(launch, kernels) is None:
        raise AssertionError("the compiled interpreter did not run a lone FINISH")


class _Constants(NamedTuple):
    """What the kernels need of a configuration, as arrays by memory type number."""
    base_names: list        # the base register's key of each memory type (None: no type)
    elem_of: np.ndarray     # element bytes
    depth_of: np.ndarray    # scratchpad rows
    pad_rows: np.ndarray    # [type, pad_value]: the bytes of a LOAD's padding row
    shift: np.ndarray       # where the micro-op fields (dst, src, wgt) lie in a word
    mask: np.ndarray
    bank_rows: int          # rows of one ACC bank (timing.banks_meet)
    scale_widths: tuple     # SCL's multiplier width W and an immediate's shift (alu.py)


@functools.lru_cache(maxsize=None)
def _constants(cfg):
    base_names, elem_of, depth_of = by_type(cfg)
    lay = layouts(cfg)
    pad_values = 1 << next(width for name, _, width in lay.fields(lay.memory)
                           if name == "pad_value")
    row_bytes = max(memory(cfg, t).scratchpad.row_bytes for t in MemType)
    pad_rows = np.zeros((len(base_names), pad_values, row_bytes), np.uint8)
    for mtype in MemType:
        if mtype == MemType.OUT:        # never LOADed (docs/isa.md §3.5)
            continue
        for value in PadValue:      # another value is illegal (docs/isa.md §3.5)
            row = np.frombuffer(memory(cfg, mtype).pad_row(value), np.uint8)
            pad_rows[mtype, value, :row.size] = row
    uop = list(lay.fields(lay.uop))
    return _Constants(base_names, elem_of, depth_of, pad_rows,
                      np.array([offset for _, offset, _ in uop], np.int64),
                      np.array([(1 << width) - 1 for _, _, width in uop], np.int64),
                      scratchpad(cfg, "acc").bank_rows, scale_widths(cfg))


def run(launch):
    """The :class:`~.compiled.Schedule` of the stream of ``launch`` (a
    :class:`~.launch.Launch` that has fetched a legal stream), its data work done on the
    machine's scratchpads and DRAM; or None, nothing changed, when the Python machine must run
    it (the module docstring)."""
    return _run(launch, _kernels())


def _run(launch, kernels):
    fill_table, check_stream, execute_stream = kernels
    sim, dram, stream = launch.sim, launch.dram, launch.stream
    pads, c = sim._pads, _constants(sim.cfg)
    table = np.empty((len(FIELDS), len(stream)), np.int64)
    fill_table(stream.words, *placement(sim.cfg), table)
    base_of = np.array([dram.bases[name] if name else 0 for name in c.base_names], np.int64)
    uop_copy = pads.raw("uop").copy()
    meets = np.empty(len(stream), np.int64)
    refused = check_stream(table, dram.data, base_of, c.elem_of, c.depth_of, c.pad_rows,
                           uop_copy, uop_copy.view(pads.uop.dtype).reshape(-1), c.shift, c.mask,
                           c.bank_rows, meets)
    if refused >= 0:
        return None
    done = compiled.schedule(compiled.stream_arrays(stream.distinct, stream.inverse, meets),
                             costs.FETCH_LATENCY, sim._token_max)
    if done is None:
        return None
    acc = pads.acc
    execute_stream(done.order, table, dram.data, base_of, c.elem_of, c.pad_rows, pads.raw("uop"),
                   pads.uop, c.shift, c.mask, pads.raw("inp"), pads.raw("wgt"), pads.raw("acc"),
                   pads.raw("out"), pads.inp, pads.wgt, acc, acc.reshape(acc.shape[0], -1),
                   *c.scale_widths)
    pads.written_in_place()
    return done
