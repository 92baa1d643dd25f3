"""Floorplanning: layout objects, checks, outputs, and the VTA floorplan generator."""
