"""Two profiles of the same network side by side: how far fsim's estimate is from tsim, per layer.

:func:`compare_profiles` takes two ``profile.json`` records (:func:`avta.sim.profile.report.
write_profile`; or :func:`load_record` of their directories), usually fsim's (the estimate) and
tsim's (exact), and gives one :class:`LayerDiff` per device layer: the cycle error of the first
relative to the second, and for each lane the difference of its busy and waiting shares (the
lane's busy, or waiting, cycles over the layer's cycles), in percentage points. Those shares are
what the timeline draws, so their differences say how far apart the two pictures are.

``avta profile-diff A B`` prints the table and exits 1 when a layer is further apart than the
tolerances (:data:`DEFAULT_CYCLE_TOLERANCE`, :data:`DEFAULT_SHARE_TOLERANCE`; docs/cli.md has the
measured figures they come from).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from avta.sim.activity import LANES

__all__ = ["LayerDiff", "Comparison", "compare_profiles", "load_record",
           "DEFAULT_CYCLE_TOLERANCE", "DEFAULT_SHARE_TOLERANCE"]

#: A device layer's cycles on fsim may differ from tsim's by this fraction of tsim's.
DEFAULT_CYCLE_TOLERANCE = 0.05
#: A lane's busy or waiting share of a layer may differ by this many percentage points.
DEFAULT_SHARE_TOLERANCE = 5.0


@dataclass(frozen=True)
class LayerDiff:
    """One device layer of both profiles: ``cycles`` ``(a, b)``, ``cycle_error`` ``(a - b) / b``,
    and ``share_diff[lane][kind]`` (``kind`` "busy" or "wait"): a's share minus b's, in points."""
    name: str
    cycles: tuple
    cycle_error: float
    share_diff: dict

    @property
    def worst_share(self):
        """The largest absolute share difference over lanes and kinds, in points."""
        return max(abs(v) for kinds in self.share_diff.values() for v in kinds.values())

    def within(self, cycle_tolerance, share_tolerance):
        return (abs(self.cycle_error) <= cycle_tolerance
                and self.worst_share <= share_tolerance)


@dataclass(frozen=True)
class Comparison:
    """Every device layer's :class:`LayerDiff`, the whole run's cycles ``(a, b)`` and which
    target each side ran on."""
    layers: list
    total_cycles: tuple
    targets: tuple

    @property
    def total_error(self):
        a, b = self.total_cycles
        return (a - b) / b if b else 0.0

    def worst_cycle_error(self):
        return max((abs(d.cycle_error) for d in self.layers), default=0.0)

    def worst_share(self):
        return max((d.worst_share for d in self.layers), default=0.0)

    def outside(self, cycle_tolerance=DEFAULT_CYCLE_TOLERANCE,
                share_tolerance=DEFAULT_SHARE_TOLERANCE):
        """The layers further apart than the tolerances."""
        return [d for d in self.layers if not d.within(cycle_tolerance, share_tolerance)]


def load_record(path):
    """The ``profile.json`` record of a profile directory (or of the file itself); ValueError
    when the file is not one (not JSON, or without the fields :func:`compare_profiles` reads,
    each of its type)."""
    path = Path(path)
    if path.is_dir():
        path = path / "profile.json"
    record = json.loads(path.read_text())
    _check_record(record)
    return record


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_record(record):
    """ValueError unless ``record`` has what a comparison reads: a network name, the total
    cycles, and layers whose cycles and lane cycles are counts."""
    if not isinstance(record, dict):
        raise ValueError(f"the file holds a JSON {type(record).__name__}, not a profile's "
                         f"mapping")
    if not isinstance(record.get("network"), str) or not isinstance(record.get("layers"), list) \
            or not isinstance(record.get("total"), dict):
        raise ValueError("a profile has a network name, a total and a list of layers")
    if not _count(record["total"].get("cycles")):
        raise ValueError(f"the total's cycles {record['total'].get('cycles')!r} are not a "
                         f"count of cycles")
    lanes = [f"{lane}_{kind}" for lane in LANES for kind in ("busy", "wait")]
    for i, row in enumerate(record["layers"]):
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise ValueError(f"layer #{i} is not a mapping with a name")
        for key in ("cycles", *lanes):
            if not _count(row.get(key)):
                raise ValueError(f"layer {row['name']!r}: {key} {row.get(key)!r} is not a "
                                 f"count of cycles")


def _shares(row):
    cycles = row["cycles"]
    return {lane: {"busy": 100.0 * row[f"{lane}_busy"] / cycles,
                   "wait": 100.0 * row[f"{lane}_wait"] / cycles} for lane in LANES}


def _same_config(a, b):
    """Refuse profiles of different configurations: by every key where both records have
    them, else by the figures both give (older records)."""
    if not a or not b:
        return
    if "keys" in a and "keys" in b:
        a, b = a["keys"], b["keys"]
    differ = sorted(k for k in set(a) & set(b) if k != "name" and a[k] != b[k])
    if differ:
        what = ", ".join(f"{k} {a[k]} and {b[k]}" for k in differ[:4])
        raise ValueError(f"the profiles are of different configurations: {what}")


def compare_profiles(a, b):
    """Compare two ``profile.json`` records of the same network (see the module docstring).

    Only layers that ran on the device in both (cycles > 0) are compared. Raises ValueError when
    the records are of different networks or configurations, or their device layers differ
    (in names, order, shapes or MACs)."""
    if a["network"] != b["network"]:
        raise ValueError(f"the profiles are of different networks: {a['network']!r} and "
                         f"{b['network']!r}")
    _same_config(a.get("config"), b.get("config"))
    rows_a = {r["name"]: r for r in a["layers"] if r["cycles"]}
    rows_b = {r["name"]: r for r in b["layers"] if r["cycles"]}
    if list(rows_a) != list(rows_b):
        only = sorted(set(rows_a) ^ set(rows_b))
        raise ValueError("the profiles' device layers differ"
                         + (f": {', '.join(only[:5])} in one only" if only else " in order"))
    diffs = []
    for name, ra in rows_a.items():
        rb = rows_b[name]
        for key in ("shape", "macs"):
            if key in ra and key in rb and ra[key] != rb[key]:
                raise ValueError(f"layer {name!r} has {key} {ra[key]} in one profile and "
                                 f"{rb[key]} in the other (another input size or network)")
        sa, sb = _shares(ra), _shares(rb)
        share_diff = {lane: {k: sa[lane][k] - sb[lane][k] for k in ("busy", "wait")}
                      for lane in LANES}
        diffs.append(LayerDiff(name, (ra["cycles"], rb["cycles"]),
                               (ra["cycles"] - rb["cycles"]) / rb["cycles"], share_diff))
    return Comparison(diffs, (a["total"]["cycles"], b["total"]["cycles"]),
                      (a.get("target", ""), b.get("target", "")))
