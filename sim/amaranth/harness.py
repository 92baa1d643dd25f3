"""A unit under test together with the scratchpads it reads and writes.

Block tests of the core's units (loads, GEMM, ALU, store) need real ``lib.memory`` scratchpads
behind the units' read and write ports; :class:`ScratchpadHarness` builds them from
:mod:`avta.hw.core.sram` and connects them, and offers row access for the testbench.
"""

from amaranth.hdl import Elaboratable, Module
from amaranth.lib.wiring import connect

from avta.hw.core.banks import BankedScratchpad
from avta.hw.core.sram import geometry, make_memory
from avta.isa.memories import scratchpad

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
        of the same scratchpad (a read in the cycle of a write sees the new data), except on an
        interleaved scratchpad (the micro-ops), which is the core's own
        :class:`~avta.hw.core.banks.BankedScratchpad`: its writes write several rows.
    """

    def __init__(self, cfg, unit, ports):
        self._cfg = cfg
        self.dut = unit
        self._ports = dict(ports)
        pads = dict.fromkeys(pad for pad, _ in self._ports.values())
        self._banked = {}
        for pad in pads:
            if scratchpad(cfg, pad).interleaved:
                members = [mb for mb, (p, _) in self._ports.items() if p == pad]
                self._banked[pad] = BankedScratchpad(
                    cfg, pad, writers=tuple(mb for mb in members if self._ports[mb][1] == "w"),
                    readers={mb: 0 for mb in members if self._ports[mb][1] == "r"})
        self.mems = {pad: make_memory(cfg, pad) for pad in pads if pad not in self._banked}

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        writes = {}
        for member, (pad, kind) in self._ports.items():
            if pad in self._banked:
                port = getattr(self._banked[pad], f"{'wr' if kind == 'w' else 'rd'}_{member}")
                connect(m, getattr(self.dut, member), port)
            elif kind == "w":
                port = self.mems[pad].write_port(granularity=geometry(self._cfg, pad).granularity)
                writes[pad] = port
                connect(m, getattr(self.dut, member), port)
        for member, (pad, kind) in self._ports.items():
            if kind == "r" and pad not in self._banked:
                transparent = (writes[pad],) if pad in writes else ()
                port = self.mems[pad].read_port(transparent_for=transparent)
                connect(m, getattr(self.dut, member), port)
        for pad, mem in self.mems.items():
            m.submodules[f"{pad}_mem"] = mem
        for pad, banked in self._banked.items():
            m.submodules[f"{pad}_mem"] = banked
        return m

    def _cells(self, pad, rows):
        """The memory cells (of each copy) that hold ``rows`` of scratchpad ``pad``."""
        if pad not in self._banked:
            mem = self.mems[pad]
            return [[mem.data[row]] for row in rows]
        banked = self._banked[pad]
        out = []
        for row in rows:
            bank, local = banked.locate(row)
            out.append([banked.memories[(bank, c)].data[local] for c in range(banked.copies)])
        return out

    def get_rows(self, ctx, pad, count=None):
        """Rows ``0 … count-1`` of scratchpad ``pad`` as integers (all rows by default)."""
        count = count or geometry(self._cfg, pad).depth
        return [ctx.get(cells[0]) for cells in self._cells(pad, range(count))]

    def set_rows(self, ctx, pad, rows, start=0):
        """Write integer ``rows`` into scratchpad ``pad`` from row ``start``."""
        rows = list(rows)
        for value, cells in zip(rows, self._cells(pad, range(start, start + len(rows)))):
            for cell in cells:
                ctx.set(cell, value)
