"""Helpers of the tsim tests: devices on both targets for one configuration."""

from avta.runtime.device import Device
from avta.sim.fsim.backend import fsim_device as fsim_backend_device
from avta.sim.tsim.backend import TsimBackend
from avta.sim.memory_knobs import MemoryKnobs

#: The configurations tsim runs on in the default test run (issue 5): small, and upstream's.
TSIM_CONFIGS = ("tiny", "default")
DRAM_BYTES = 1 << 20


def tsim_device(cfg, knobs=MemoryKnobs()):
    return Device(cfg, TsimBackend(cfg, dram_size=DRAM_BYTES, knobs=knobs))


def fsim_device(cfg):
    return fsim_backend_device(cfg, dram_size=DRAM_BYTES)
