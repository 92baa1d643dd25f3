"""fsim's bit-exact run compiled: a whole stream's data and schedule in three numba calls.

The Python machine (:class:`~.launch.Launch`) runs one instruction at a time, and on a stream of
many small instructions (a ResNet-18 layer with small tiles) the calls around each one cost
more than its data work. When nothing but the result is wanted (bit-exact, no trace, no
activity, the in-order schedule) the run is made of three passes over the stream's fields as one
table (:mod:`.compiled_table`), each one numba call:

1. :func:`~.compiled_checks.check_stream` (:mod:`.prepare`, which timing-only runs share) makes
   the machine's checks of every instruction (and refuses whatever would wrap), runs the
   micro-op LOADs on a copy of the micro-ops, and finds for each GEMM whether its ACC rows may
   meet the ALU instruction's before it; it changes nothing else;
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

import numpy as np

from avta.isa import costs

from . import compiled, timing
from .alu import scale_widths
from .prepare import constants, prepare
from .prepare import load as prepare_kernels

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
    """:func:`~.compiled_data.execute_stream`, with the checks (:func:`.prepare.load`) and the
    compiled scheduler loaded beside it, and their machine code read from numba's disk cache
    (the first call of each reads it, which costs more than the import: it is part of loading,
    not of a run)."""
    from .compiled_data import execute_stream
    compiled.load()
    prepare_kernels()
    _warm_up(execute_stream)
    return execute_stream


def _warm_up(execute_stream):
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
    if launch._fetch() is not None or _run(launch, execute_stream) is None:
        raise AssertionError("the compiled interpreter did not run a lone FINISH")


def run(launch):
    """The :class:`~.compiled.Schedule` of the stream of ``launch`` (a
    :class:`~.launch.Launch` that has fetched a legal stream), its data work done on the
    machine's scratchpads and DRAM; or None, nothing changed, when the Python machine must run
    it (the module docstring)."""
    return _run(launch, _kernels())


def _run(launch, execute_stream):
    sim, dram, stream = launch.sim, launch.dram, launch.stream
    ready = prepare(launch, stores_write=True)
    if ready is None:
        return None
    done = compiled.schedule(compiled.stream_arrays(stream.distinct, stream.inverse, ready.meets),
                             costs.FETCH_LATENCY, sim._token_max, timing.gemm_drain(sim.cfg),
                             timing.read_start(sim.cfg, launch.insn_count))
    if done is None:
        return None
    pads, c = sim._pads, constants(sim.cfg)
    acc = pads.acc
    execute_stream(done.order, ready.table, dram.data, ready.base_of, c.elem_of, c.pad_rows,
                   pads.raw("uop"), pads.uop, c.shift, c.mask, pads.raw("inp"), pads.raw("wgt"),
                   pads.raw("acc"), pads.raw("out"), pads.inp, pads.wgt, acc,
                   acc.reshape(acc.shape[0], -1), *scale_widths(sim.cfg))
    pads.written_in_place()
    return done
