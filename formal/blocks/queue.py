"""Instruction queues (hw/core/queue.py): the buffer between fetch and each stage.

The queue's logic does not depend on its depth (an Amaranth ``SyncFIFOBuffered``), so it is
checked at a small depth (:data:`DEPTH`) where a full queue is a few cycles away, with the
configuration's full entry layout (instruction + index). Environment: none; the writer and the
reader may raise ``valid``/``ready`` in any cycle.

``occupancy``
    The entries accepted minus those taken never exceed the depth (no write is lost to a full
    queue: overflow) and ``r.valid`` only with an entry inside (underflow). Proven by
    k-induction: the count is the FIFO's own ``level`` (``InsnQueue.fifo``, read-only) plus the
    head register's entry.
``fifo``
    First in, first out: track one arbitrary write (the solver picks which); the read with the
    same rank returns its entry unchanged.
"""

from amaranth.hdl import Signal

from avta.hw.core.queue import InsnQueue, entry_layout

from ..harness import Check, Harness

__all__ = ["checks", "DEPTH"]

#: The depth the queue is checked at (the core's queues hold INSN_QUEUE_DEPTH entries).
DEPTH = 4
#: Width of the write and read ranks the FIFO check counts (the tracked write is among the first
#: 2^RANK_BITS; ranks past that saturate).
RANK_BITS = 5


class QueueHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._faults, self._prop = cfg, faults, prop

    def properties(self, m):
        m.submodules.dut = dut = InsnQueue(cfg=self._cfg, depth=DEPTH, faults=self._faults)
        width = entry_layout(self._cfg).size
        w_valid, w_bit = self.input("w_valid"), self.input("w_bit")
        # Data independence (Wolper): a queue only stores and moves entries, never looks at
        # them, and treats every bit alike; so each write carries one free bit in every bit
        # position, which lets Yosys merge the 160 equal bits of a stored entry into one.
        w_data = Signal(width)
        m.d.comb += w_data.eq(w_bit.replicate(width))
        r_ready = self.input("r_ready")
        m.d.comb += [dut.w.valid.eq(w_valid), dut.w.payload.eq(w_data), dut.r.ready.eq(r_ready)]
        put = dut.w.valid & dut.w.ready
        get = dut.r.valid & dut.r.ready
        held = Signal(range(2 * DEPTH + 2))
        m.d.sync += held.eq(held + put - get)
        self.promise(m, held <= DEPTH)
        self.promise(m, ~dut.r.valid | (held != 0))
        # Induction invariant: the count is the FIFO's own level (read-only, InsnQueue.fifo)
        # and the head register's entry.
        self.promise(m, held == dut.fifo.level + dut.r.valid)
        # The FIFO's memory (its level less its output entry) holds at most its depth − 1: its
        # counters have room for values they never reach (a full memory and an output entry
        # wrap ``level`` to 0), which induction must rule out.
        self.promise(m, (dut.fifo.level >= dut.fifo.r_rdy)
                     & (dut.fifo.level - dut.fifo.r_rdy <= DEPTH - 2))
        self.cover(m, held == DEPTH)
        self.cover(m, (held == DEPTH) & w_valid & ~dut.w.ready)
        if self._prop != "fifo":
            return
        track = self.constant(m, "track", RANK_BITS)
        puts, gets = Signal(RANK_BITS + 1), Signal(RANK_BITS + 1)
        with m.If(put & ~puts[-1]):
            m.d.sync += puts.eq(puts + 1)
        with m.If(get & ~gets[-1]):
            m.d.sync += gets.eq(gets + 1)
        tracked, have = Signal(width), Signal()
        with m.If(put & (puts == track)):
            m.d.sync += [tracked.eq(w_data), have.eq(1)]
        out = Signal(width)
        m.d.comb += out.eq(dut.r.payload)
        self.promise(m, ~(get & (gets == track)) | (have & (out == tracked)))
        self.cover(m, get & (gets == track) & (track == DEPTH))


def checks(cfg, faults=frozenset()):
    return [
        Check("queue", "occupancy", f"accepted − taken entries stay in 0..{DEPTH} (depth "
              f"{DEPTH}): no overflow, no underflow",
              lambda: QueueHarness(cfg, faults, "occupancy"), depth=2 * DEPTH + 4),
        Check("queue", "fifo", "the k-th entry taken is the k-th entry written, for an "
              "arbitrary k",
              lambda: QueueHarness(cfg, faults, "fifo"), depth=2 * DEPTH + 6),
    ]
