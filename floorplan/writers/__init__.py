"""Floorplan outputs: SVG and PNG drawings, DEF with its LEF abstracts, OpenROAD Tcl, Hammer
placement YAML and JSON.

:func:`write_outputs` writes all seven next to each other as
``<stem>.{svg,png,def,lef,tcl,yaml,json}``.
"""

from pathlib import Path

from .def_ import floorplan_to_def
from .drawing import scene_to_png, scene_to_svg
from .hammer import floorplan_to_hammer
from .json_ import floorplan_to_dict, floorplan_to_json
from .lef_ import floorplan_to_lef
from .scene import build_scene
from .tcl import floorplan_to_tcl

__all__ = ["write_outputs", "floorplan_to_def", "floorplan_to_lef", "floorplan_to_tcl",
           "floorplan_to_hammer", "floorplan_to_json", "floorplan_to_dict", "build_scene", "scene_to_svg",
           "scene_to_png", "SUFFIXES"]

SUFFIXES = ("svg", "png", "def", "lef", "tcl", "yaml", "json")


def write_outputs(floorplan, directory, stem, *, title=None, caption=(), wires=None, extra=None):
    """Write every output of ``floorplan`` into ``directory``; returns {suffix: path}."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {suffix: directory / f"{stem}.{suffix}" for suffix in SUFFIXES}
    scene = build_scene(floorplan, title=title, caption=caption, wires=wires)
    paths["svg"].write_text(scene_to_svg(scene))
    scene_to_png(scene, paths["png"])
    paths["def"].write_text(floorplan_to_def(floorplan))
    paths["lef"].write_text(floorplan_to_lef(floorplan))
    paths["tcl"].write_text(floorplan_to_tcl(floorplan))
    paths["yaml"].write_text(floorplan_to_hammer(floorplan))
    paths["json"].write_text(floorplan_to_json(floorplan, extra=extra))
    return paths
