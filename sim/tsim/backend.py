"""The runtime's tsim backend: a :class:`avta.runtime.device.Backend` over :class:`.driver.Tsim`."""

from avta.runtime.backend import DEFAULT_DRAM_BYTES, ArrayDramBackend

from ..memory_knobs import MemoryKnobs
from .driver import Tsim

__all__ = ["TsimBackend"]


class TsimBackend(ArrayDramBackend):
    """The Verilated design with the harness's AXI memory model over a numpy DRAM.

    ``knobs`` set the memory model (latency, reordering, backpressure); ``max_cycles`` bounds
    every run (status ``timeout`` beyond it); ``waves`` writes an FST file; ``trace`` builds
    the design with trace ports (for traced runs, e.g. :class:`avta.sim.mirror.MirrorBackend`);
    ``faults`` plants bugs (:mod:`avta.hw.core.faults`, tests of the verification tools only).
    ``activity`` builds the design with activity ports and records every run's activity
    (:meth:`Tsim.run_activity`) in ``last_activity``; a dict gives its options (``bin_cycles``,
    ``max_bins``).
    """

    name = "tsim"

    def __init__(self, cfg, *, dram_size=DEFAULT_DRAM_BYTES, knobs=MemoryKnobs(),
                 max_cycles=20_000_000, waves=None, verilog=None, trace=False, activity=False,
                 faults=()):
        super().__init__(dram_size)
        self._cfg = cfg
        self._max_cycles = max_cycles
        self._activity = dict(activity) if isinstance(activity, dict) else \
            ({} if activity else None)
        #: The :class:`~avta.sim.activity.Activity` of the last run, when recording.
        self.last_activity = None
        self.sim = Tsim(cfg, knobs=knobs, waves=waves, verilog=verilog, trace=trace,
                        activity=self._activity is not None, faults=faults)

    def run_options(self):
        """Keyword arguments every ``self.sim.run`` gets (for traced runs)."""
        return {"max_cycles": self._max_cycles}

    @property
    def config_id(self):
        from avta.isa.registers import REGISTERS
        return self.sim.read_reg(REGISTERS["CONFIG_ID"])

    def run(self, insn_addr, insn_count, *, bases=None):
        if self._activity is not None:
            result, self.last_activity = self.sim.run_activity(
                self._dram, insn_addr, insn_count, bases=bases, max_cycles=self._max_cycles,
                **self._activity)
            return result
        return self.sim.run(self._dram, insn_addr, insn_count, bases=bases,
                            max_cycles=self._max_cycles)
