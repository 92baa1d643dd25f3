"""Technology descriptions: units, placement site, standard-cell density and SRAM macro shapes.

A description is a YAML file (``floorplan/tech/generic45.yaml`` is the shipped one and documents
every number with its source). :func:`load_technology` reads and checks one; the resulting
:class:`Technology` turns micron figures into DBU snapped to the placement grid and builds SRAM
:class:`~avta.floorplan.layout.Macro` masters from a words x bits request with the shape model of
the ``sram`` section::

    width  = bits * mux * cell_width + periphery_width       (rounded up to whole sites)
    height = words / mux * cell_height + periphery_height    (rounded up to whole rows)

where the column mux is the one of ``column_mux`` that brings the shape closest to square. A
macro is legal when words and bits are within the limits and its aspect ratio is at most
``max_aspect``; :meth:`Technology.sram_problem` says why one is not.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from .geometry import Halo
from .layout import Macro

__all__ = ["Technology", "TechnologyError", "load_technology", "shipped_technologies", "TECH_DIR",
           "LOGIC_CELLS"]

TECH_DIR = Path(__file__).resolve().parent / "tech"

#: Keys of the optional ``logic_cells`` section: the area of each gate of a Yosys netlist
#: (Yosys's internal cell ``$_NAME_``) and of a flip-flop with its enable and reset logic.
LOGIC_CELLS = ("NOT", "BUF", "AND", "NAND", "OR", "NOR", "XOR", "XNOR", "ANDNOT", "ORNOT", "MUX",
               "NMUX", "AOI3", "OAI3", "AOI4", "OAI4", "dff", "enable", "sync_reset",
               "async_reset")

# key: (type, required); numbers must be positive unless listed in _MAY_BE_ZERO.
_SCHEMA = {
    "name": (str, True), "description": (str, False), "dbu_per_micron": (int, True),
    "site": (dict, True), "standard_cells": (dict, True), "sram": (dict, True),
    "spacing": (dict, True), "logic_cells": (dict, False),
}
_SECTIONS = {
    "site": {"name": str, "width": float, "row_height": float},
    "standard_cells": {"nand2_area": float, "target_utilization": float},
    "sram": {"name_format": str, "cell_width": float, "cell_height": float,
             "periphery_width": float, "periphery_height": float, "column_mux": list,
             "min_rows": int, "min_words": int, "max_words": int, "max_bits": int,
             "max_aspect": float, "halo": float},
    "spacing": {"macro": float, "core_margin": float},
    "logic_cells": {key: float for key in LOGIC_CELLS},
}
_MAY_BE_ZERO = {"periphery_width", "periphery_height", "halo", "macro", "core_margin"}


class TechnologyError(ValueError):
    """A technology description that cannot be used; the message lists every problem."""

    def __init__(self, problems, *, source):
        self.problems = list(problems)
        lines = [f"invalid technology description {source}:"] + [f"  - {p}" for p in problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class SramShape:
    """The chosen physical organisation of one SRAM macro (sizes in DBU)."""
    words: int
    bits: int
    mux: int
    width: int
    height: int

    rows = property(lambda self: self.words // self.mux)
    columns = property(lambda self: self.bits * self.mux)
    aspect = property(lambda self: max(self.width, self.height) / min(self.width, self.height))


class Technology:
    """A checked technology description. Lengths are stored in DBU."""

    def __init__(self, data, *, source="<dict>"):
        problems = _validate(data)
        if problems:
            raise TechnologyError(problems, source=source)
        self._data = data
        self._source = source
        self._dbu = data["dbu_per_micron"]
        site = data["site"]
        self._site_width = self.dbu(site["width"])
        self._row_height = self.dbu(site["row_height"])
        self._masters = {}

    name = property(lambda self: self._data["name"])
    description = property(lambda self: self._data.get("description", ""))
    source = property(lambda self: self._source)
    dbu_per_micron = property(lambda self: self._dbu)
    site_name = property(lambda self: self._data["site"]["name"])
    site_width = property(lambda self: self._site_width, doc="DBU")
    row_height = property(lambda self: self._row_height, doc="DBU")
    grid = property(lambda self: (self._site_width, self._row_height))
    nand2_area = property(lambda self: self.dbu2(self._data["standard_cells"]["nand2_area"]),
                          doc="DBU^2 of one gate equivalent")
    target_utilization = property(lambda self: self._data["standard_cells"]["target_utilization"])
    max_words = property(lambda self: self._data["sram"]["max_words"])
    min_words = property(lambda self: self._data["sram"]["min_words"])
    max_bits = property(lambda self: self._data["sram"]["max_bits"])
    max_aspect = property(lambda self: self._data["sram"]["max_aspect"])
    macro_spacing = property(lambda self: self.dbu(self._data["spacing"]["macro"]), doc="DBU")
    core_margin = property(lambda self: self.snap_xy(self.dbu(self._data["spacing"]["core_margin"])),
                           doc="DBU, rounded up to a whole number of both sites and rows, so the "
                               "core starts on the placement grid")
    macro_halo = property(lambda self: Halo.uniform(self.dbu(self._data["sram"]["halo"])))

    @property
    def logic_cells(self):
        """Square microns of each gate of a synthesized netlist (the ``logic_cells`` section,
        keys :data:`LOGIC_CELLS`), or None when the description has none."""
        cells = self._data.get("logic_cells")
        return dict(cells) if cells is not None else None

    # -- units ----------------------------------------------------------------------------------

    def dbu(self, microns):
        """DBU from microns, to the nearest unit."""
        return int(round(microns * self._dbu))

    def dbu2(self, square_microns):
        return int(round(square_microns * self._dbu * self._dbu))

    def snap_x(self, value):
        """``value`` (DBU) rounded up to whole sites."""
        return -(-value // self._site_width) * self._site_width

    def snap_y(self, value):
        """``value`` (DBU) rounded up to whole rows."""
        return -(-value // self._row_height) * self._row_height

    def snap_xy(self, value):
        """``value`` (DBU) rounded up to a multiple of both the site width and the row height."""
        step = math.lcm(self._site_width, self._row_height)
        return -(-value // step) * step

    # -- SRAM macros ----------------------------------------------------------------------------

    def sram_shape(self, words, bits):
        """The most nearly square :class:`SramShape` for ``words`` x ``bits`` (any size)."""
        for key, value in (("words", words), ("bits", bits)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SRAM {key} = {value!r}: must be a positive integer")
        s = self._data["sram"]
        best = None
        for mux in s["column_mux"]:
            if words % mux or (words // mux < s["min_rows"] and mux != 1):
                continue
            width = self.snap_x(self.dbu(bits * mux * s["cell_width"] + s["periphery_width"]))
            height = self.snap_y(self.dbu(words // mux * s["cell_height"]
                                          + s["periphery_height"]))
            shape = SramShape(words, bits, mux, width, height)
            if best is None or shape.aspect < best.aspect:
                best = shape
        return best

    def sram_problem(self, words, bits):
        """Why ``words`` x ``bits`` is not a legal macro, or None when it is."""
        if words > self.max_words:
            return f"{words} words is deeper than the {self.max_words}-word limit"
        if words < self.min_words:
            return f"{words} words is shallower than the {self.min_words}-word minimum"
        if bits > self.max_bits:
            return f"{bits} bits is wider than the {self.max_bits}-bit limit"
        shape = self.sram_shape(words, bits)
        if shape.aspect > self.max_aspect:
            return (f"its best shape (column mux {shape.mux}) is {self.um(shape.width):g} x "
                    f"{self.um(shape.height):g} um, aspect {shape.aspect:.2f} > {self.max_aspect:g}")
        return None

    def sram(self, words, bits):
        """The legal SRAM master of ``words`` x ``bits``: one per size, shared by its users.

        It has no tag: two memories may share a master, so drawings colour a macro by the block
        that holds it.
        """
        problem = self.sram_problem(words, bits)
        if problem:
            raise ValueError(f"no legal {words} x {bits} SRAM macro in {self.name}: {problem}; "
                             f"split the memory into narrower or shallower macros")
        key = (words, bits)
        if key not in self._masters:
            shape = self.sram_shape(words, bits)
            name = self._data["sram"]["name_format"].format(words=words, bits=bits)
            self._masters[key] = Macro(name, width=shape.width, height=shape.height,
                                       halo=self.macro_halo,
                                       properties={"words": words, "bits": bits, "mux": shape.mux,
                                                   "rows": shape.rows, "columns": shape.columns})
        return self._masters[key]

    def um(self, dbu):
        return dbu / self._dbu

    def __repr__(self):
        return f"Technology({self.name!r} from {self._source})"


def _validate(data):
    if not isinstance(data, dict):
        return [f"expected a mapping of keys, got {type(data).__name__}"]
    problems = []
    for key in data:
        if key not in _SCHEMA:
            problems.append(f"{key}: unknown key (known: {', '.join(_SCHEMA)})")
    for key, (kind, required) in _SCHEMA.items():
        if key not in data:
            if required:
                problems.append(f"{key}: missing")
            continue
        if not _is(data[key], kind):
            problems.append(f"{key} = {data[key]!r}: must be a {kind.__name__}")
    for section, fields in _SECTIONS.items():
        values = data.get(section)
        if not isinstance(values, dict):
            continue
        for key in values:
            if key not in fields:
                problems.append(f"{section}.{key}: unknown key (known: {', '.join(fields)})")
        for key, kind in fields.items():
            if key not in values:
                problems.append(f"{section}.{key}: missing")
                continue
            value = values[key]
            if not _is(value, kind):
                problems.append(f"{section}.{key} = {value!r}: must be a {kind.__name__}")
            elif kind in (int, float) and (value < 0 or (value == 0 and key not in _MAY_BE_ZERO)):
                problems.append(f"{section}.{key} = {value!r}: must be positive")
    if isinstance(data.get("dbu_per_micron"), int) and data["dbu_per_micron"] < 1:
        problems.append(f"dbu_per_micron = {data['dbu_per_micron']}: must be positive")
    sram = data.get("sram") if isinstance(data.get("sram"), dict) else {}
    mux = sram.get("column_mux")
    if isinstance(mux, list) and (not mux or not all(isinstance(m, int) and m > 0 and
                                                     not m & (m - 1) for m in mux)):
        problems.append(f"sram.column_mux = {mux!r}: must be a non-empty list of powers of two")
    util = data.get("standard_cells", {}).get("target_utilization") \
        if isinstance(data.get("standard_cells"), dict) else None
    if isinstance(util, (int, float)) and not 0 < util <= 1:
        problems.append(f"standard_cells.target_utilization = {util!r}: must be in (0, 1]")
    aspect = sram.get("max_aspect")
    if isinstance(aspect, (int, float)) and aspect < 1:
        problems.append(f"sram.max_aspect = {aspect!r}: an aspect ratio (long/short) is >= 1")
    if isinstance(sram.get("name_format"), str):
        try:
            sram["name_format"].format(words=1, bits=1)
        except (KeyError, IndexError, ValueError) as error:
            problems.append(f"sram.name_format = {sram['name_format']!r}: {error}; it may use "
                            f"{{words}} and {{bits}}")
    return problems


def _is(value, kind):
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def shipped_technologies():
    """Names of the technology descriptions shipped in ``floorplan/tech``."""
    return sorted(p.stem for p in TECH_DIR.glob("*.yaml"))


def load_technology(name_or_path="generic45"):
    """A :class:`Technology` from a shipped name or a path to a YAML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = TECH_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise FileNotFoundError(f"no technology {name_or_path!r}: shipped ones are "
                                    f"{', '.join(shipped_technologies())}, or give a path to YAML")
    with open(path) as stream:
        try:
            data = yaml.safe_load(stream)
        except yaml.YAMLError as error:
            raise TechnologyError([f"not valid YAML: {error}"], source=str(path)) from None
    return Technology(data, source=str(path))
