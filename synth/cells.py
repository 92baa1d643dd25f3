"""Area of a synthesized netlist's cells, from the technology's ``logic_cells`` section.

Yosys's generic ``synth`` leaves internal gates: ``$_AND_``, ``$_MUX_``, ... (keys ``AND``,
``MUX`` of :data:`avta.floorplan.tech.LOGIC_CELLS`) and flip-flops whose name says their
extras, ``$_DFF_P_``, ``$_DFFE_PP_`` (enable), ``$_SDFF_PP0_`` (synchronous reset),
``$_SDFFE_PP0P_`` / ``$_SDFFCE_PP0P_`` (both), ``$_DFF_PP0_`` (asynchronous reset). A
flip-flop's area is ``dff`` plus ``enable``, ``sync_reset`` and ``async_reset`` as it has them.
"""

import re

__all__ = ["cell_area", "gate_equivalents", "UnknownCell"]

_GATE = re.compile(r"\$_([A-Z0-9]+)_\Z")
_FLOP = re.compile(r"\$_(S?)(DFF|DFFSR|ALDFF)(C?E?)_([PN01]+)_\Z")


class UnknownCell(ValueError):
    """A cell type the area model has no number for."""


def cell_area(cell_type, areas):
    """µm² of one cell of Yosys type ``cell_type`` with the technology's ``areas``."""
    if (m := _FLOP.match(cell_type)):
        sync, kind, enable, polarities = m.groups()
        area = areas["dff"]
        if enable:
            area += areas["enable"]
        if sync:
            area += areas["sync_reset"]
        # An asynchronous reset shows as a third polarity letter ($_DFF_PP0_, $_DFFE_PP0P_).
        elif kind == "DFF" and len(polarities) >= 3:
            area += areas["async_reset"]
        return area
    if (m := _GATE.match(cell_type)) and m.group(1) in areas:
        return areas[m.group(1)]
    raise UnknownCell(f"no area for Yosys cell {cell_type}: the technology's logic_cells "
                      f"section covers {', '.join(sorted(areas))} and flip-flops")


def gate_equivalents(area_um2, technology):
    """NAND2 gate equivalents of ``area_um2``."""
    return area_um2 / technology.um(technology.um(technology.nand2_area))
