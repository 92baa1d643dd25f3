"""avta: a configurable VTA accelerator generator and RTL verification flow.

The package root re-exports the configuration entry points; the parts live in ``avta.isa``,
``avta.hw``, ``avta.sim``, ``avta.runtime`` and ``avta.floorplan``.
"""

from .version import __version__
from avta.isa.config import Config, ConfigError, load_config

__all__ = ["Config", "ConfigError", "load_config", "__version__"]
