"""Helpers of the runtime tests: the configurations the issue names, devices, random data."""

import numpy as np

from avta.runtime.device import Device, FsimBackend
from avta.runtime.wellformed import check_wellformed

#: The configurations every runtime test runs on (issue 3): small, upstream's, two batch rows and
#: a rectangular GEMM core.
RUNTIME_CONFIGS = ("tiny", "default", "batch2", "rect")


class CheckedDevice(Device):
    """A device that first proves every program well-formed (ISA.md §3 rules (a)-(e)) with the
    independent checker, then runs it."""

    def run(self, program, **kwargs):
        check_wellformed(program, raise_error=True)
        return super().run(program, **kwargs)


def fsim_device(cfg, *, schedule="inorder", seed=None, dram_size=1 << 20):
    return CheckedDevice(cfg, FsimBackend(cfg, dram_size=dram_size, schedule=schedule,
                                          seed=seed))


def int8(rng, shape, lo=-128, hi=128):
    return rng.integers(lo, hi, shape, dtype=np.int8)
