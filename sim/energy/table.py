"""Technology tables of energy per event: what one MAC, one ALU operation, one SRAM access, one
DRAM byte and one decoded instruction cost, and what the logic and the SRAM leak.

A table is a YAML file of flat keys (:data:`KEYS`, each with its unit); the shipped one,
``sim/energy/tech/horowitz45.yaml``, says where every number comes from. :func:`load_table`
reads and checks one: every key present, no unknown key, every value a finite number in its
range; anything else is a :class:`~avta.errors.UserError` that lists every problem.

SRAM energy per access scales with the memory (:meth:`EnergyTable.sram_access`): with the bits
of the row read or written, and with the size of the macro as ``(bytes / reference)**exponent``
(Horowitz's 8 KB, 32 KB and 1 MB reads fit an exponent of 0.5).
"""

import math
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from avta.errors import UserError, read_input

__all__ = ["EnergyTable", "load_table", "DEFAULT_TABLE", "TABLE_DIR", "KEYS"]

TABLE_DIR = Path(__file__).resolve().parent / "tech"
#: The table ``--tech`` defaults to.
DEFAULT_TABLE = TABLE_DIR / "horowitz45.yaml"

#: key -> (unit, lowest allowed, highest allowed, lowest included).
KEYS = {
    "mac_int8": ("pJ per 8-bit multiply-accumulate", 0.0, 1e3, False),
    "alu_op_int32": ("pJ per 32-bit ALU lane operation", 0.0, 1e3, False),
    "sram_read_64b": ("pJ per 64 bits read at sram_reference_bytes", 0.0, 1e5, False),
    "sram_reference_bytes": ("bytes of the SRAM sram_read_64b is quoted for", 0.0, 1e12, False),
    "sram_size_exponent": ("how SRAM energy grows with size (0: not at all, 1: linearly)",
                           0.0, 1.0, True),
    "sram_write_to_read": ("a write's energy over a read's", 0.0, 100.0, False),
    "dram_per_byte": ("pJ per DRAM byte read or written", 0.0, 1e6, False),
    "insn_decode": ("pJ per instruction fetched and decoded", 0.0, 1e6, True),
    "leak_logic_per_ge": ("nW of leakage per gate equivalent", 0.0, 1e6, True),
    "leak_sram_per_bit": ("nW of leakage per SRAM bit", 0.0, 1e6, True),
}
_TEXT = ("name", "description")


@dataclass(frozen=True)
class EnergyTable:
    """A checked technology table (see the module docstring); energies in pJ, leakage in nW."""
    name: str
    description: str
    mac_int8: float
    alu_op_int32: float
    sram_read_64b: float
    sram_reference_bytes: float
    sram_size_exponent: float
    sram_write_to_read: float
    dram_per_byte: float
    insn_decode: float
    leak_logic_per_ge: float
    leak_sram_per_bit: float
    source: str = ""

    def sram_access(self, bits, macro_bytes, *, write=False):
        """pJ of one access of ``bits`` to an SRAM macro of ``macro_bytes``."""
        scale = (macro_bytes / self.sram_reference_bytes) ** self.sram_size_exponent
        energy = self.sram_read_64b * bits / 64 * scale
        return energy * self.sram_write_to_read if write else energy

    def to_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _problems(data):
    if not isinstance(data, dict):
        return [f"the table must be a mapping of keys to numbers, not {type(data).__name__}"]
    problems = []
    for key in _TEXT:
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key}: must be text, not {data[key]!r}")
    if not isinstance(data.get("name"), str) or not data.get("name"):
        problems.append("name: missing (a short name for the table)")
    for key, (unit, low, high, low_ok) in KEYS.items():
        if key not in data:
            problems.append(f"{key}: missing ({unit})")
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{key}: {value!r} is not a number ({unit})")
        elif not math.isfinite(value):
            problems.append(f"{key}: {value} is not finite ({unit})")
        elif value < low or (value == low and not low_ok) or value > high:
            bound = ">=" if low_ok else ">"
            problems.append(f"{key}: {value} is out of range; it must be {bound} {low:g} and "
                            f"<= {high:g} ({unit})")
    for key in sorted(set(data) - set(KEYS) - set(_TEXT)):
        problems.append(f"{key}: not a key of an energy table (the keys are "
                        f"{', '.join(KEYS)})")
    return problems


def load_table(path=None):
    """The :class:`EnergyTable` of the YAML file ``path`` (default :data:`DEFAULT_TABLE`)."""
    path = Path(path) if path is not None else DEFAULT_TABLE
    text = read_input(path, "energy table")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UserError(f"energy table {str(path)!r} is not valid YAML: "
                        f"{str(error).splitlines()[0]}") from None
    problems = _problems(data)
    if problems:
        raise UserError(f"energy table {str(path)!r}: " + "; ".join(problems))
    values = {key: float(data[key]) for key in KEYS}
    return EnergyTable(name=data["name"], description=" ".join(
        str(data.get("description", "")).split()), source=str(path), **values)
