"""Versions: the package's, and the ISA/hardware version reported in the VERSION register."""

__version__ = "0.1.0"

#: VERSION register (docs/architecture.md, 0x6C): major.minor.patch packed as 0x00MMmmpp.
HW_VERSION = 0x00_00_01_00
