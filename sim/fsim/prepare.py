"""Before a compiled run, timing-only (:mod:`.compiled`) or bit-exact (:mod:`.compiled_exact`):
the stream's fields as one table (:mod:`.compiled_table`) and the machine's own work on its
instructions, in one numba pass (:func:`~.compiled_checks.check_stream`):

- every check the Python machine makes as it runs (DRAM windows, error 9; scratchpad rows and
  GEMM/ALU indices, error 10), refusing besides whatever would wrap;
- the micro-op LOADs, run in stream order (the compute stage's, the only stage that reads or
  writes micro-ops) on a copy of the micro-op scratchpad;
- ``meets``: for each GEMM, whether its ACC rows may meet those of the compute stage's last ALU
  instruction before it (:func:`~.timing.banks_meet`), with the micro-ops of the time.

A kernel's checks and ACC row bounds thus exist twice: in the Python machine, one kernel at a
time (:mod:`.gemm`, :mod:`.alu`, :func:`~.timing.acc_row_bounds`), the reference, and in that
pass; tests/sim/fsim/test_fsim_compiled.py and test_fsim_compiled_exact.py hold the two equal. A
stream the pass refuses is left untouched and goes to the Python machine, which says what went
wrong (or wraps, in non-strict mode).

Loading the pass (importing numba, reading its machine code from numba's disk cache) happens on
first use (:func:`load`).
"""

import functools
from typing import NamedTuple

import numpy as np

from avta.isa.enums import MemType, PadValue
from avta.isa.layout import layouts
from avta.isa.memories import memory, scratchpad

from .compiled_table import FIELDS, placement

__all__ = ["Prepared", "prepare", "load"]


class Prepared(NamedTuple):
    """A stream the compiled passes may run whole, prepared."""
    table: np.ndarray       # its fields (compiled_table), a column per instruction
    base_of: np.ndarray     # each memory type's base register, by type number
    uop: np.ndarray         # the micro-op scratchpad's bytes after its micro-op LOADs (a copy)
    meets: np.ndarray       # int64 per instruction: 0 for a GEMM that may run beside the ALU


@functools.cache
def load():
    """``(fill_table, check_stream)``, loaded (a caller that knows it will run many streams
    loads them before timing anything)."""
    from .compiled_checks import check_stream, fill_table
    return fill_table, check_stream


class Constants(NamedTuple):
    """What the compiled passes need of a configuration, as arrays by memory type number."""
    base_names: list        # the base register's key of each memory type (None: no type)
    elem_of: np.ndarray     # element bytes
    depth_of: np.ndarray    # scratchpad rows
    pad_rows: np.ndarray    # [type, pad_value]: the bytes of a LOAD's padding row
    shift: np.ndarray       # where the micro-op fields (dst, src, wgt) lie in a word
    mask: np.ndarray
    bank_rows: int          # rows of one ACC bank (timing.banks_meet)


@functools.lru_cache(maxsize=None)
def constants(cfg):
    """The :class:`Constants` of ``cfg``."""
    size = 1 + max(MemType)
    base_names = [None] * size
    elem_of, depth_of = np.zeros(size, np.int64), np.zeros(size, np.int64)
    for mtype in MemType:
        info = memory(cfg, mtype)
        base_names[mtype] = info.base
        elem_of[mtype], depth_of[mtype] = info.elem_bytes, info.scratchpad.depth
    lay = layouts(cfg)
    pad_values = 1 << next(width for name, _, width in lay.fields(lay.memory)
                           if name == "pad_value")
    row_bytes = max(memory(cfg, t).scratchpad.row_bytes for t in MemType)
    pad_rows = np.zeros((size, pad_values, row_bytes), np.uint8)
    for mtype in MemType:
        if mtype == MemType.OUT:        # never LOADed (docs/isa.md §3.5)
            continue
        for value in PadValue:      # another value is illegal (docs/isa.md §3.5)
            row = np.frombuffer(memory(cfg, mtype).pad_row(value), np.uint8)
            pad_rows[mtype, value, :row.size] = row
    uop = list(lay.fields(lay.uop))
    return Constants(base_names, elem_of, depth_of, pad_rows,
                     np.array([offset for _, offset, _ in uop], np.int64),
                     np.array([(1 << width) - 1 for _, _, width in uop], np.int64),
                     scratchpad(cfg, "acc").bank_rows)


def prepare(launch, *, stores_write):
    """The stream of ``launch`` (a :class:`~.launch.Launch` that has fetched a legal stream)
    :class:`Prepared`, or None when the Python machine must run it (the module docstring);
    nothing of the machine changes. ``stores_write``: whether the run's STOREs write DRAM (a
    bit-exact run's do, so a micro-op LOAD of bytes a STORE may write is refused: the copy reads
    DRAM as it was at launch; a timing-only run's write nothing)."""
    fill_table, check_stream = load()
    sim, dram, stream = launch.sim, launch.dram, launch.stream
    pads, c = sim._pads, constants(sim.cfg)
    table = np.empty((len(FIELDS), len(stream)), np.int64)
    fill_table(stream.words, *placement(sim.cfg), table)
    base_of = np.array([dram.bases[name] if name else 0 for name in c.base_names], np.int64)
    uop = pads.raw("uop").copy()
    meets = np.empty(len(stream), np.int64)
    refused = check_stream(table, dram.data, base_of, c.elem_of, c.depth_of, c.pad_rows, uop,
                           uop.view(pads.uop.dtype).reshape(-1), c.shift, c.mask, c.bank_rows,
                           stores_write, meets)
    return None if refused >= 0 else Prepared(table, base_of, uop, meets)
