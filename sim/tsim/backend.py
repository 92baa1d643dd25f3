"""The runtime's tsim backend: a :class:`avta.runtime.device.Backend` over :class:`.driver.Tsim`."""

import numpy as np

from avta.runtime.device import DEFAULT_DRAM_BYTES, Backend

from .driver import MemoryKnobs, Tsim

__all__ = ["TsimBackend"]


class TsimBackend(Backend):
    """The Verilated design with the harness's AXI memory model over a numpy DRAM.

    ``knobs`` set the memory model (latency, reordering, backpressure); ``max_cycles`` bounds
    every run (status ``timeout`` beyond it); ``waves`` writes an FST file.
    """

    name = "tsim"

    def __init__(self, cfg, *, dram_size=DEFAULT_DRAM_BYTES, knobs=MemoryKnobs(),
                 max_cycles=20_000_000, waves=None, verilog=None):
        self._cfg = cfg
        self._dram = np.zeros(dram_size, dtype=np.uint8)
        self._max_cycles = max_cycles
        self.sim = Tsim(cfg, knobs=knobs, waves=waves, verilog=verilog)

    @property
    def config_id(self):
        from avta.isa.registers import REGISTERS
        return self.sim.read_reg(REGISTERS["CONFIG_ID"])

    @property
    def dram_size(self):
        return self._dram.size

    @property
    def dram(self):
        return self._dram

    def write(self, addr, data):
        data = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(
            data, np.ndarray) else data.reshape(-1).view(np.uint8)
        self._dram[addr:addr + data.size] = data

    def read(self, addr, nbytes):
        return self._dram[addr:addr + nbytes].copy()

    def run(self, insn_addr, insn_count, *, bases=None):
        return self.sim.run(self._dram, insn_addr, insn_count, bases=bases,
                            max_cycles=self._max_cycles)
