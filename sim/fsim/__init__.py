"""fsim: the bit-exact behavioral model of the VTA instruction set (docs/isa.md is its specification).

>>> sim = Fsim(cfg)                                   # doctest: +SKIP
>>> result = sim.run(dram, insn_addr, insn_count)     # doctest: +SKIP

``dram`` (a bytearray or uint8 array) is modified in place; ``result`` is a
:class:`avta.runtime.backend.RunResult`. Modules: :mod:`.machine` (stages, tokens, errors,
deadlock), :mod:`.memops` (LOAD, STORE), :mod:`.gemm`, :mod:`.alu`, :mod:`.loops` (micro-op
loop nest), :mod:`.state` (scratchpads), :mod:`.dram`, :mod:`.timing` (cycle estimate),
:mod:`.events` (trace events); compiled runs, when only the result is wanted: :mod:`.compiled`
(the schedule, timing-only), :mod:`.compiled_exact` (bit-exact: :mod:`.compiled_table`,
:mod:`.compiled_checks`, :mod:`.compiled_data`), held equal to the Python machine.
"""

from .machine import SCHEDULES, TOKEN_COUNTERS, Fsim

__all__ = ["Fsim", "SCHEDULES", "TOKEN_COUNTERS"]
