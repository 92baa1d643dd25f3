"""Simulation: fsim (numpy behavioral model), tsim driver, traces and trace diff."""
