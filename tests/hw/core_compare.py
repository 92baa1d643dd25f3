"""A runtime backend that runs every program on fsim and on the RTL core (Amaranth simulator)
from the same DRAM image and checks that they agree byte for byte."""

import numpy as np

from avta.hw.sim.backend import CoreSimBackend
from avta.isa.config import load_config
from avta.isa.registers import BYTE_COUNTERS, STEP_COUNTERS
from avta.runtime.device import Device
from avta.sim.fsim import Fsim


class ComparingBackend(CoreSimBackend):
    """Runs every program on fsim and on the core and checks that they agree."""

    name = "fsim+amaranth"

    def __init__(self, cfg, **knobs):
        super().__init__(cfg, dram_size=1 << 15, **knobs)
        self._cfg = cfg
        self.runs = []

    def run(self, insn_addr, insn_count, *, bases=None):
        ref = self.dram.copy()
        want = Fsim(self._cfg, strict=True).run(ref, insn_addr, insn_count, bases=bases)
        got = super().run(insn_addr, insn_count, bases=bases)
        assert (got.status, got.error_code, got.error_insn) == \
            (want.status, want.error_code, want.error_insn), f"core {got} != fsim {want}"
        for name in BYTE_COUNTERS + STEP_COUNTERS:
            assert got.counters[name] == want.counters[name], name
        diff = np.flatnonzero(self.dram != ref)
        assert diff.size == 0, (f"DRAM differs at {diff.size} bytes, first at 0x{int(diff[0]):x}:"
                                f" core {self.dram[diff[:8]]} fsim {ref[diff[:8]]}")
        self.runs.append(got)
        return got


def device(config="tiny", **knobs):
    """A runtime Device whose runs are checked fsim against the core; memory-model knobs."""
    cfg = load_config(config) if isinstance(config, str) else config
    knobs = {"latency": (0, 6), "stall": 0.2, "reorder": True, **knobs}
    return Device(cfg, ComparingBackend(cfg, **knobs))
