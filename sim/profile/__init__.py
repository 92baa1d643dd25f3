"""Where the cycles go: a network's per-stage activity, layer by layer.

:func:`profile_network` runs a network on a device whose backend records activity
(:mod:`avta.sim.activity`), keeps one :class:`~avta.sim.activity.Activity` per device layer and
concatenates them into one :class:`Timeline` with the layer boundaries. :mod:`.charts` draws the
timeline and a per-layer roofline; :mod:`.report` writes the table (CSV, JSON) and one
self-contained HTML report.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.registers import LOADED_COUNTERS, busy_cycles
from avta.sim.activity import LANES, NOT_BUSY

__all__ = ["Timeline", "Profile", "profile_network", "profile_program", "concatenate",
           "layer_rows"]


@dataclass(frozen=True, eq=False)
class Timeline:
    """Per-layer activities end to end: ``edges`` (bins + 1 cycle offsets), ``lanes[lane][state]``
    per-bin cycles, ``boundaries`` the ``(start cycle, cycles, layer name)`` of each layer."""
    edges: np.ndarray
    lanes: dict
    boundaries: list
    estimated: bool

    @property
    def cycles(self):
        return int(self.edges[-1]) if len(self.edges) else 0

    def bin_lengths(self):
        return np.diff(self.edges)

    def resampled(self, bins):
        """``(edges, lanes)`` on at most ``bins`` equal bins for drawing: the cumulative cycles of
        each state interpolated at the new edges (floats; the totals are kept)."""
        cycles = self.cycles
        if cycles == 0 or len(self.edges) - 1 <= bins:
            return self.edges, self.lanes
        edges = np.linspace(0, cycles, bins + 1)
        lanes = {}
        for lane, states in self.lanes.items():
            lanes[lane] = {}
            for s, counts in states.items():
                cum = np.concatenate(([0], np.cumsum(counts)))
                lanes[lane][s] = np.diff(np.interp(edges, self.edges, cum))
        return edges, lanes

    def totals(self):
        return {lane: {s: int(c.sum()) for s, c in states.items()}
                for lane, states in self.lanes.items()}


def concatenate(named_activities):
    """A :class:`Timeline` of ``[(layer name, Activity), ...]`` run one after the other."""
    edges, boundaries = [np.zeros(1, np.int64)], []
    lanes = {lane: {s: [] for s in states} for lane, states in LANES.items()}
    offset, estimated = 0, False
    for name, act in named_activities:
        boundaries.append((offset, int(act.cycles), name))
        edges.append(offset + np.cumsum(act.bin_lengths()))
        for lane, states in LANES.items():
            for s in states:
                lanes[lane][s].append(np.asarray(act.lanes[lane][s], np.int64))
        offset += int(act.cycles)
        estimated |= bool(act.estimated)
    lanes = {lane: {s: np.concatenate(v) if v else np.zeros(0, np.int64)
                    for s, v in states.items()} for lane, states in lanes.items()}
    return Timeline(np.concatenate(edges), lanes, boundaries, estimated)


@dataclass
class Profile:
    """A profiled run: the :class:`~avta.runtime.net.executor.NetworkRun`, each device layer's
    Activity by name, the :class:`Timeline` and the configuration."""
    run: object
    activities: dict
    timeline: Timeline
    cfg: object
    target: str


def profile_network(device, graph, x, *, target="", progress=None):
    """Run ``graph`` on ``device`` (its backend must record activity: ``activity=True``) and
    return a :class:`Profile`."""
    from avta.runtime.net.executor import run_network
    backend = device.backend
    if not hasattr(backend, "last_activity"):
        raise ValueError(f"the {backend.name} backend does not record activity")
    current = {"node": None}
    collected = []
    inner = backend.run

    def run(*args, **kwargs):
        result = inner(*args, **kwargs)
        if backend.last_activity is None:
            raise ValueError("the backend records no activity (activity=True)")
        collected.append((current["node"], backend.last_activity))
        return result

    def step(i, n, node):
        current["node"] = node.name
        if progress:
            progress(i, n, node)

    backend.run = run
    try:
        net = run_network(device, graph, x, progress=step)
    finally:
        del backend.run
    # One Activity per device layer (a layer running several programs gets them concatenated).
    activities = {}
    for name, act in collected:
        activities.setdefault(name, []).append(act)
    for layer in net.layers:        # a fused add's program ran at the add, in the conv's row
        if layer.fused and layer.fused in activities:
            activities[layer.name] = activities.pop(layer.fused)
    ordered = []
    for layer in net.layers:
        for i, act in enumerate(activities.get(layer.name, ())):
            ordered.append((layer.name if i == 0 else f"{layer.name}#{i}", act))
    return Profile(net, activities, concatenate(ordered), device.cfg, target)


def profile_program(device, insn_addr, insn_count, *, name="program", target="", bases=None):
    """Run the ``insn_count`` instructions at ``insn_addr`` already in ``device``'s DRAM (a raw
    program image) as one layer named ``name``; a :class:`Profile`. Its MACs are not known
    (0), so it has no roofline point. Raises ValueError when the run does not end ``ok``."""
    from avta.runtime.net.executor import LayerReport, NetworkRun
    backend = device.backend
    result = backend.run(insn_addr, insn_count, bases=bases)
    if result.status != "ok":
        raise ValueError(f"the program ended {result.status} ({result.summary()})")
    act = backend.last_activity
    if act is None:
        raise ValueError(f"the {backend.name} backend records no activity (activity=True)")
    counters = result.counters
    cycles = int(result.cycles)
    busy = busy_cycles(counters, cycles)
    layer = LayerReport(name, "program", (), 0, cycles=cycles, insns=int(insn_count),
                        bytes_loaded=sum(counters[c] for c in LOADED_COUNTERS),
                        bytes_stored=counters["OUT_ST"], bound=max(busy, key=busy.get))
    run = NetworkRun(name, device.cfg.name, {}, [layer], "cycles" in result.estimated)
    return Profile(run, {name: [act]}, concatenate([(name, act)]), device.cfg, target)


def layer_rows(profile):
    """One dict per layer: the ``avta run`` report fields, intensity, MACs per cycle and the
    busy/wait/idle cycles of each lane."""
    from dataclasses import asdict
    rows = []
    for layer in profile.run.layers:
        row = asdict(layer) | {"shape": "x".join(map(str, layer.shape))}
        moved = layer.bytes_loaded + layer.bytes_stored
        row["intensity"] = layer.macs / moved if moved else 0.0
        row["macs_per_cycle"] = layer.macs / layer.cycles if layer.cycles else 0.0
        acts = profile.activities.get(layer.name, [])
        for lane, states in LANES.items():
            sums = {s: sum(int(a.lanes[lane][s].sum()) for a in acts) for s in states}
            row[f"{lane}_busy"] = sum(v for s, v in sums.items() if s not in NOT_BUSY)
            row[f"{lane}_wait"] = sums["wait"]
            row[f"{lane}_idle"] = sums["idle"]
            if lane == "compute":
                for s in ("gemm", "alu", "other"):
                    row[f"compute_{s}"] = sums[s]
        rows.append(row)
    return rows
