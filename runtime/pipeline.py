"""Virtual threads: the token protocol that lets load, compute and store overlap safely.

An operator splits its work into *load tasks* (LOADs of INP/WGT into one of ``threads`` input
buffers, then the GEMMs that read them) and *output tiles* (compute into one of ``threads``
accumulator buffers, then the STOREs that read them). Buffer ``j % threads`` serves task or tile
``j``; with two threads the next task loads while the current one computes, and the next tile
computes while the current one stores (upstream's ``cthread``/``dthread`` double buffering).
An operator whose tiles end with long ALU passes may keep more accumulator buffers (``slots``)
than input buffers: tile ``t`` then uses accumulator buffer ``t % slots``, and its start waits
for the store of tile ``t − slots`` rather than of the tile just before the one it follows.

The tokens (upstream's ``VTADepPush``/``VTADepPop``; docs/isa.md §3 rule (a)):

====================  ===========================================  =====================
where                 tokens                                       orders
====================  ===========================================  =====================
load task j           pop C→L if j ≥ window … push L→C              WAR on input buffer
compute of task j     pop L→C … push C→L                            RAW on input buffer
compute of tile t     pop S→C if t ≥ slots … push C→S                WAR on ACC/OUT buffer
store of tile t       pop C→S … push S→C                            RAW on OUT buffer
====================  ===========================================  =====================

The k-th pop of a queue waits for the k-th push, so task j's C→L pop waits for the compute of task
j − threads, and tile t's S→C pop for the store of tile t − slots: exactly the previous user of
the same buffer. No counter ever holds more than ``max(threads, slots)`` tokens (rule (b)),
but for one: a load task may be loaded in two pieces, each with its L→C token
(:meth:`Pipeline.end_load_piece`, :mod:`avta.runtime.ops.conv_first`), so that computing starts
on the first; one task at a time, so L→C holds up to ``threads + 1``.

The load ``window`` is ``threads`` but where every load task fills resident slots of its own
(:func:`load_window`): no later LOAD overwrites what a task's GEMMs read, so the load stage
need not wait for them, and task j waits only for the compute of task j − window (L→C then
holds up to ``window + 2`` tokens: the first and the last task may both be in pieces).
"""

from avta.isa.enums import Stage

__all__ = ["Pipeline", "load_window"]

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def load_window(cfg, threads, resident):
    """How far the load stage may run ahead: load task j waits for the compute of task
    j − window. ``threads`` (the task before it in the same input buffer), unless every task's
    LOADs fill ``resident`` slots of their own, which no later LOAD overwrites: then one task
    more, where the token counters hold its token and a task in pieces' (``threads + 3``). A
    layer bound by its weight LOADs then streams them instead of waiting, every ``threads``
    tasks, for a GEMM to drain and two tokens to travel; further ahead, the load stage's bursts
    would crowd the compute stage's own reads on the read engine (a fused add's shortcut rows:
    4×16 channels 7×7 on ``default``, 8,546 fsim cycles one task ahead, 9,027 unbounded)."""
    if resident and (1 << cfg.token_bits) - 1 >= threads + 3:
        return threads + 1
    return threads


class Pipeline:
    """Token bookkeeping of load tasks and output tiles on one :class:`StreamBuilder`."""

    def __init__(self, builder, *, threads=2, slots=None, load_window=None):
        if threads not in (1, 2):
            raise ValueError(f"threads must be 1 or 2 (single or double buffering), got {threads}")
        slots = threads if slots is None else slots
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < threads:
            raise ValueError(f"slots (accumulator buffers) must be an integer of at least "
                             f"threads = {threads}, got {slots!r}")
        limit = builder.ledger.limit
        if slots > limit:
            raise ValueError(f"{slots} accumulator buffers need {slots} tokens in flight; the "
                             f"token counters hold {limit}")
        window = threads if load_window is None else load_window
        if isinstance(window, bool) or not isinstance(window, int) or \
                window != threads and not threads < window <= limit - 2:
            raise ValueError(f"load_window must be threads = {threads} or an integer up to the "
                             f"token counters' {limit} less 2, got {load_window!r}")
        self._b = builder
        self.threads = threads   # input buffers: load task j fills buffer j % threads
        # Load task j waits for the compute of task j - load_window: threads, the task before
        # it in the same buffer, unless the tasks' LOADs fill resident slots of their own.
        self.load_window = window
        self.slots = slots       # accumulator buffers: output tile t uses buffer t % slots
        self._loads = 0          # load tasks begun by the load stage
        self._computes = 0       # load tasks consumed by the compute stage
        self._begun = 0          # output tiles begun by the compute stage
        self._tiles = 0          # output tiles ended by the compute stage
        self._stores = 0         # output tiles stored
        self._piece = None       # the load task in pieces whose second token is not taken
        self._loading = 0        # 1 between begin_load and end_load

    # -- load stage -----------------------------------------------------------------------------

    def begin_load(self):
        """Start load task j: the index of the input buffer it fills."""
        j = self._loads
        if j >= self.load_window:
            self._b.dep_pop(C, L)
        self._loading = 1
        return j % self.threads

    def end_load(self):
        self._b.dep_push(L, C)
        self._loads += 1
        self._loading = 0

    @property
    def loads_begun(self):
        """Load tasks begun (the index of the next, or, within one, that one's plus one)."""
        return self._loads + self._loading

    @property
    def computes_begun(self):
        """The index of the load task the compute stage computes on next (or is computing)."""
        return self._computes

    def end_load_piece(self):
        """End the first piece of the load task begun (its first LOADs): a token of its own,
        which :meth:`begin_compute_piece` takes after :meth:`begin_compute` took the first.
        One task at a time may have one (``threads + 1`` tokens in flight at most): a task
        loads in pieces only once the compute stage took the last piece's token."""
        if self._piece is not None:
            raise RuntimeError(f"load task {self._loads} in pieces while task {self._piece}'s "
                               f"second token is not taken")
        self._b.dep_push(L, C)
        self._piece = self._loads

    # -- compute stage --------------------------------------------------------------------------

    def compute_buffer(self):
        """The input buffer :meth:`begin_compute` will return, without taking its token."""
        return self._computes % self.threads

    def begin_compute(self):
        """Compute on load task j (already ended): the index of its input buffer."""
        j = self._computes
        if j >= self._loads:
            raise RuntimeError(f"compute of load task {j} before that task was loaded")
        self._b.dep_pop(L, C)
        return j % self.threads

    def begin_compute_piece(self):
        """Compute on the rest of a load task loaded in pieces (:meth:`end_load_piece`), after
        :meth:`begin_compute`: take its second token."""
        if self._piece != self._computes:
            raise RuntimeError(f"the rest of load task {self._computes}, which was not loaded "
                               f"in pieces")
        self._b.dep_pop(L, C)
        self._piece = None

    def end_compute(self):
        self._b.dep_push(C, L)
        self._computes += 1

    def tile_buffer(self):
        """The accumulator buffer :meth:`begin_tile` will return, without taking its token."""
        return self._begun % self.slots

    def begin_tile(self):
        """Start output tile t: the index of the accumulator buffer it writes. Tile t may begin
        before tile t − 1 ends (its requantization can run beside tile t's GEMMs), never before
        tile t − slots ends: the two would share a buffer."""
        t = self._begun
        if t - self._tiles >= self.slots:
            raise RuntimeError(f"output tile {t} begun while tile {t - self.slots}, which "
                               f"uses the same accumulator buffer, has not ended")
        if t >= self.slots:
            self._b.dep_pop(S, C)
        self._begun += 1
        return t % self.slots

    def end_tile(self):
        """End the oldest output tile not yet ended."""
        if self._tiles >= self._begun:
            raise RuntimeError(f"end of output tile {self._tiles}, which has not begun")
        self._b.dep_push(C, S)
        self._tiles += 1

    # -- store stage ----------------------------------------------------------------------------

    def begin_store(self):
        """Store output tile t (already ended): the index of its accumulator buffer."""
        t = self._stores
        if t >= self._tiles:
            raise RuntimeError(f"store of output tile {t} before that tile was computed")
        self._b.dep_pop(C, S)
        return t % self.slots

    def end_store(self):
        self._b.dep_push(S, C)
        self._stores += 1
