"""The accelerator core: fetch, instruction queues, token counters, load/compute/store stages
and their units (docs/architecture.md, Hardware). The top is :class:`avta.hw.core.core.Core`."""
