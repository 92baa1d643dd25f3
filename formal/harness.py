"""What a property is: a harness around one real block, and the check that runs it.

A :class:`Harness` instantiates a block of :mod:`avta.hw` unchanged and adds Amaranth
``Assume``/``Assert``/``Cover`` statements: the environment's rules are assumptions, the block's
promises assertions, and covers show that the interesting states are reachable under the
assumptions (so no assertion holds vacuously). Every input of the block is driven from a *free
input* of the harness, a top-level port that the solver may set to any value in every cycle;
an *arbitrary constant* is a free input assumed never to change (the tracked entry of a queue,
the operands of a lane).

A harness reads a block's internal state (what a strengthening invariant is stated over, so
that k-induction can close) through attributes the block creates in its constructor and uses
in its ``elaborate`` (``Fetch.head``, ``InsnQueue.fifo``, ``Alu.lanes``): plain signals and
submodules, not ports, so the generated Verilog is the same with or without a harness.

A :class:`Check` names one property of one block and says how deep to look. Its harness is
built afresh by ``build()``, so the counterexample replay (:mod:`avta.formal.replay`) drives the
very design the solver saw.
"""

from dataclasses import dataclass, field
from typing import Callable

from amaranth.hdl import (Assert, Assume, Cover, Elaboratable, Fragment, Module, ResetSignal,
                          Signal)

__all__ = ["Harness", "Check"]


class Harness(Elaboratable):
    """A block with its properties. Subclasses implement :meth:`properties` with
    :meth:`promise` (an assertion), :meth:`assume` and :meth:`cover`.

    ``replay``: build for the simulator instead of the solver. Each promise is then a signal
    that :func:`avta.formal.replay.replay` reads once per cycle after the logic has settled (the
    simulator would otherwise check an ``Assert`` at every delta and trip on glitches).
    """

    def __init__(self):
        self.inputs = []        # the free inputs, in port order (the solver drives them)
        self.promises = []      # replay: (signal, where) for every promise
        self.replay = False
        self._module = None
        self._started = None

    def promise(self, m, cond):
        """Assert ``cond`` in every cycle (a promise of the block)."""
        if self.replay:
            import inspect
            caller = inspect.stack()[1]
            ok = Signal(name=f"promise{len(self.promises)}")
            m.d.comb += ok.eq(cond)
            self.promises.append((ok, f"{caller.filename}:{caller.lineno}"))
        else:
            m.d.comb += Assert(cond, src_loc_at=1)

    def assume(self, m, cond):
        """Assume ``cond`` in every cycle (a rule of the environment); a replay trusts the
        solver's trace to keep it."""
        if not self.replay:
            m.d.comb += Assume(cond, src_loc_at=1)

    def cover(self, m, cond):
        """``cond`` must be reachable (checked by the cover task)."""
        if not self.replay:
            m.d.comb += Cover(cond, src_loc_at=1)

    def design(self):
        """The elaborated harness (built once); :attr:`inputs` is complete after this."""
        if self._module is None:
            self._module = Fragment.get(self, None)
        return self._module

    def input(self, name, shape=1):
        """A free input: any value in any cycle, unless an assumption says otherwise."""
        sig = Signal(shape, name=name)
        self.inputs.append(sig)
        return sig

    def constant(self, m, name, shape=1):
        """A free input the solver picks once: assumed equal to its value in the cycle before."""
        sig = self.input(name, shape)
        before = Signal.like(sig, name=f"{name}_before")
        m.d.sync += before.eq(sig)
        self.assume(m, ~self.started(m) | (sig == before))
        return sig

    def started(self, m):
        """0 in the power-on cycle, 1 after it (the constants are free until then). A proof by
        induction states what the block's state is while it is 0 (a window may start there)."""
        if self._started is None:
            self._started = Signal(name="started")
            m.d.sync += self._started.eq(1)
        return self._started

    def properties(self, m):
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        # The proofs are about a running block: reset is the power-on state (every register at
        # its init value), not an input that may strike mid-trace.
        self.assume(m, ~ResetSignal())
        self.properties(m)
        return m


#: The CPU seconds a check's tools may use unless it says otherwise (:attr:`Check.budget`).
DEFAULT_BUDGET = 600.0


@dataclass(frozen=True)
class Check:
    """One property of one block, with its depths.

    Attributes
    ----------
    block, name : the table's row (``tokens``, ``count``).
    description : what is proven, in a sentence (docs/formal.md).
    build : returns a fresh :class:`Harness`.
    depth : the induction length k of ``mode prove``, or the BMC depth when ``prove`` is off or
        the induction does not converge ("bounded to depth N").
    prove : try k-induction (``False``: bounded model checking only).
    cover_depth : steps the covers may take (default ``depth``); a cover that needs more is
        reported unreached, which is a failure.
    base_depth : with ``prove``, a base case deeper than the induction's ``depth``, checked
        first by BMC (a k-induction that closes at a small k, on a block whose failures take
        more cycles to show).
    cover_skip : first step at which covers are checked (deep covers of counters: the solver
        skips the cheap early steps where they cannot be reached yet).
    solver : the SMT solver this check runs fastest on (``yices``, or ``z3`` where yices
        stalls: the ALU's shifter equivalence); ``avta formal --solver`` overrides it.
    combinational : the harness has no state (no flip-flop, no memory: the runner refuses it
        otherwise), so one cycle with free inputs is every case and a pass of that one cycle
        is a proof (``depth`` is ignored). k-induction would only repeat the same question
        under the extra hypothesis of an unrelated earlier cycle, which for arithmetic
        equivalences made the solver several times slower.
    flatten : flatten the design into one module before Yosys optimises it, so that a
        constant the harness drives into a block (the compute checks' zero INP and WGT rows)
        is folded through it; SymbiYosys would otherwise keep the hierarchy, and the blocks'
        logic on those constants, in the solver's problem.
    budget : the CPU seconds (user + system) the tools the check starts may use by default
        (:func:`avta.formal.runner.run_check`; ``avta formal --timeout`` sets one limit of
        wall-clock seconds for every check instead): :data:`DEFAULT_BUDGET`, or for the long
        checks about twice the most CPU they used (docs/formal.md, "Budgets"). CPU seconds,
        not wall clock: a machine shared with other work slows a proof, it does not make it
        fail.
    """
    block: str
    name: str
    description: str
    build: Callable[[], Harness] = field(repr=False, compare=False)
    depth: int = 20
    prove: bool = True
    cover_depth: int | None = None
    cover_skip: int = 0
    base_depth: int | None = None
    solver: str = "yices"
    combinational: bool = False
    flatten: bool = False
    budget: float = DEFAULT_BUDGET

    @property
    def key(self):
        return f"{self.block}.{self.name}"

    @property
    def covers_depth(self):
        if self.cover_depth is not None:
            return self.cover_depth
        return 1 if self.combinational else self.depth
