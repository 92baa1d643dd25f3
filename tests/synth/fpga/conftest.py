"""Small designs with known memories and a GEMM lane for the ECP5 flow's tests: each
synthesizes, places and routes in seconds."""

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from avta.hw.core.gemm import tree_sum


class MemoryUnit(wiring.Component):
    """One memory of ``depth`` x ``width`` with ``writes`` write ports and ``reads`` read
    ports (asynchronous with ``comb_read``), every address and data from ports of its own."""

    def __init__(self, depth, width, writes=1, reads=1, comb_read=False):
        self._geom = (depth, width, writes, reads, comb_read)
        abits = (depth - 1).bit_length()
        members = {}
        for i in range(writes):
            members |= {f"wa{i}": In(abits), f"wd{i}": In(width), f"we{i}": In(1)}
        for i in range(reads):
            members |= {f"ra{i}": In(abits), f"rd{i}": Out(width)}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        depth, width, writes, reads, comb_read = self._geom
        m.submodules.mem = mem = Memory(shape=width, depth=depth, init=[])
        for i in range(writes):
            w = mem.write_port()
            m.d.comb += [w.addr.eq(getattr(self, f"wa{i}")), w.data.eq(getattr(self, f"wd{i}")),
                         w.en.eq(getattr(self, f"we{i}"))]
        for i in range(reads):
            r = mem.read_port(domain="comb" if comb_read else "sync")
            m.d.comb += [r.addr.eq(getattr(self, f"ra{i}")), getattr(self, f"rd{i}").eq(r.data)]
        return m


#: unit name -> (MemoryUnit arguments, the plan's kind, DP16KD, DPR16X4 cells).
KNOWN = {
    "bram_1w1r": ((512, 32), "bram", 1, 0),         # one PDPW16KD (512 x 36)
    "bram_1w2r": ((512, 16, 1, 2), "bram", 2, 0),        # a copy per read port
    "ff_2w1r": ((64, 8, 2, 1), "ff", 0, 0),          # two write ports: flip-flops
    "lutram_async": ((16, 8, 1, 1, True), "lutram", 0, 2),
}


class KnownMemories(wiring.Component):
    """The memories of :data:`KNOWN`, each in a submodule of that name."""

    def __init__(self):
        self._units = {name: MemoryUnit(*args) for name, (args, *_rest) in KNOWN.items()}
        members = {}
        for name, unit in self._units.items():
            for port, member in unit.signature.members.items():
                members[f"{name}__{port}"] = member
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for name, unit in self._units.items():
            m.submodules[name] = unit
            for port, member in unit.signature.members.items():
                outer, inner = getattr(self, f"{name}__{port}"), getattr(unit, port)
                m.d.comb += inner.eq(outer) if member.flow == In else outer.eq(inner)
        return m


class GemmLane(wiring.Component):
    """One GEMM output lane: BLOCK_IN 8-bit products summed by the GEMM's own adder tree,
    inputs and output registered."""

    def __init__(self, block_in):
        self._n = block_in
        super().__init__({"a": In(8 * block_in), "b": In(8 * block_in), "y": Out(32)})

    def elaborate(self, platform):
        m = Module()
        n = self._n
        a, b = Signal(8 * n), Signal(8 * n)
        m.d.sync += [a.eq(self.a), b.eq(self.b)]
        products = [a[8 * i:8 * i + 8].as_signed() * b[8 * i:8 * i + 8].as_signed()
                    for i in range(n)]
        m.d.sync += self.y.eq(tree_sum(products))
        return m


@pytest.fixture
def known_memories():
    """A :class:`KnownMemories` and :data:`KNOWN`."""
    return KnownMemories(), KNOWN


@pytest.fixture
def memory_unit():
    """:class:`MemoryUnit`, to build memories of any shape."""
    return MemoryUnit


@pytest.fixture
def gemm_lane():
    """:class:`GemmLane`, by BLOCK_IN."""
    return GemmLane
