"""The Amaranth RTL of the accelerator (docs/architecture.md, Hardware)."""
