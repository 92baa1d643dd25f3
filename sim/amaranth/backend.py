"""A runtime backend (:class:`avta.runtime.device.Backend`) that runs programs on the RTL core in
the Amaranth simulator, so operators built by the runtime run unchanged on the RTL.

It is slow (the Python simulator): use the ``tiny`` configuration and small operators.
"""

import numpy as np

from avta.runtime.backend import ArrayDramBackend
from avta.sim.memory_knobs import MemoryKnobs

from .core_run import run_core

__all__ = ["CoreSimBackend"]


class CoreSimBackend(ArrayDramBackend):
    """The core of ``cfg`` with the DRAM model (:class:`avta.sim.amaranth.dram.DramModel`).

    Parameters
    ----------
    dram_size : int
        Bytes of DRAM (keep it small: the model checks every beat against it).
    max_cycles : int
        A run that has not ended by then returns status ``timeout``.
    knobs : MemoryKnobs
        The memory model's timing.
    """

    name = "amaranth"

    def __init__(self, cfg, *, dram_size=1 << 16, max_cycles=200_000, knobs=MemoryKnobs()):
        super().__init__(dram_size)
        self._cfg = cfg
        self._max_cycles = max_cycles
        self._knobs = knobs

    @property
    def config_id(self):
        return self._cfg.config_id

    def run(self, insn_addr, insn_count, *, bases=None):
        image = bytearray(self._dram.tobytes())
        result = run_core(self._cfg, image, insn_addr, insn_count, bases=bases,
                          max_cycles=self._max_cycles, knobs=self._knobs)
        self._dram[:] = np.frombuffer(bytes(image), dtype=np.uint8)
        return result
