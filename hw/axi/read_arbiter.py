"""Round-robin arbiter: several read clients share one read engine.

Each command's tag is widened with the number of the client that sent it, so its beats go
back to that client; a client that holds ``ready`` low holds the shared R channel (the beat
stays on the bus until taken), which only delays the others.
"""

from amaranth import Module, Signal
from amaranth.hdl import Shape
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..mem_client import ReadClientSignature

__all__ = ["ReadArbiter", "shared_tag_layout"]


def shared_tag_layout(tag_shapes):
    """The tag the shared engine carries: the client's number and its (widest) tag."""
    width = max(Shape.cast(s).width for s in tag_shapes)
    # At least one bit each: a zero-width field becomes a [-1:0] vector in Verilog.
    return data.StructLayout({"client": range(max(2, len(tag_shapes))), "tag": max(1, width)})


class ReadArbiter(wiring.Component):
    """``clients[i]`` are the read clients; ``engine`` is a read client of the shared engine."""

    def __init__(self, *, data_bits, tag_shapes):
        self._tag_shapes = list(tag_shapes)
        if not self._tag_shapes:
            raise ValueError("a read arbiter needs at least one client")
        self._shared = shared_tag_layout(self._tag_shapes)
        members = {f"client{i}": In(ReadClientSignature(data_bits=data_bits, tag_shape=shape))
                   for i, shape in enumerate(self._tag_shapes)}
        members["engine"] = Out(ReadClientSignature(data_bits=data_bits,
                                                    tag_shape=self._shared))
        super().__init__(members)

    def client(self, index):
        return getattr(self, f"client{index}")

    def elaborate(self, platform):
        m = Module()
        n = len(self._tag_shapes)
        engine = self.engine

        # -- commands: round robin, starting after the last client served ---------------------
        last = Signal(range(max(2, n)))
        grant = Signal(range(max(2, n)))
        any_valid = Signal()
        for offset in reversed(range(1, n + 1)):
            for i in range(n):
                with m.If((last + offset) % n == i):
                    with m.If(self.client(i).cmd.valid):
                        m.d.comb += [grant.eq(i), any_valid.eq(1)]
        m.d.comb += engine.cmd.valid.eq(any_valid)
        for i in range(n):
            cmd = self.client(i).cmd
            with m.If(grant == i):
                m.d.comb += [engine.cmd.p.addr.eq(cmd.p.addr), engine.cmd.p.beats.eq(cmd.p.beats),
                             engine.cmd.p.tag.client.eq(i),
                             engine.cmd.p.tag.tag.eq(cmd.p.tag),
                             cmd.ready.eq(engine.cmd.ready)]
        with m.If(engine.cmd.valid & engine.cmd.ready):
            m.d.sync += last.eq(grant)

        # -- beats: back to the client named in the tag -----------------------------------------
        beat = engine.data
        for i in range(n):
            out = self.client(i).data
            m.d.comb += [out.p.data.eq(beat.p.data), out.p.beat.eq(beat.p.beat),
                         out.p.err.eq(beat.p.err), out.p.tag.eq(beat.p.tag.tag),
                         out.valid.eq(beat.valid & (beat.p.tag.client == i))]
            with m.If(beat.p.tag.client == i):
                m.d.comb += beat.ready.eq(out.ready)
        return m
