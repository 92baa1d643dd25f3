"""The runtime's fsim backend: a :class:`avta.runtime.backend.Backend` over :class:`.Fsim`."""

from avta.runtime.backend import DEFAULT_DRAM_BYTES, ArrayDramBackend
from avta.runtime.device import Device

from .machine import Fsim

__all__ = ["FsimBackend", "fsim_device"]


class FsimBackend(ArrayDramBackend):
    """The behavioral model (``avta.sim.fsim.Fsim``) over a numpy DRAM.

    ``strict`` is on by default: the runtime builds well-formed programs only, so an index past a
    scratchpad's end is a runtime bug that should stop the run (error 10, docs/isa.md §3). ``schedule``
    and ``seed`` pick fsim's stage interleaving (``"random"`` exposes missing tokens).
    ``activity`` records every run's estimated activity (:meth:`Fsim.run_activity`) in
    ``last_activity``; a dict gives its options (``bin_cycles``, ``max_bins``).
    ``timing_only`` computes no data (:class:`Fsim`'s timing-only mode): the same results,
    counters and activity, but what the device reads back from DRAM is not the program's output.
    """

    name = "fsim"

    def __init__(self, cfg, *, dram_size=DEFAULT_DRAM_BYTES, strict=True, schedule="inorder",
                 seed=None, trace=None, activity=False, timing_only=False):
        super().__init__(dram_size)
        self._cfg = cfg
        self._activity = dict(activity) if isinstance(activity, dict) else \
            ({} if activity else None)
        #: The :class:`~avta.sim.activity.Activity` of the last run, when recording.
        self.last_activity = None
        kwargs = {} if trace is None else {"trace": trace}
        self.sim = Fsim(cfg, strict=strict, schedule=schedule, seed=seed,
                        timing_only=timing_only, **kwargs)

    @property
    def config_id(self):
        return self.sim.cfg.config_id

    def run_options(self):
        """Keyword arguments every ``self.sim.run`` gets (for traced runs)."""
        return {}

    def run(self, insn_addr, insn_count, *, bases=None):
        if self._activity is not None:
            result, self.last_activity = self.sim.run_activity(
                self._dram, insn_addr, insn_count, bases=bases, **self._activity)
            return result
        return self.sim.run(self._dram, insn_addr, insn_count, bases=bases)


def fsim_device(cfg, **options):
    """A :class:`~avta.runtime.device.Device` on the behavioral model; ``options`` go to
    :class:`FsimBackend`."""
    return Device(cfg, FsimBackend(cfg, **options))
