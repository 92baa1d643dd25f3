"""Helpers of the runtime tests: the configurations the issue names, devices, random data.

On the configurations in :data:`MIRRORED_CONFIGS` every program also runs on tsim, with the
memory model's random latency, reordering and backpressure, and the final DRAM, status and
exact counters must equal fsim's (issue 5), and so must the two traces in ``arch`` mode: every
scratchpad row and DRAM element each instruction writes (issue 6). ``AVTA_TSIM_MIRROR=0`` turns
the mirror off for a quick fsim-only run; ``AVTA_MIRROR_TRACE=0`` keeps the mirror but skips the
traces.
"""

import os

import numpy as np

from avta.runtime.device import Device
from avta.sim.fsim.backend import FsimBackend
from avta.runtime.wellformed import check_wellformed

#: The configurations every runtime test runs on (issue 3): small, upstream's, two batch rows and
#: a rectangular GEMM core.
RUNTIME_CONFIGS = ("tiny", "default", "batch2", "rect")
#: The configurations whose programs also run on tsim.
MIRRORED_CONFIGS = ("tiny", "default")


class CheckedDevice(Device):
    """A device that first proves every program well-formed (docs/isa.md §3 rules (a)-(e)) with the
    independent checker, then runs it."""

    def run(self, program, **kwargs):
        check_wellformed(program, raise_error=True)
        return super().run(program, **kwargs)


def fsim_device(cfg, *, schedule="inorder", seed=None, dram_size=1 << 20):
    """A checked device on fsim, mirrored onto tsim for :data:`MIRRORED_CONFIGS`."""
    backend = FsimBackend(cfg, dram_size=dram_size, schedule=schedule, seed=seed)
    if cfg.name in MIRRORED_CONFIGS and os.environ.get("AVTA_TSIM_MIRROR", "1") != "0":
        from avta.sim.mirror import MirrorBackend
        from avta.sim.tsim.backend import TsimBackend
        from avta.sim.tsim.driver import MemoryKnobs
        knobs = MemoryKnobs.random(seed=0 if seed is None else seed)
        traced = os.environ.get("AVTA_MIRROR_TRACE", "1") != "0"
        backend = MirrorBackend(backend, TsimBackend(cfg, dram_size=dram_size, knobs=knobs,
                                                     trace=traced),
                                trace_mode="arch" if traced else None)
    return CheckedDevice(cfg, backend)


def int8(rng, shape, lo=-128, hi=128):
    return rng.integers(lo, hi, shape, dtype=np.int8)
