"""The Amaranth RTL of the accelerator (ARCHITECTURE.md, Hardware)."""
