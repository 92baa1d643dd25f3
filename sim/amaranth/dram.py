"""A DRAM model for the Amaranth simulator that serves memory-engine clients (``mem_client``).

It stands in for the VME plus an AXI memory while the core is tested on its own. It serves any
number of read clients and write clients from one ``bytearray``, as one background testbench
(one Python step per clock cycle for all clients, which keeps the simulation fast).

Its timing is a :class:`~avta.sim.memory_knobs.MemoryKnobs`, the vocabulary every memory model
shares, seeded so that a failing run replays: a read command becomes servable ``latency`` cycles
after it is accepted and a write response ``write_latency`` cycles after the last beat;
``backpressure`` is the chance that a cycle withholds ``ready`` on a command or write-data
stream, or ``valid`` on a read-data or response stream; with ``reorder`` each read beat comes
from a random servable command, so commands complete out of order (beats of one command stay in
order, as the interface promises); ``outstanding`` commands a read client may have accepted and
not yet finished.

A beat or a write touching bytes outside the ``bytearray`` comes back with ``err`` set (the
AXI DECERR the VME would turn into error 9); read beats are checked whole, write beats by strobe.
"""

import random
from collections import deque
from dataclasses import dataclass

from amaranth.hdl import Value

from avta.sim.memory_knobs import MemoryKnobs

__all__ = ["DramModel"]


def _raw(value):
    return Value.cast(value)


@dataclass(eq=False)
class _ReadCommand:
    """An accepted read command: servable from cycle ``due``; ``next_beat`` is the beat the
    data stream sends next."""
    due: int
    addr: int
    beats: int
    tag: int
    next_beat: int = 0


@dataclass(eq=False)
class _WriteCommand:
    """An accepted write command: ``written`` beats taken so far; ``err`` once any beat
    touched bytes outside the DRAM."""
    addr: int
    beats: int
    written: int = 0
    err: int = 0


@dataclass
class _WriteResponse:
    """A write response owed from cycle ``due``."""
    due: int
    err: int


class _ReadClient:
    def __init__(self, port, name):
        self.port = port
        self.name = name
        self.pending = []          # _ReadCommand
        self.current = None        # (command, beat) on the data stream, held until taken
        self.accepting = False


class _WriteClient:
    def __init__(self, port, name):
        self.port = port
        self.name = name
        self.commands = deque()    # _WriteCommand
        self.responses = deque()   # _WriteResponse
        self.cmd_ready = False
        self.data_ready = False
        self.resp_valid = False


class DramModel:
    """Serves read and write clients from ``mem`` (a ``bytearray``, byte 0 at address 0).

    Parameters
    ----------
    mem : bytearray
        DRAM contents; writes change it in place.
    data_bits : int
        Bus width of every client.
    knobs : MemoryKnobs
        Latency, reordering, backpressure and their seed (see the module docstring).
    """

    def __init__(self, mem, *, data_bits, knobs=MemoryKnobs()):
        if not isinstance(mem, bytearray):
            raise TypeError(f"mem must be a bytearray, not {type(mem).__name__}")
        self.mem = mem
        self.bus_bytes = data_bits // 8
        self._knobs = knobs
        self._rng = random.Random(knobs.seed)
        self._readers = []
        self._writers = []
        self.cycle = 0
        #: Commands served, by client name: ``(kind, addr, beats)``; tests inspect it.
        self.log = []

    def add_read_client(self, port, name="rd"):
        self._readers.append(_ReadClient(port, name))

    def add_write_client(self, port, name="wr"):
        self._writers.append(_WriteClient(port, name))

    # -- helpers --------------------------------------------------------------------------------

    def _go(self):
        return self._rng.random() >= self._knobs.backpressure

    def _due(self):
        return self.cycle + self._rng.randint(*self._knobs.latency)

    def _beat(self, addr, beat):
        start = (addr & ~(self.bus_bytes - 1)) + beat * self.bus_bytes
        end = start + self.bus_bytes
        if end > len(self.mem):
            return 0, 1
        return int.from_bytes(self.mem[start:end], "little"), 0

    def _write(self, addr, beat, value, strb):
        start = (addr & ~(self.bus_bytes - 1)) + beat * self.bus_bytes
        err = 0
        raw = value.to_bytes(self.bus_bytes, "little")
        for i in range(self.bus_bytes):
            if strb >> i & 1:
                if start + i >= len(self.mem):
                    err = 1
                else:
                    self.mem[start + i] = raw[i]
        return err

    # -- the testbench --------------------------------------------------------------------------

    def _drive(self, ctx):
        for rc in self._readers:
            rc.accepting = len(rc.pending) < self._knobs.outstanding and self._go()
            ctx.set(rc.port.cmd.ready, rc.accepting)
            if rc.current is None:
                ready = [c for c in rc.pending if c.due <= self.cycle]
                if ready and self._go():
                    cmd = self._rng.choice(ready) if self._knobs.reorder else ready[0]
                    rc.current = (cmd, cmd.next_beat)
            if rc.current is not None:
                cmd, beat = rc.current
                value, err = self._beat(cmd.addr, beat)
                ctx.set(rc.port.data.payload.data, value)
                ctx.set(_raw(rc.port.data.payload.tag), cmd.tag)
                ctx.set(rc.port.data.payload.beat, beat)
                ctx.set(rc.port.data.payload.err, err)
            ctx.set(rc.port.data.valid, rc.current is not None)
        for wc in self._writers:
            wc.cmd_ready = self._go()
            ctx.set(wc.port.cmd.ready, wc.cmd_ready)
            wc.data_ready = bool(wc.commands) and wc.commands[0].written < wc.commands[0].beats \
                and self._go()
            ctx.set(wc.port.data.ready, wc.data_ready)
            wc.resp_valid = bool(wc.responses) and wc.responses[0].due <= self.cycle \
                and self._go()
            if wc.resp_valid:
                ctx.set(wc.port.resp.payload.err, wc.responses[0].err)
            ctx.set(wc.port.resp.valid, wc.resp_valid)

    def _samples(self):
        exprs = []
        for rc in self._readers:
            p = rc.port
            exprs += [p.cmd.valid, p.cmd.payload.addr, p.cmd.payload.beats,
                      _raw(p.cmd.payload.tag), p.data.ready]
        for wc in self._writers:
            p = wc.port
            exprs += [p.cmd.valid, p.cmd.payload.addr, p.cmd.payload.beats, p.data.valid,
                      p.data.payload.data, p.data.payload.strb, p.resp.ready]
        return exprs

    def _update(self, values):
        values = iter(values)
        for rc in self._readers:
            cmd_valid, addr, beats, tag, data_ready = (next(values) for _ in range(5))
            if rc.current is not None and data_ready:
                cmd, beat = rc.current
                cmd.next_beat = beat + 1
                if cmd.next_beat == cmd.beats:
                    rc.pending.remove(cmd)
                rc.current = None
            if cmd_valid and rc.accepting:
                if beats == 0:
                    raise AssertionError(f"{rc.name}: read command with 0 beats at {addr:#x}")
                rc.pending.append(_ReadCommand(self._due(), addr, beats, tag))
                self.log.append((rc.name, "read", addr, beats))
        for wc in self._writers:
            cmd_valid, addr, beats, data_valid, value, strb, resp_ready = \
                (next(values) for _ in range(7))
            if wc.resp_valid and resp_ready:
                wc.responses.popleft()
            if data_valid and wc.data_ready:
                cmd = wc.commands[0]
                cmd.err |= self._write(cmd.addr, cmd.written, value, strb)
                cmd.written += 1
                if cmd.written == cmd.beats:
                    wc.commands.popleft()
                    wc.responses.append(_WriteResponse(self.cycle + self._knobs.write_latency,
                                                       cmd.err))
            if cmd_valid and wc.cmd_ready:
                if beats == 0:
                    raise AssertionError(f"{wc.name}: write command with 0 beats at {addr:#x}")
                wc.commands.append(_WriteCommand(addr, beats))
                self.log.append((wc.name, "write", addr, beats))

    async def run(self, ctx):
        """The testbench: add it with ``sim.add_testbench(model.run, background=True)``."""
        exprs = self._samples()
        while True:
            self._drive(ctx)
            _, _, *values = await ctx.tick().sample(*exprs)
            self._update(values)
            self.cycle += 1

    @property
    def idle(self):
        """No command accepted and unfinished, no response owed."""
        return (all(not rc.pending for rc in self._readers)
                and all(not wc.commands and not wc.responses for wc in self._writers))
