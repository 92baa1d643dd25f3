"""The runtime's tsim backend: a :class:`avta.runtime.device.Backend` over :class:`.driver.Tsim`."""

from avta.runtime.device import DEFAULT_DRAM_BYTES, ArrayDramBackend

from .driver import MemoryKnobs, Tsim

__all__ = ["TsimBackend"]


class TsimBackend(ArrayDramBackend):
    """The Verilated design with the harness's AXI memory model over a numpy DRAM.

    ``knobs`` set the memory model (latency, reordering, backpressure); ``max_cycles`` bounds
    every run (status ``timeout`` beyond it); ``waves`` writes an FST file.
    """

    name = "tsim"

    def __init__(self, cfg, *, dram_size=DEFAULT_DRAM_BYTES, knobs=MemoryKnobs(),
                 max_cycles=20_000_000, waves=None, verilog=None):
        super().__init__(dram_size)
        self._cfg = cfg
        self._max_cycles = max_cycles
        self.sim = Tsim(cfg, knobs=knobs, waves=waves, verilog=verilog)

    @property
    def config_id(self):
        from avta.isa.registers import REGISTERS
        return self.sim.read_reg(REGISTERS["CONFIG_ID"])

    def run(self, insn_addr, insn_count, *, bases=None):
        return self.sim.run(self._dram, insn_addr, insn_count, bases=bases,
                            max_cycles=self._max_cycles)
