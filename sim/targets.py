"""The simulation targets every command runs on, made in one place, and the networks they run.

A *target* is where a program runs: ``fsim`` (the behavioral model, the reference), ``tsim``
(the Verilated RTL), ``cocotb`` (the Verilated RTL under cocotb) or ``amaranth`` (the RTL in
Amaranth's simulator). :func:`make_backend` turns a target's name and options into the
runtime's :class:`~avta.runtime.backend.Backend`, :func:`make_device` into a
:class:`~avta.runtime.device.Device` on it (``avta run``, ``profile``, ``sweep``, the
benchmarks), and :func:`make_simulator` into the bare simulator that ``avta exec`` drives over a
raw DRAM image. :func:`load_network` turns a network's name into its graph (a builder or a
network file), checking its seed and, given a configuration, that it fits the device's DRAM.
"""

from pathlib import Path

from avta.errors import UserError

__all__ = ["TARGETS", "MAX_SEED", "make_backend", "make_device", "make_simulator",
           "load_network", "check_seed"]

#: Every target's name, as commands and tests spell it.
TARGETS = ("fsim", "tsim", "cocotb", "amaranth")
#: The largest seed: numpy's generators take any integer from 0, and 32 bits are plenty.
MAX_SEED = (1 << 32) - 1
#: tsim's cycle limit for a whole-network run: a program that long is a hang, not a layer.
NETWORK_MAX_CYCLES = 1 << 40


def _check_target(target, allowed=TARGETS):
    if target not in allowed:
        raise UserError(f"target {target!r}: use one of {', '.join(allowed)}")


def make_simulator(cfg, target, *, strict=True, trace=False, knobs=None):
    """The bare simulator of ``target`` (``fsim`` or ``tsim``) that runs a DRAM image:
    :class:`~avta.sim.fsim.Fsim` (``strict`` stops at an out-of-range index) or
    :class:`~avta.sim.tsim.driver.Tsim` (built with trace ports when ``trace``, its memory
    model set by ``knobs``)."""
    _check_target(target, ("fsim", "tsim"))
    if target == "tsim":
        from avta.sim.tsim.driver import Tsim
        sim = Tsim(cfg, trace=bool(trace))
        if knobs is not None:
            sim.set_knobs(knobs)
        return sim
    from avta.sim.fsim import Fsim
    return Fsim(cfg, strict=strict)


def make_backend(cfg, target, dram_size, *, activity=False, timing_only=False, **options):
    """The runtime backend of ``target`` with ``dram_size`` bytes of DRAM. ``activity`` (True
    or the options dict) records each run's :class:`~avta.sim.activity.Activity` in
    ``backend.last_activity`` (fsim and tsim); ``timing_only`` runs fsim's timing-only mode (no
    data computed). Other ``options`` go to the backend's constructor (``max_cycles``,
    ``knobs``, ``trace``, …)."""
    _check_target(target)
    if timing_only and target != "fsim":
        raise UserError(f"--timing-only is a mode of fsim (its cycle model without the data); "
                        f"--target {target} counts cycles by running the data")
    if activity and target not in ("fsim", "tsim"):
        raise UserError(f"activity is recorded on fsim and tsim, not on {target}")
    if target == "tsim":
        from avta.sim.tsim.backend import TsimBackend
        options.setdefault("max_cycles", NETWORK_MAX_CYCLES)
        return TsimBackend(cfg, dram_size=dram_size, activity=activity, **options)
    if target == "cocotb":
        from avta.sim.cocotb.backend import CocotbBackend
        return CocotbBackend(cfg, dram_size=dram_size, **options)
    if target == "amaranth":
        from avta.sim.amaranth.backend import CoreSimBackend
        return CoreSimBackend(cfg, dram_size=dram_size, **options)
    from avta.sim.fsim.backend import FsimBackend
    return FsimBackend(cfg, dram_size=dram_size, activity=activity, timing_only=timing_only,
                       **options)


def make_device(cfg, target, dram_size, **options):
    """A :class:`~avta.runtime.device.Device` of ``cfg`` on ``target`` (:func:`make_backend`
    takes the options)."""
    from avta.runtime.device import Device
    return Device(cfg, make_backend(cfg, target, dram_size, **options))


def check_seed(seed, what="--seed"):
    """``seed``, or a :class:`UserError` when it is not an integer from 0 to :data:`MAX_SEED`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserError(f"{what} {seed!r}: give a seed from 0 to {MAX_SEED}")
    return seed


def load_network(name, input_size, seed, cfg=None, *, timing_only=False):
    """The :class:`~avta.runtime.net.graph.Graph` named ``name``: a builder or a YAML path.
    With ``cfg``, a network too large for the device's DRAM on it is refused before anything
    large is made (a builder's calibration runs the whole network). ``timing_only``: a
    builder's network for a run that computes no data, its weights zero
    (:func:`~avta.runtime.net.builders.timing_graph`: the same programs and cycles)."""
    from avta.runtime.net import BUILDERS, GraphError, build, load
    from avta.runtime.net.builders import calibrated, timing_graph
    from avta.runtime.net.executor import check_dram
    check_seed(seed)
    if name in BUILDERS:
        try:
            size = 224 if input_size is None else input_size
            graph = build(name, input_size=size, seed=seed, calibrate=False,
                          weights=not timing_only)
            if cfg is not None:
                check_dram(cfg, graph)
            if timing_only:
                return timing_graph(name, input_size=size, seed=seed, skeleton=graph)
            return calibrated(graph, seed)
        except GraphError as error:
            raise UserError(f"--input-size {input_size}: {error}") from None
    path = Path(name)
    if path.suffix not in (".yaml", ".yml"):
        raise UserError(f"network {name!r} is neither a builder ({', '.join(BUILDERS)}) nor a "
                        f"network file (.yaml, docs/network-format.md)")
    if input_size is not None:
        raise UserError("--input-size is for the built-in networks; a network file has its "
                        "own input shape")
    if not path.is_file():
        raise UserError(f"network file {name} does not exist")
    graph = load(path)
    if cfg is not None:
        check_dram(cfg, graph)
    return graph
