"""A unit under test together with the scratchpads it reads and writes.

Block tests of the core's units (loads, GEMM, ALU, store) need real ``lib.memory`` scratchpads
behind the units' read and write ports; :class:`ScratchpadHarness` builds them from
:mod:`avta.hw.core.sram` and connects them, and offers row access for the testbench.
"""

from amaranth.hdl import Elaboratable, Module
from amaranth.lib.wiring import connect

from avta.hw.core.sram import geometry, make_memory

__all__ = ["ScratchpadHarness"]


class ScratchpadHarness(Elaboratable):
    """``unit`` with scratchpads on its ports.

    Parameters
    ----------
    cfg : Config
    unit : Component
        The unit under test (a submodule named ``dut``).
    ports : dict
        ``{member name: (scratchpad name, "r" or "w")}``: which port member of ``unit`` is a
        read or write port of which scratchpad. Read ports are transparent to the write port
        of the same scratchpad (a read in the cycle of a write sees the new data).
    """

    def __init__(self, cfg, unit, ports):
        self._cfg = cfg
        self.dut = unit
        self._ports = dict(ports)
        pads = dict.fromkeys(pad for pad, _ in self._ports.values())
        self.mems = {pad: make_memory(cfg, pad) for pad in pads}

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        writes = {}
        for member, (pad, kind) in self._ports.items():
            if kind == "w":
                port = self.mems[pad].write_port(granularity=geometry(self._cfg, pad).granularity)
                writes[pad] = port
                connect(m, getattr(self.dut, member), port)
        for member, (pad, kind) in self._ports.items():
            if kind == "r":
                transparent = (writes[pad],) if pad in writes else ()
                port = self.mems[pad].read_port(transparent_for=transparent)
                connect(m, getattr(self.dut, member), port)
        for pad, mem in self.mems.items():
            m.submodules[f"{pad}_mem"] = mem
        return m

    def get_rows(self, ctx, pad, count=None):
        """Rows ``0 … count-1`` of scratchpad ``pad`` as integers (all rows by default)."""
        mem = self.mems[pad]
        return [ctx.get(mem.data[i]) for i in range(count or mem.depth)]

    def set_rows(self, ctx, pad, rows, start=0):
        """Write integer ``rows`` into scratchpad ``pad`` from row ``start``."""
        mem = self.mems[pad]
        for i, value in enumerate(rows):
            ctx.set(mem.data[start + i], value)

