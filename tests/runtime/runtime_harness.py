"""Helpers of the runtime tests: the configurations the issue names, devices, random data."""

import numpy as np

from avta.runtime.device import Device

#: The configurations every runtime test runs on (issue 3): small, upstream's, two batch rows and
#: a rectangular GEMM core.
RUNTIME_CONFIGS = ("tiny", "default", "batch2", "rect")


def fsim_device(cfg, *, schedule="inorder", seed=None, dram_size=1 << 20):
    return Device.fsim(cfg, dram_size=dram_size, schedule=schedule, seed=seed)


def int8(rng, shape, lo=-128, hi=128):
    return rng.integers(lo, hi, shape, dtype=np.int8)
