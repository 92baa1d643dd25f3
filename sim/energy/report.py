"""Latency, energy and energy-delay product of a network's run, per layer and in total.

:func:`network_figures` turns a :class:`~avta.runtime.net.executor.NetworkRun` (its layers'
counters, step mixes and cycles) into the figures ``avta run``, ``avta profile`` and ``avta
sweep`` report: latency in µs at the clock, energy in µJ with its breakdown in pJ by
:data:`~.model.CATEGORIES`, and EDP in J·s (energy times latency; a network's is its total
energy times its total latency). A layer that ran on the host counts nothing.
"""

import math

from avta.errors import UserError

from .counts import EventCounts, event_counts
from .model import CATEGORIES, energy_pj

__all__ = ["network_figures", "figures", "resolve_clock", "MAX_CLOCK_MHZ", "format_summary"]

#: The highest clock ``--clock`` accepts (MHz): beyond any digital design this could be.
MAX_CLOCK_MHZ = 10_000.0


def resolve_clock(cfg, mhz=None):
    """The :class:`~avta.synth.clock.Clock` of ``cfg``: ``mhz`` (``--clock``) when given,
    checked; else :func:`~avta.synth.clock.clock_of` (avta fpga's measurement or the model)."""
    from avta.synth.clock import Clock, TimingModel, clock_of
    if mhz is None:
        return clock_of(cfg)
    if isinstance(mhz, bool) or not isinstance(mhz, (int, float)) or not math.isfinite(mhz) \
            or not 0 < mhz <= MAX_CLOCK_MHZ:
        raise UserError(f"--clock {mhz}: give the clock in MHz, above 0 and at most "
                        f"{MAX_CLOCK_MHZ:,.0f}")
    return Clock(float(mhz), "--clock", TimingModel().paths(cfg))


def figures(cfg, events, table, clock_mhz):
    """``{cycles, latency_us, energy_uj, energy_pj: {category: pJ}, edp_js}`` of ``events``."""
    pj = energy_pj(cfg, events, table, clock_mhz)
    latency_us = events.cycles / clock_mhz
    energy_uj = sum(pj.values()) * 1e-6
    return {"cycles": events.cycles, "latency_us": latency_us, "energy_uj": energy_uj,
            "energy_pj": pj, "edp_js": energy_uj * 1e-6 * latency_us * 1e-6}


def network_figures(cfg, run, table, clock_mhz):
    """``{"layers": [figures per layer, by name], "total": figures}`` of a network's run."""
    layers, total = [], EventCounts.zero()
    for layer in run.layers:
        if layer.on == "host" or not layer.counters:
            events = EventCounts.zero()
        else:
            events = event_counts(cfg, counters=layer.counters, mix=layer.mix,
                                  cycles=layer.cycles, insns=layer.insns)
        total = total + events
        layers.append({"name": layer.name} | figures(cfg, events, table, clock_mhz))
    return {"layers": layers, "total": figures(cfg, total, table, clock_mhz)}


def format_summary(total, clock, table):
    """One line for a person: clock, latency, energy with its three largest shares, EDP."""
    pj = total["energy_pj"]
    whole = sum(pj.values()) or 1.0
    shares = sorted(CATEGORIES, key=lambda c: -pj[c])[:3]
    parts = ", ".join(f"{c} {pj[c] / whole:.0%}" for c in shares)
    return (f"clock {clock.mhz:.1f} MHz ({clock.source}), latency {total['latency_us']:,.1f} µs, "
            f"energy {total['energy_uj']:,.2f} µJ ({parts}; table {table.name}), "
            f"EDP {total['edp_js']:.3g} J·s")
