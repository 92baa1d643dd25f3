"""Simulation models and helpers for testing the RTL in the Amaranth simulator."""
