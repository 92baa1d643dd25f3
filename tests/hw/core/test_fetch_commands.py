"""Fetch's read commands: offered in exactly the cycles the ring has room for the next one
(min(instructions left, burst) slots free), at the ring's full and empty edges and at the end
of the stream, and decided from registers, not from 33-bit counts (docs/architecture.md,
timing on an FPGA)."""

import random
import re

import pytest
from amaranth.utils import ceil_log2

from avta.hw.core.fetch import Fetch
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.enums import Opcode
from avta.isa.insn import GemmInsn
from avta.sim.amaranth.dram import DramModel
from avta.sim.amaranth.testbench import run_sim
from avta.sim.memory_knobs import MemoryKnobs

INSN_ADDR = 0x40
RING, BURST = 8, 3


def watch_commands(count, *, seed, bus=64):
    """Run fetch over ``count`` FINISH instructions with queues that take nothing for long
    stretches (the ring fills) and then everything (it empties); check every cycle's command
    against the ring's room. Returns how often each edge was met."""
    cfg = load_config("tiny").replace(axi_data_bits=bus)
    blob = codec(cfg).encode_bytes(GemmInsn(opcode=Opcode.FINISH)) * count
    dram = bytearray(INSN_ADDR + len(blob) + 64)
    dram[INSN_ADDR:INSN_ADDR + len(blob)] = blob
    dut = Fetch(cfg=cfg, ring=RING, burst=BURST)
    model = DramModel(dram, data_bits=bus, knobs=MemoryKnobs(
        seed=seed, latency=(0, 4), backpressure=0.3, reorder=True))
    model.add_read_client(dut.mem, "fetch")
    rng = random.Random(seed)
    edges = {"fills": 0, "one_short": 0, "tail": 0, "from_empty": 0, "commands": 0}
    cmd = dut.mem.cmd

    async def bench(ctx):
        ctx.set(dut.insn_addr, INSN_ADDR)
        ctx.set(dut.insn_count, count)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        sent, taking = 0, False
        for _ in range(60 * count + 100):
            if rng.random() < 0.1:
                taking = not taking
            ctx.set(dut.cp_insn.ready, taking)
            _, _, valid, ready, n, row, addr, head, checked = await ctx.tick().sample(
                cmd.valid, cmd.ready, cmd.payload.tag.count, cmd.payload.tag.row,
                cmd.payload.addr, dut.head, dut.checked)
            want_n = min(count - sent, BURST)
            room = RING - (sent - head)
            assert valid == (want_n > 0 and room >= want_n), (sent, head, valid)
            if valid:
                assert (n, row) == (want_n, sent % RING)
                assert addr == (INSN_ADDR + 16 * sent) & ~(bus // 8 - 1)
                edges["fills"] += room == want_n
                edges["from_empty"] += sent == head
            elif want_n > 0 and room == want_n - 1:
                edges["one_short"] += 1
            if valid and ready:
                sent += n
                edges["commands"] += 1
                edges["tail"] += n < BURST
            if checked:
                break
        else:
            raise AssertionError("fetch did not finish")
        assert sent == count

    run_sim(dut, bench, background=[model.run], name=f"fetch-commands-{count}")
    return edges


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_command_waits_for_exactly_its_room(seed):
    """23 instructions (7 commands of 3 and a tail of 2): the ring fills (a command takes its
    last free slots), waits one slot short, and refills from empty."""
    edges = watch_commands(23, seed=seed)
    assert edges["fills"] and edges["one_short"] and edges["from_empty"]
    assert edges["tail"] == 1 and edges["commands"] == 8


@pytest.mark.parametrize("count", [0, 1, BURST, RING, RING + 1])
def test_short_streams(count):
    edges = watch_commands(count, seed=count)
    assert edges["commands"] == -(-count // BURST)


def test_command_valid_starts_at_registers(logic_cone):
    """The command's `valid`, which the memory engine's grant and so fetch's address enable
    wait for, has no adder or comparator wider than an index into the ring: no difference of
    33-bit counts (instructions left, ring space), as there was when those were its carry
    chains in series (the binding path of `tiny` on the ECP5)."""
    cone = logic_cone(Fetch(cfg=load_config("tiny"), ring=32, burst=8), "o:mem__cmd__valid %ci*")
    cells = re.findall(r"cell \$(add|sub|lt|le|gt|ge)\b[^\n]*\n((?:\s+parameter[^\n]*\n)+)",
                       cone)
    assert cells, "the cone holds the ring's room check"
    widths = [int(w) for _, params in cells for w in re.findall(r"_WIDTH (\d+)", params)]
    assert max(widths) <= ceil_log2(32) + 2, cells
