"""The register on read beats between the read engine and its clients (hw/axi/stream_register.py):
a beat reaches the client one cycle after the R handshake, none lost or repeated while
the client holds ``ready`` low."""

import random

from amaranth.sim import Simulator

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
