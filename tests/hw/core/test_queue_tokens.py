# amaranth: UnusedElaboratable=no
"""Instruction queue (order, backpressure, stable head) and token counters (docs/isa.md §3)."""

import random

import pytest

from avta.hw.core.queue import InsnQueue
from avta.hw.core.tokens import TokenCounter
from avta.sim.amaranth.testbench import run_sim
from avta.isa.config import load_config


@pytest.mark.parametrize("config", ["tiny", "batch2"])
def test_queue_order_and_backpressure(config):
    cfg = load_config(config)
    dut = InsnQueue(cfg=cfg, depth=4)
    rng = random.Random(1)
    raws = [rng.getrandbits(128) for _ in range(20)]
    got = []

    async def writer(ctx):
        for i, raw in enumerate(raws):
            ctx.set(dut.w.valid, 1)
            ctx.set(dut.w.payload.insn.as_value(), raw)
            ctx.set(dut.w.payload.index, i)
            await ctx.tick().until(dut.w.ready)
            ctx.set(dut.w.valid, 0)
            if rng.random() < 0.3:
                await ctx.tick()

    async def reader(ctx):
        while len(got) < len(raws):
            take = rng.random() < 0.4
            ctx.set(dut.r.ready, take)
            _, _, valid, insn, index = await ctx.tick().sample(
                dut.r.valid, dut.r.payload.insn.as_value(), dut.r.payload.index)
            if valid and take:
                got.append((index, insn))
            elif valid:
                # The head stays put while the stage holds it.
                assert ctx.get(dut.r.payload.index) == index

    run_sim(dut, writer, reader)
    assert got == list(enumerate(raws))


def test_queue_rejects_bad_depth(tiny_cfg):
    with pytest.raises(ValueError, match="queue depth"):
        InsnQueue(cfg=tiny_cfg, depth=1)


@pytest.mark.parametrize("token_bits", [2, 3])
def test_token_counter(token_bits):
    cfg = load_config("tiny").replace(token_bits=token_bits)
    dut = TokenCounter(cfg=cfg)
    full = (1 << token_bits) - 1

    async def bench(ctx):
        assert not ctx.get(dut.nonzero)
        for n in range(full):
            ctx.set(dut.push, 1)
            assert not ctx.get(dut.overflow)
            await ctx.tick()
            assert ctx.get(dut.count) == n + 1
        assert ctx.get(dut.overflow), "pushing a full counter is error 7"
        await ctx.tick()
        assert ctx.get(dut.count) == full
        ctx.set(dut.pop, 1)
        assert not ctx.get(dut.overflow), "a pop in the same cycle makes room"
        await ctx.tick()
        assert ctx.get(dut.count) == full
        ctx.set(dut.push, 0)
        for n in range(full):
            assert ctx.get(dut.nonzero)
            await ctx.tick()
        assert ctx.get(dut.count) == 0 and not ctx.get(dut.nonzero)

    run_sim(dut, bench)
