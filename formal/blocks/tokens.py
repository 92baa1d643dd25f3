"""Dependency-token counters (hw/core/tokens.py, docs/isa.md §3 "Dependency tokens").

Environment: a consuming stage pops only when the counter says ``nonzero`` (an instruction that
pops starts only then). Promises, for every ``TOKEN_BITS`` from 2 to 16 at once (one counter
per width in one harness):

``count``
    The count equals the number of accepted pushes minus pops, computed two bits wider, so it
    never wraps (overflow) nor goes below zero (underflow); ``nonzero`` says count ≠ 0.
``error7``
    ``overflow`` (error 7) is raised exactly when a push meets a full counter (2^TOKEN_BITS − 1
    after this cycle's pop, so a push with a pop on a full counter is no error), and the count
    then stays.
``fill``
    Covers only: the configuration's own counter fills and overflows (2^TOKEN_BITS pushes from
    power-on, so the cover depth is the counter's range).
"""

from amaranth.hdl import Signal

from avta.hw.core.tokens import TokenCounter
from avta.isa.config import KEYS

from ..harness import Check, Harness

__all__ = ["checks", "token_widths"]

#: Widths whose overflow the ``count`` and ``error7`` checks also cover (cheap: ≤ 16 pushes).
_COVERED_WIDTHS = (2, 3, 4)


def token_widths():
    """Every legal TOKEN_BITS (docs/isa.md: the configuration key's range)."""
    low, high = (int(v) for v in KEYS["TOKEN_BITS"][1].split(".."))
    return range(low, high + 1)


class TokenHarness(Harness):
    """One :class:`TokenCounter` per width in ``widths``, each pushed and popped freely."""

    def __init__(self, cfg, widths, *, prop, faults, covered):
        super().__init__()
        self._cfg, self._widths, self._prop = cfg, list(widths), prop
        self._faults, self._covered = faults, covered

    def properties(self, m):
        for bits in self._widths:
            dut = TokenCounter(cfg=self._cfg.replace(token_bits=bits), faults=self._faults)
            m.submodules[f"tok{bits}"] = dut
            push, pop = self.input(f"push{bits}"), self.input(f"pop{bits}")
            m.d.comb += [dut.push.eq(push), dut.pop.eq(pop)]
            self.assume(m, ~pop | dut.nonzero)
            full = (1 << bits) - 1
            model = Signal(bits + 2, name=f"model{bits}")   # two bits wider: no wrap
            with m.If(push & ~pop & (model != full)):
                m.d.sync += model.eq(model + 1)
            with m.Elif(pop & ~push):
                m.d.sync += model.eq(model - 1)
            if self._prop == "count":
                self.promise(m, dut.count == model)
                self.promise(m, model <= full)
                self.promise(m, dut.nonzero == (model != 0))
            else:       # "error7", and "fill", which covers the same harness deeper
                self.promise(m, dut.overflow == (push & ~pop & (model == full)))
                # The count stays when the push is refused (checked one cycle later).
                was_overflow = Signal(name=f"was_overflow{bits}")
                m.d.sync += was_overflow.eq(dut.overflow)
                self.promise(m, ~was_overflow | (dut.count == full))
                # Induction needs the count tied to the model as well.
                self.promise(m, dut.count == model)
            if bits in self._covered:
                self.cover(m, dut.overflow)
            if bits in self._covered and self._prop != "fill":
                drained = Signal(name=f"drained{bits}")
                with m.If(dut.overflow):
                    m.d.sync += drained.eq(1)
                self.cover(m, drained & (dut.count == 0))


def checks(cfg, faults=frozenset()):
    widths = token_widths()
    bits = cfg.token_bits
    return [
        Check("tokens", "count", "count = accepted pushes − pops, never wrapping or below 0, "
              f"for TOKEN_BITS {widths.start}..{widths.stop - 1}",
              lambda: TokenHarness(cfg, widths, prop="count", faults=faults,
                                   covered=_COVERED_WIDTHS), depth=8, cover_depth=40),
        Check("tokens", "error7", "overflow (error 7) exactly when a push meets a full counter, "
              f"count unchanged, for TOKEN_BITS {widths.start}..{widths.stop - 1}",
              lambda: TokenHarness(cfg, widths, prop="error7", faults=faults,
                                   covered=_COVERED_WIDTHS), depth=8, cover_depth=40),
        Check("tokens", "fill", f"the configuration's counter (TOKEN_BITS {bits}) fills and "
              f"overflows ({(1 << bits) - 1} pushes, then one more)",
              lambda: TokenHarness(cfg, [bits], prop="fill", faults=faults, covered=[bits]),
              depth=4, cover_depth=(1 << bits) + 1, cover_skip=(1 << bits) - 1),
    ]
