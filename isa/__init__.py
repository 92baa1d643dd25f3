"""The instruction set in software: configuration, layouts, encode/decode, asm/disasm, C header."""

from .config import Config, ConfigError, load_config, shipped_configs

__all__ = ["Config", "ConfigError", "load_config", "shipped_configs"]
