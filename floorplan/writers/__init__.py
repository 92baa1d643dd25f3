"""Floorplan outputs: SVG and PNG drawings, DEF, OpenROAD Tcl, Hammer placement YAML and JSON."""
