"""A one-cycle register on a stream: the memory engine's read commands and read beats.

Beats: the path from the AXI R channel (the ID's tag-buffer lookup) through a client's row
arithmetic into a scratchpad write was the critical path on an ECP5 (docs/architecture.md,
timing on an FPGA); a register on the beats starts the clients' half at a flip-flop. Its
``ready`` upstream is registered too (``registered_ready``): otherwise the clients' ``ready``,
which their row writers form from the beat, reached the read engine's RREADY and its
tag-buffer counters in the same cycle (the binding path once fetch's commands were cut).
Commands: the arbiter's grant depends on every client's ``valid``, and each client's
``ready`` on the grant, so a client's command logic (fetch's count of instructions left)
reached another client's beat counter through it; a register on each client's commands makes
every ``valid`` the arbiter sees a flip-flop.

One cycle of latency, a transfer every cycle. Plain, ``ready`` upstream is high while the
register is empty or being emptied. With ``registered_ready`` it is high while a second
place for an item is free: an item that arrives while the output waits is held, and goes out
as soon as the output is taken, before anything newer. Downstream sees the same items in the
same cycles as behind the plain register whenever upstream has one to give; upstream only
ever gives an item up earlier.

With ``registered_ready`` the two places are slots of a ring, read through a multiplexer: an
item is written into a free slot (whose enable is that it is free, flip-flops only) and
downstream's ``ready`` moves a read pointer and two level flags, nothing else. As an output
register with a held one beside it, the consumer's ``ready`` (a row writer's, formed from the
beat) was the enable of every payload flip-flop of both: the binding path of ``tiny`` on an
ECP5, mostly routing to that fan-out (docs/architecture.md, timing on an FPGA). ``bulk``
names payload fields the consumer's ``ready`` does not depend on (the beat's ``data``): their
multiplexers have a copy of the pointer of their own, so the pointer that starts the
``ready`` path drives only the few multiplexers that path needs. ``head`` names fields
(dotted paths, ``tag.client``) kept in a register of the item at the head instead: a consumer
that decodes them (the arbiter's choice of client, and so every client's ``valid``) starts at
flip-flops, as behind an output register, at the price of a few more flip-flops that
``ready`` reaches.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamRegister"]


class StreamRegister(wiring.Component):
    """``i`` in, ``o`` out one cycle later; ``layout`` is the payload's shape; with
    ``registered_ready`` ``i.ready`` is a flip-flop (a ring of two slots is not full), and
    ``bulk`` names fields of a ``StructLayout`` payload read through their own pointer copy,
    ``head`` fields (dotted paths) kept in a register of the head item's."""

    def __init__(self, layout, *, registered_ready=False, bulk=(), head=()):
        if (bulk or head) and not registered_ready:
            raise ValueError(f"bulk fields {bulk!r} and head fields {head!r} need "
                             f"registered_ready (the plain register has no ring)")
        self._layout, self._registered_ready = layout, registered_ready
        self._bulk, self._head = tuple(bulk), tuple(head)
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        if not self._registered_ready:
            m.d.comb += i.ready.eq(~o.valid | o.ready)
            with m.If(i.ready):
                m.d.sync += [o.valid.eq(i.valid), o.payload.eq(i.payload)]
            return m
        slots = [Signal(self._layout, name=f"slot{k}") for k in range(2)]
        rd = Signal()                     # the slot that goes out next
        # The same pointer inverted (1 reads slot 0): a copy synthesis cannot merge with it.
        rd_bulk = Signal(init=1)
        nonempty, full = Signal(), Signal()
        push, pop = Signal(), Signal()
        m.d.comb += [i.ready.eq(~full), o.valid.eq(nonempty),
                     push.eq(i.valid & ~full), pop.eq(nonempty & o.ready)]
        for k, slot in enumerate(slots):
            # Slot rd holds an item when the ring is not empty, the other when it is full. A
            # free slot loads whatever is offered: the pushed item lands in a free slot, which
            # is the one read next when the ring was empty.
            occupied = Mux(rd == k, nonempty, full)
            with m.If(~occupied):
                m.d.sync += slot.eq(i.payload)
        for name in self._bulk:
            m.d.comb += getattr(o.payload, name).eq(
                Mux(rd_bulk, getattr(slots[0], name), getattr(slots[1], name)))
        rest = [name for name in self._layout.members if name not in self._bulk] \
            if self._bulk else None
        if rest is None:
            m.d.comb += o.payload.eq(Mux(rd, slots[1], slots[0]))
        else:
            for name in rest:
                m.d.comb += getattr(o.payload, name).eq(
                    Mux(rd, getattr(slots[1], name), getattr(slots[0], name)))
        for path in self._head:
            # The head item's field, as an output register would hold it: the other slot's
            # after a pop from a full ring, the item pushed into an empty (or emptied) one.
            # Driven after the multiplexers above, so this assignment is the one that holds.
            held = Signal.like(_field(o.payload, path), name="head_" + path.replace(".", "_"))
            with m.If(pop & full):
                m.d.sync += held.eq(Mux(rd, _field(slots[0], path), _field(slots[1], path)))
            with m.Elif(pop | ~nonempty):
                m.d.sync += held.eq(_field(i.payload, path))
            m.d.comb += _field(o.payload, path).eq(held)
        with m.If(pop):
            m.d.sync += [rd.eq(~rd), rd_bulk.eq(~rd_bulk)]
        m.d.sync += [nonempty.eq(full | push | (nonempty & ~pop)),
                     full.eq(Mux(full, ~pop, nonempty & push & ~pop))]
        return m


def _field(view, path):
    """The field of ``view`` at the dotted ``path``."""
    for name in path.split("."):
        view = getattr(view, name)
    return view
