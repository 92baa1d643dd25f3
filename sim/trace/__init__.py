"""Trace manager: the one JSON-lines trace schema of fsim and tsim, and the trace diff."""
