"""LoopGen (the micro-op loop nest of docs/isa.md §3.3) and PadWalker (the pad rows of §3.1) against
direct Python enumerations, including stalls of the consumer and of the write port."""

import itertools
import random

import pytest

from avta.hw.core.loop_gen import LoopGen
from avta.hw.core.pad_walker import PadWalker
from avta.sim.amaranth.testbench import run_sim

BITS = {"dst": 6, "src": 5, "wgt": 4}
UOP_BITS = 3


def expected_steps(f):
    steps = []
    for i_o in range(f["iter_out"]):
        for i_i in range(f["iter_in"]):
            for u in range(f["uop_bgn"], f["uop_end"]):
                # uop_end has one bit more than a row: a range past the last row wraps.
                steps.append((u % (1 << UOP_BITS),) + tuple(
                    (i_o * f[f"{op}_factor_out"] + i_i * f[f"{op}_factor_in"]) % (1 << w)
                    for op, w in BITS.items()))
    return steps


@pytest.mark.parametrize("seed", range(4))
def test_loop_gen(seed):
    rng = random.Random(seed)
    cases = []
    for _ in range(6):
        bgn = rng.randrange(6)
        f = {"uop_bgn": bgn, "uop_end": rng.randrange(bgn - 1 if bgn else 0, bgn + 4),
             "iter_out": rng.randrange(0, 4), "iter_in": rng.randrange(0, 4)}
        for op, w in BITS.items():
            f[f"{op}_factor_out"] = rng.randrange(1 << w)
            f[f"{op}_factor_in"] = rng.randrange(1 << w)
        cases.append(f)
    # A micro-op range past the last row wraps (rows 6, 7, 0, 1); the loop once never ended.
    cases.append({**cases[0], "uop_bgn": 6, "uop_end": 10, "iter_out": 1, "iter_in": 2})
    dut = LoopGen(uop_bits=UOP_BITS, offset_bits=BITS)

    async def bench(ctx):
        for f in cases:
            for name, value in f.items():
                ctx.set(getattr(dut, name), max(value, 0))
            ctx.set(dut.start, 1)
            _, _, empty = await ctx.tick().sample(dut.empty)
            ctx.set(dut.start, 0)
            got = []
            for _ in range(200):
                take = rng.random() < 0.7
                ctx.set(dut.advance, take)
                _, _, valid, last, *step = await ctx.tick().sample(
                    dut.valid, dut.last, dut.uop, dut.dst, dut.src, dut.wgt)
                if valid and take:
                    got.append(tuple(step))
                    if last:
                        break
                if not valid and (empty or got):
                    break
            assert ctx.get(dut.valid) == 0
            assert got == expected_steps(f), f
            assert bool(empty) == (not got)

    run_sim(dut, bench)


def expected_pads(f):
    width = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
    height = f["y_pad_0"] + f["y_size"] + f["y_pad_1"]
    rows = set()
    for r, c in itertools.product(range(height), range(width)):
        inside = (f["y_pad_0"] <= r < f["y_pad_0"] + f["y_size"]
                  and f["x_pad_0"] <= c < f["x_pad_0"] + f["x_size"])
        if not inside:
            rows.add((f["sram_base"] + r * width + c) % (1 << 16))
    return rows


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scramble", [False, True])
@pytest.mark.parametrize("hold_rate", [0.3, 0.0])
def test_pad_walker(seed, scramble, hold_rate):
    """Every pad row once. ``scramble``: the fields change after ``start`` (the walker latches
    them: they come from the instruction queue's slow block RAM). ``hold_rate`` 0: the write
    port is never taken, so the walk is as fast as it goes and data row 0's running sums
    (``y_pad_0`` steps) must be done when the top's last row is written, also for a tall top
    of narrow rows (W = 2)."""
    rng = random.Random(seed)
    cases = [{"sram_base": rng.randrange(1 << 16), "x_size": rng.randrange(1, 5),
              "y_size": rng.randrange(0, 4), "x_pad_0": rng.choice([0, 0, 1, 3]),
              "x_pad_1": rng.choice([0, 0, 2]), "y_pad_0": rng.choice([0, 1, 2, 7]),
              "y_pad_1": rng.choice([0, 1])} for _ in range(8)]
    cases.append({"sram_base": 65530, "x_size": 1, "y_size": 2, "x_pad_0": 1, "x_pad_1": 0,
                  "y_pad_0": 15, "y_pad_1": 1})
    dut = PadWalker()

    async def bench(ctx):
        for f in cases:
            for name, value in f.items():
                ctx.set(getattr(dut, name), value)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            if scramble:
                for name, value in f.items():
                    ctx.set(getattr(dut, name), (value * 7 + 5) % (1 << len(getattr(dut, name))))
            rows, cycles = [], 0
            while True:
                hold = rng.random() < hold_rate
                ctx.set(dut.hold, hold)
                _, _, busy, valid, addr = await ctx.tick().sample(dut.busy, dut.wr_valid,
                                                                  dut.wr_addr)
                cycles += 1
                if valid and not hold:
                    rows.append(addr)
                if not busy:
                    break
                assert cycles < 500
            assert len(rows) == len(set(rows)) and set(rows) == expected_pads(f), f

    run_sim(dut, bench)
