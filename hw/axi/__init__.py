"""AXI4 and AXI4-Lite interfaces of the accelerator shell (docs/architecture.md, Hardware)."""
