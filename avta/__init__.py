"""avta: a configurable VTA accelerator generator and RTL verification flow.

The package root holds the version and nothing heavy, so that its ground modules (``errors``,
``version``, ``progress``) import without Amaranth or numpy behind them. The parts live in
``avta.isa`` (configurations: ``avta.isa.config.load_config``), ``avta.hw``, ``avta.sim``,
``avta.runtime``, ``avta.floorplan``, ``avta.synth`` and ``avta.formal``.
"""

from .version import __version__

__all__ = ["__version__"]
