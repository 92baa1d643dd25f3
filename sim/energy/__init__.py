"""Energy per inference: event counts of a run (:mod:`.counts`) times a technology table of
energy per event (:mod:`.table`), plus leakage over the run's time (:mod:`.model`); and the
figures a designer decides on, latency, energy and their product, per layer and per network
(:mod:`.report`). docs/cli.md, energy, says what is counted and where the numbers come from."""

from .counts import EventCounts, event_counts
from .model import CATEGORIES, energy_pj, leakage_nw
from .table import DEFAULT_TABLE, EnergyTable, load_table

__all__ = ["EventCounts", "event_counts", "CATEGORIES", "energy_pj", "leakage_nw",
           "EnergyTable", "load_table", "DEFAULT_TABLE"]
