"""cocotbext-axi's AXI RAM under :class:`~avta.sim.memory_knobs.MemoryKnobs`.

The RAM answers every burst in order after a fixed delay, so of the shared knobs it honours
``seed`` and ``backpressure`` (a seeded pause generator on each of its five channels); asking it
for latency, reordering or a bounded number of outstanding reads is an error rather than a knob
silently ignored. tsim's memory model has them all.
"""

import itertools
import random

from avta.sim.memory_knobs import MemoryKnobs

__all__ = ["apply_knobs", "check_knobs"]


def check_knobs(knobs):
    """Raise ``ValueError`` when ``knobs`` ask for timing the AXI RAM cannot produce."""
    plain = MemoryKnobs(seed=knobs.seed, backpressure=knobs.backpressure)
    unsupported = [name for name in ("latency", "outstanding", "reorder", "write_latency")
                   if getattr(knobs, name) != getattr(plain, name)]
    if unsupported:
        raise ValueError(f"cocotbext-axi's AXI RAM answers in order after a fixed delay: it "
                         f"takes seed and backpressure only, not {', '.join(unsupported)}; "
                         f"use tsim for those")


def _pauses(rng, probability):
    return (rng.random() < probability for _ in itertools.count())


def apply_knobs(ram, knobs):
    """Set ``ram``'s channels (an ``AxiRam``) to hold off with ``knobs.backpressure``."""
    check_knobs(knobs)
    if not knobs.backpressure:
        return
    channels = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                ram.read_if.ar_channel, ram.read_if.r_channel)
    for index, channel in enumerate(channels):
        rng = random.Random(f"{knobs.seed}:{index}")
        channel.set_pause_generator(_pauses(rng, knobs.backpressure))
