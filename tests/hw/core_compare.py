"""A runtime device whose every run goes to fsim and to the RTL core (Amaranth simulator) from
the same DRAM image, through :class:`avta.sim.mirror.MirrorBackend`: they must agree byte for
byte, in status and in the exact counters."""

from avta.hw.sim.backend import CoreSimBackend
from avta.isa.config import load_config
from avta.runtime.device import Device
from avta.sim.fsim.backend import FsimBackend
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.mirror import MirrorBackend

#: DRAM of both targets: small, because the core's memory model checks every beat against it.
DRAM_BYTES = 1 << 15


def device(config="tiny", *, seed=1, **knobs):
    """A Device on fsim mirrored onto the core; the core's memory shaken by ``knobs``
    (:class:`MemoryKnobs` fields; by default short random latency, reordering, backpressure)."""
    cfg = load_config(config) if isinstance(config, str) else config
    knobs = MemoryKnobs(**{"seed": seed, "latency": (0, 6), "backpressure": 0.2,
                           "reorder": True, **knobs})
    return Device(cfg, MirrorBackend(FsimBackend(cfg, dram_size=DRAM_BYTES),
                                     CoreSimBackend(cfg, dram_size=DRAM_BYTES, knobs=knobs)))
