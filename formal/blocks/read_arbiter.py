"""Read arbiter (hw/axi/read_arbiter.py): the core's read clients sharing one read engine.

Environment: every client holds a command until it is taken (a stream's rule); the engine takes
commands and returns beats whenever it likes.

``grant``
    The engine's command is the granted client's, with that client's number in the shared tag;
    only the granted client sees ``ready``, so at most one client's command is taken per cycle
    (grants one-hot); the engine sees a command whenever a client offers one.
``fair``
    No client starves: while a client offers a command, at most N − 1 commands of the other
    clients are taken before its own (round robin over N clients).
``route``
    Each beat goes to the client named in its tag, with that client's own tag, and only that
    client's ``ready`` takes it.
"""

from amaranth.hdl import Cat, Signal

from avta.hw.axi.read_arbiter import ReadArbiter
from avta.hw.mem_client import ADDR_BITS, beat_count_bits
from avta.hw.core.core import READ_CLIENTS

from ..harness import Check, Harness

__all__ = ["checks"]

TAG_BITS = 2


class ArbiterHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._prop = cfg, prop
        self._n = len(READ_CLIENTS)

    def properties(self, m):
        n, data_bits = self._n, self._cfg.axi_data_bits
        count_bits = beat_count_bits(data_bits)
        dut = ReadArbiter(data_bits=data_bits, tag_shapes=[TAG_BITS] * n)
        m.submodules.dut = dut
        eng = dut.engine
        m.d.comb += eng.cmd.ready.eq(self.input("engine_ready"))
        fire = eng.cmd.valid & eng.cmd.ready
        clients = [dut.client(i) for i in range(n)]
        offers = []
        for i, c in enumerate(clients):
            valid, addr = self.input(f"c{i}_valid"), self.input(f"c{i}_addr", ADDR_BITS)
            beats, tag = self.input(f"c{i}_beats", count_bits), self.input(f"c{i}_tag", TAG_BITS)
            m.d.comb += [c.cmd.valid.eq(valid), c.cmd.p.addr.eq(addr), c.cmd.p.beats.eq(beats),
                         c.cmd.p.tag.eq(tag), c.data.ready.eq(self.input(f"c{i}_data_ready"))]
            waiting, before = Signal(name=f"c{i}_waiting"), Signal(ADDR_BITS + count_bits + TAG_BITS,
                                                                     name=f"c{i}_before")
            m.d.sync += [waiting.eq(valid & ~c.cmd.ready), before.eq(Cat(addr, beats, tag))]
            self.assume(m, ~waiting | (valid & (Cat(addr, beats, tag) == before)))
            offers.append((valid, addr, beats, tag))

        if self._prop == "grant":
            taken = [c.cmd.valid & c.cmd.ready for c in clients]
            self.promise(m, sum(t.as_unsigned() for t in taken) <= 1)
            self.promise(m, eng.cmd.valid == Cat(*(v for v, *_ in offers)).any())
            for i, (c, (valid, addr, beats, tag)) in enumerate(zip(clients, offers)):
                self.promise(m, ~taken[i] | ((eng.cmd.p.addr == addr) & (eng.cmd.p.beats == beats)
                                             & (eng.cmd.p.tag.tag == tag)
                                             & (eng.cmd.p.tag.client == i) & fire))
                self.promise(m, ~c.cmd.ready | ~valid | taken[i])
                self.cover(m, taken[i])
        elif self._prop == "fair":
            for i, (c, (valid, *_)) in enumerate(zip(clients, offers)):
                passed = Signal(range(n + 2), name=f"passed{i}")
                with m.If(~valid | (c.cmd.valid & c.cmd.ready)):
                    m.d.sync += passed.eq(0)
                with m.Elif(fire):
                    m.d.sync += passed.eq(passed + 1)
                self.promise(m, passed <= n - 1)
                self.cover(m, valid & (passed == n - 1))
        else:   # "route"
            beat = eng.data
            m.d.comb += [beat.valid.eq(self.input("beat_valid")),
                         beat.p.tag.client.eq(self.input("beat_client", len(beat.p.tag.client))),
                         beat.p.tag.tag.eq(self.input("beat_tag", TAG_BITS)),
                         beat.p.beat.eq(self.input("beat_index", count_bits)),
                         beat.p.err.eq(self.input("beat_err")),
                         beat.p.data.eq(self.input("beat_bit").replicate(data_bits))]
            for i, c in enumerate(clients):
                mine = beat.p.tag.client == i
                self.promise(m, c.data.valid == (beat.valid & mine))
                self.promise(m, ~c.data.valid | ((c.data.p.tag == beat.p.tag.tag) &
                                                 (c.data.p.beat == beat.p.beat) &
                                                 (c.data.p.err == beat.p.err) &
                                                 (c.data.p.data == beat.p.data)))
                self.promise(m, ~(beat.valid & mine) | (beat.ready == c.data.ready))
                self.cover(m, c.data.valid & c.data.ready)


def checks(cfg, faults=frozenset()):
    n = len(READ_CLIENTS)
    return [
        Check("read_arbiter", "grant", "one-hot grants; the engine gets the granted client's "
              "command and number", lambda: ArbiterHarness(cfg, faults, "grant"), depth=4),
        Check("read_arbiter", "fair", f"no client starves: at most {n - 1} other commands "
              "taken while one waits", lambda: ArbiterHarness(cfg, faults, "fair"), depth=8,
              cover_depth=12),
        Check("read_arbiter", "route", "each beat reaches the client its tag names, and only "
              "that client's ready takes it", lambda: ArbiterHarness(cfg, faults, "route"),
              depth=2),
    ]
