"""AXI4 and AXI4-Lite interfaces of the accelerator shell (ARCHITECTURE.md, Hardware)."""
