"""Wire-length estimate between connected groups of a floorplan.

A :class:`Bus` is ``bits`` parallel wires joining the instances named by ``pins`` (hierarchical
paths: blocks or macros). Its estimated length is

    bits x HPWL(centres of the pins)

where HPWL is the half-perimeter of the bounding box of the pin centres: the Manhattan distance
between the two centres for a two-pin bus, and the usual lower bound of a Steiner tree for a
broadcast (one driver, many loads). Centres stand for the whole group, so the estimate ignores
where pins sit on a block's edge and the wiring inside a group; it compares floorplans of the
same netlist, and is not a routed length.
"""

from dataclasses import dataclass

__all__ = ["Bus", "BusLength", "WireReport", "estimate_wires"]


@dataclass(frozen=True)
class Bus:
    """``bits`` wires joining the instances at ``pins`` (paths); the first pin drives."""
    name: str
    bits: int
    pins: tuple

    def __post_init__(self):
        if isinstance(self.bits, bool) or not isinstance(self.bits, int) or self.bits < 1:
            raise ValueError(f"bus {self.name}: bits = {self.bits!r} must be a positive integer")
        if len(self.pins) < 2:
            raise ValueError(f"bus {self.name}: pins = {self.pins!r}: a bus joins at least two "
                             f"instances")


@dataclass(frozen=True)
class BusLength:
    """One bus measured: HPWL of its pin centres (um) and bits x HPWL (mm of wire)."""
    bus: Bus
    hpwl_um: float

    @property
    def wire_mm(self):
        return self.bus.bits * self.hpwl_um / 1000


@dataclass(frozen=True)
class WireReport:
    """Every bus measured, with the total and the longest span."""
    buses: tuple

    @property
    def total_mm(self):
        """Sum over buses of bits x HPWL, in mm of wire."""
        return sum(b.wire_mm for b in self.buses)

    def longest(self, *, prefix=""):
        """The bus with the largest HPWL among those whose name starts with ``prefix``."""
        chosen = [b for b in self.buses if b.bus.name.startswith(prefix)]
        return max(chosen, key=lambda b: b.hpwl_um, default=None)

    def by_group(self):
        """mm of wire per bus name up to the first ``[`` (slices of one bus summed)."""
        out = {}
        for b in self.buses:
            key = b.bus.name.split("[")[0]
            out[key] = out.get(key, 0.0) + b.wire_mm
        return out


def estimate_wires(floorplan, buses):
    """A :class:`WireReport` of ``buses`` over ``floorplan`` (pins looked up by path)."""
    centres = {p.path: p.rect.center for p in floorplan.walk()}
    measured = []
    for bus in buses:
        missing = [pin for pin in bus.pins if pin not in centres]
        if missing:
            raise KeyError(f"bus {bus.name}: no instance at {', '.join(missing)} in floorplan "
                           f"{floorplan.name}")
        xs = [centres[pin][0] for pin in bus.pins]
        ys = [centres[pin][1] for pin in bus.pins]
        hpwl = (max(xs) - min(xs)) + (max(ys) - min(ys))
        measured.append(BusLength(bus, floorplan.um(hpwl)))
    return WireReport(tuple(measured))
