"""Shipped configurations (YAML), loaded by name with avta.isa.config.load_config."""
