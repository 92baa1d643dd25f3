"""Shipped configurations (YAML), loaded by name with avta.load_config."""
