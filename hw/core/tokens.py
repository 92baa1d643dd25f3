"""A dependency-token counter (docs/isa.md §3: four of them, L→C, C→L, C→S, S→C)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .faults import FAULT_TOKEN_BITS, FaultName

__all__ = ["TokenCounter"]


class TokenCounter(wiring.Component):
    """Counts tokens pushed by one stage and not yet popped by another.

    ``faults``: a set of :data:`avta.hw.core.faults.FAULTS` names (tests only).

    Ports
    -----
    push : In(1)
        The producing stage completes an instruction with this push flag.
    pop : In(1)
        The consuming stage starts an instruction with this pop flag (only when ``nonzero``).
    nonzero : Out(1)
        A token is available: an instruction that pops it may start.
    overflow : Out(1)
        ``push`` would take the counter past 2^TOKEN_BITS − 1 (error 7). The count then stays.
    count : Out(TOKEN_BITS)
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._bits = cfg.token_bits
        self._faults = faults
        super().__init__({
            "push": In(1), "pop": In(1),
            "nonzero": Out(1), "overflow": Out(1), "count": Out(self._bits),
        })

    def elaborate(self, platform):
        m = Module()
        full = self.count == (1 << self._bits) - 1
        m.d.comb += [
            self.nonzero.eq(self.count != 0),
            self.overflow.eq(self.push & full & ~self.pop),
        ]
        incremented = self.count + 1
        if FaultName.TOKEN_WRAP in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            incremented = incremented[:FAULT_TOKEN_BITS]
        with m.If(self.push & ~self.pop & ~full):
            m.d.sync += self.count.eq(incremented)
        with m.Elif(self.pop & ~self.push & (self.count != 0)):
            m.d.sync += self.count.eq(self.count - 1)
        return m
