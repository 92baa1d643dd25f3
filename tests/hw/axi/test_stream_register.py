"""The register on read beats between the read engine and its clients (hw/axi/stream_register.py):
a beat reaches the client one cycle after the R handshake, none lost or repeated while
the client holds ``ready`` low."""

import random
import re

import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from avta.hw.axi.stream_register import StreamRegister
from avta.hw.axi.vme import MemoryEngine


def test_beats_one_cycle_later_none_lost():
    dut = MemoryEngine(data_bits=64, read_clients={"rd0": 8})
    client, axi = dut.rd0, dut.m_axi
    rng = random.Random(1)
    sent, got = [], []

    async def bench(ctx):
        # One command of 32 beats on slot 0, so that R beats on ID 0 are due.
        ctx.set(client.cmd.valid, 1)
        ctx.set(client.cmd.payload.beats, 32)
        ctx.set(client.cmd.payload.tag, 5)
        await ctx.tick()
        ctx.set(client.cmd.valid, 0)
        ctx.set(axi.arready, 1)
        value = 100
        for cycle in range(200):
            ready = rng.random() < 0.7 or cycle < 8
            ctx.set(client.data.ready, ready)
            ctx.set(axi.rvalid, len(sent) < 32)
            ctx.set(axi.rdata, value)
            if cycle == 0:
                # Combinationally, the client does not see the beat on the bus.
                assert not ctx.get(client.data.valid)
            rready = ctx.get(axi.rready)
            valid, data = ctx.get(client.data.valid), ctx.get(client.data.payload.data)
            if valid and ready:
                got.append(data)
            if ctx.get(axi.rvalid) and rready:
                sent.append(value)
                value += 1
            await ctx.tick()
            if len(got) == 32:
                break

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == sent == list(range(100, 132))


def _run_register(dut, *, offered, taking, cycles):
    """Drive ``dut`` (a :class:`StreamRegister` of 16-bit payloads) with a numbered item on
    ``i`` whenever ``offered(cycle)`` and ``ready`` on ``o`` when ``taking(cycle)``: what the
    consumer saw each cycle (``o``'s valid and payload) and the items taken in order."""
    seen, taken, accepted = [], [], []

    async def bench(ctx):
        item = 0
        for cycle in range(cycles):
            ctx.set(dut.i.valid, offered(cycle))
            ctx.set(dut.i.payload, item)
            ctx.set(dut.o.ready, taking(cycle))
            _, _, i_valid, i_ready, o_valid, o_ready, o_payload = await ctx.tick().sample(
                dut.i.valid, dut.i.ready, dut.o.valid, dut.o.ready, dut.o.payload)
            seen.append((o_valid, o_payload if o_valid else None))
            if o_valid and o_ready:
                taken.append(o_payload)
            if i_valid and i_ready:
                accepted.append(item)
                item += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen, taken, accepted


def test_registered_ready_keeps_the_cadence_and_loses_nothing():
    """With ``registered_ready`` the producer's ``ready`` is a flip-flop (no path from the
    consumer's ``ready``: the clients' beat logic no longer reaches the read engine), and the
    consumer sees the same beats in the same cycles as behind the plain register while the
    producer always has one; with gaps on both sides nothing is lost, repeated or reordered."""
    rng = random.Random(3)
    taking = [rng.random() < 0.6 for _ in range(300)]
    offered = [rng.random() < 0.7 for _ in range(300)]
    plain, skid = StreamRegister(16), StreamRegister(16, registered_ready=True)
    want = _run_register(plain, offered=lambda c: 1, taking=taking.__getitem__, cycles=300)
    got = _run_register(skid, offered=lambda c: 1, taking=taking.__getitem__, cycles=300)
    assert got[0] == want[0] and got[1] == want[1]
    seen, taken, accepted = _run_register(
        StreamRegister(16, registered_ready=True), offered=offered.__getitem__,
        taking=taking.__getitem__, cycles=300)
    assert taken == accepted[:len(taken)] and len(accepted) - len(taken) <= 2
    assert len(taken) > 100


def test_registered_ready_is_not_the_consumers():
    dut = StreamRegister(16, registered_ready=True)
    readies = []

    async def bench(ctx):
        ctx.set(dut.i.valid, 1)
        for cycle in range(6):
            for ready in (0, 1):
                ctx.set(dut.o.ready, ready)
                readies.append((cycle, ready, ctx.get(dut.i.ready)))
            ctx.set(dut.o.ready, 0)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    by_cycle = {}
    for cycle, _, i_ready in readies:
        by_cycle.setdefault(cycle, set()).add(i_ready)
    assert all(len(v) == 1 for v in by_cycle.values()), readies
    assert by_cycle[0] == {1} and by_cycle[5] == {0}     # full: the register and the held one


def test_the_engine_holds_its_beats_behind_a_registered_ready():
    """The memory engine's beat register is the registered-ready kind: the R channel's
    RREADY does not follow the client's ``ready`` within a cycle."""
    dut = MemoryEngine(data_bits=64, read_clients={"rd0": 8})
    client, axi = dut.rd0, dut.m_axi
    values = []

    async def bench(ctx):
        ctx.set(client.cmd.valid, 1)
        ctx.set(client.cmd.payload.beats, 8)
        await ctx.tick()
        ctx.set(client.cmd.valid, 0)
        ctx.set(axi.arready, 1)
        ctx.set(axi.rvalid, 1)
        for _ in range(8):
            for ready in (0, 1):
                ctx.set(client.data.ready, ready)
                values.append(ctx.get(axi.rready))
            ctx.set(client.data.ready, 0)
            await ctx.tick()
            assert values[-1] == values[-2]

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_the_consumers_ready_moves_only_the_ring_state(logic_cone):
    """Downstream's ``ready`` (a row writer's, formed from the beat) reaches the read pointer,
    its copy, the two level flags and the head's client (the memory engine's use), and no
    payload register: as an output register with a held one beside it, it chose every
    payload flip-flop's next value (the binding path of `tiny` on the ECP5:
    docs/architecture.md, timing on an FPGA)."""
    layout = data.StructLayout({"data": 64, "tag": data.StructLayout({"client": 2, "row": 8})})
    cone = logic_cone(StreamRegister(layout, registered_ready=True, bulk=("data",),
                                     head=("tag.client",)), "w:o__ready %co*")
    widths = [int(w) for w in re.findall(r"parameter \\\w*WIDTH (\d+)", cone)]
    assert "cell $mux" in cone, "the cone holds the pointer's next value"
    assert widths and max(widths) <= 2, cone


@pytest.mark.parametrize("head", [(), ("tag",), ("tag.client",)])
def test_bulk_and_head_fields_read_the_same_items(head):
    """A field read through the pointer's copy, or kept in the head register, goes out with
    the rest of its item."""
    layout = data.StructLayout({"data": 16, "tag": data.StructLayout({"client": 2, "row": 14})})
    rng = random.Random(5)
    taking = [rng.random() < 0.5 for _ in range(300)]
    offered = [rng.random() < 0.7 for _ in range(300)]
    dut = StreamRegister(layout, registered_ready=True, bulk=("data",), head=head)
    items = []

    async def bench(ctx):
        item = 0
        for cycle in range(300):
            ctx.set(dut.i.valid, offered[cycle])
            ctx.set(dut.i.payload, {"data": item, "tag": {"client": item % 3, "row": item ^ 0x155}})
            ctx.set(dut.o.ready, taking[cycle])
            _, _, i_valid, i_ready, o_valid, o_ready, o_data, o_client, o_row = \
                await ctx.tick().sample(dut.i.valid, dut.i.ready, dut.o.valid, dut.o.ready,
                                        dut.o.payload.data, dut.o.payload.tag.client,
                                        dut.o.payload.tag.row)
            if o_valid and o_ready:
                items.append((o_data, o_client, o_row))
            if i_valid and i_ready:
                item += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(items) > 80
    assert items == [(k, k % 3, k ^ 0x155) for k in range(len(items))]


def _register_and_held(offered, taking, cycles):
    """A model of what the ring replaced, an output register with a held one beside it:
    per cycle ``(i.ready, o.valid, o.payload or None)``, items numbered as offered."""
    out, held, item, seen = None, None, 0, []
    for cycle in range(cycles):
        i_ready = held is None
        seen.append((i_ready, out is not None, out))
        push, pop = offered(cycle) and i_ready, out is not None and taking(cycle)
        if out is None or pop:
            out, held = (held, None) if held is not None else (item if push else None, None)
        elif push:
            held = item
        item += push
    return seen


@pytest.mark.parametrize("seed", range(3))
def test_the_ring_keeps_the_register_and_held_cadence(seed):
    """Cycle for cycle, upstream's ``ready`` and what downstream sees are those of the output
    register with a held one beside it (no cycle of any client's changes)."""
    rng = random.Random(seed)
    offered = [rng.random() < 0.6 for _ in range(400)]
    taking = [rng.random() < 0.6 for _ in range(400)]
    dut = StreamRegister(16, registered_ready=True)
    got = []

    async def bench(ctx):
        item = 0
        for cycle in range(400):
            ctx.set(dut.i.valid, offered[cycle])
            ctx.set(dut.i.payload, item)
            ctx.set(dut.o.ready, taking[cycle])
            _, _, i_ready, o_valid, o_payload = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload)
            got.append((bool(i_ready), bool(o_valid), o_payload if o_valid else None))
            item += offered[cycle] and i_ready

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == _register_and_held(offered.__getitem__, taking.__getitem__, 400)
