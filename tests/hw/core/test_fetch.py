"""Fetch: reads ahead through the memory model (out of order, backpressure), dispatches each
instruction to its stage's queue in program order, stops at the first decode error with its
index, and in scan mode checks without dispatching (docs/isa.md §3.5)."""

import random

import pytest

from avta.hw.core.fetch import Fetch
from avta.sim.amaranth.testbench import SimTimeout, run_sim
from avta.sim.amaranth.dram import DramModel
from avta.sim.memory_knobs import MemoryKnobs
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.enums import MemType, Opcode, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.legality import alu_ops, check_program

INSN_ADDR = 0x40


def random_program(rng, n):
    insns = []
    for _ in range(n):
        kind = rng.randrange(5)
        if kind == 0:
            insns.append(MemoryInsn(opcode=Opcode.LOAD, memory_type=rng.choice(
                [MemType.INP, MemType.WGT, MemType.UOP, MemType.ACC]), x_size=rng.randrange(4),
                pop_next=rng.randrange(2), push_next=rng.randrange(2)))
        elif kind == 1:
            insns.append(MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT,
                                    x_size=rng.randrange(4), pop_prev=rng.randrange(2)))
        elif kind == 2:
            insns.append(GemmInsn(opcode=Opcode.GEMM, uop_end=rng.randrange(4),
                                  push_prev=rng.randrange(2)))
        else:
            insns.append(AluInsn(alu_opcode=rng.choice(alu_ops()), imm=rng.randrange(-9, 9)))
    return insns


def run_fetch(cfg, insns, *, raws=None, scan_after=None, seed=0, stall=0.3, ready=0.5,
              dram_bytes=None, insn_addr=INSN_ADDR):
    c = codec(cfg)
    blob = b"".join(c.encode_bytes(i) for i in insns) if raws is None else b"".join(
        r.to_bytes(16, "little") for r in raws)
    count = len(blob) // 16
    size = dram_bytes if dram_bytes is not None else insn_addr + len(blob) + 64
    dram = bytearray(size)
    dram[insn_addr:insn_addr + len(blob)] = blob[:max(0, size - insn_addr)]
    dut = Fetch(cfg=cfg, ring=8, burst=3)
    model = DramModel(dram, data_bits=cfg.axi_data_bits,
                      knobs=MemoryKnobs(seed=seed, latency=(0, 8), backpressure=stall,
                                        reorder=True))
    model.add_read_client(dut.mem, "fetch")
    rng = random.Random(seed)
    got = {Stage.LOAD: [], Stage.COMPUTE: [], Stage.STORE: []}
    ports = {Stage.LOAD: dut.ld_insn, Stage.COMPUTE: dut.cp_insn, Stage.STORE: dut.st_insn}
    result = {}

    async def bench(ctx):
        ctx.set(dut.insn_addr, insn_addr)
        ctx.set(dut.insn_count, count)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        samples = []
        for p in ports.values():
            samples += [p.valid, p.payload.insn.as_value(), p.payload.index]
        for _ in range(40 * count + 100):
            taking = {s: rng.random() < ready for s in ports}
            for s, p in ports.items():
                ctx.set(p.ready, taking[s])
            dispatched = sum(len(v) for v in got.values())
            ctx.set(dut.scan, scan_after is not None and dispatched >= scan_after)
            _, _, *vals = await ctx.tick().sample(*samples, dut.error, dut.checked)
            for i, s in enumerate(ports):
                valid, raw, index = vals[3 * i:3 * i + 3]
                if valid and taking[s]:
                    got[s].append((index, raw))
            if vals[-2] or vals[-1]:
                break
        else:
            raise SimTimeout("fetch neither finished nor stopped")
        await ctx.tick().repeat(20)
        result.update(error=ctx.get(dut.error), code=ctx.get(dut.error_code),
                      index=ctx.get(dut.error_index), idle=ctx.get(dut.idle))

    run_sim(dut, bench, background=[model.run], name=f"fetch-{cfg.name}")
    return got, result, blob


def expected(cfg, blob, upto):
    c = codec(cfg)
    want = {Stage.LOAD: [], Stage.COMPUTE: [], Stage.STORE: []}
    for i in range(upto):
        raw = int.from_bytes(blob[16 * i:16 * i + 16], "little")
        want[c.decode(raw).stage].append((i, raw))
    return want


@pytest.mark.parametrize("insn_addr", [INSN_ADDR, INSN_ADDR + 0x30])
@pytest.mark.parametrize("bus", [64, 128, 256, 512])
def test_dispatch_in_order(bus, insn_addr):
    """Also from an address that is not bus-aligned (the first beat starts mid-way)."""
    cfg = load_config("tiny").replace(axi_data_bits=bus)
    insns = random_program(random.Random(bus), 23)
    got, result, blob = run_fetch(cfg, insns, seed=bus, insn_addr=insn_addr)
    assert not result["error"] and result["idle"]
    assert got == expected(cfg, blob, len(insns))


@pytest.mark.parametrize("bus", [64, 256])
def test_stops_at_first_decode_error(bus):
    cfg = load_config("tiny").replace(axi_data_bits=bus)
    rng = random.Random(7)
    insns = random_program(rng, 12)
    c = codec(cfg)
    raws = [c.encode(i) for i in insns]
    raws[5] = c.encode(MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.INP, x_size=1,
                                  push_next=1))         # codes 5 and 6: 5 wins
    raws[9] = 6                                          # illegal opcode, later
    got, result, blob = run_fetch(cfg, None, raws=raws, seed=bus)
    assert (result["error"], result["code"], result["index"]) == (1, 5, 5)
    assert got == expected(cfg, blob, 5)
    assert result["idle"]


def test_scan_mode_checks_without_dispatching():
    cfg = load_config("tiny")
    c = codec(cfg)
    insns = random_program(random.Random(3), 14)
    raws = [c.encode(i) for i in insns]
    raws[12] = c.encode(GemmInsn(opcode=Opcode.FINISH, pop_prev=1))     # error 8
    assert check_program([c.decode(r) for r in raws])[0] == 12
    got, result, blob = run_fetch(cfg, None, raws=raws, scan_after=4, ready=1.0)
    assert (result["code"], result["index"]) == (8, 12)
    dispatched = sum(len(v) for v in got.values())
    assert 4 <= dispatched < 12


def test_fetch_outside_dram_is_error_9():
    cfg = load_config("tiny")
    insns = random_program(random.Random(5), 6)
    got, result, blob = run_fetch(cfg, insns, dram_bytes=INSN_ADDR + 4 * 16, stall=0.0)
    assert (result["error"], result["code"], result["index"]) == (1, 9, 4)
    assert got == expected(cfg, blob, 4)


def test_no_instruction_is_checked_at_once():
    cfg = load_config("tiny")
    got, result, _ = run_fetch(cfg, [])
    assert not result["error"] and not any(got.values())


def test_decoded_instruction_waits_in_the_dispatch_register():
    """The ring's read register, then the dispatch register (the decode between them): an
    instruction is offered to its queue 3 cycles after its last beat is taken (the ring's write,
    its read, the decode); once the queue takes them, buffered instructions follow one a
    cycle."""
    cfg = load_config("tiny")
    c = codec(cfg)
    insns = [GemmInsn(opcode=Opcode.FINISH)] * 4
    blob = b"".join(c.encode_bytes(i) for i in insns)
    dram = bytearray(INSN_ADDR + len(blob) + 64)
    dram[INSN_ADDR:INSN_ADDR + len(blob)] = blob
    dut = Fetch(cfg=cfg, ring=8, burst=3)
    model = DramModel(dram, data_bits=cfg.axi_data_bits,
                      knobs=MemoryKnobs(seed=0, latency=(0, 0), backpressure=0.0))
    model.add_read_client(dut.mem, "fetch")
    opened = 40                                  # the queue takes nothing before this cycle
    cycles = {"taken": []}

    async def bench(ctx):
        ctx.set(dut.insn_addr, INSN_ADDR)
        ctx.set(dut.insn_count, len(insns))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        beats = max(1, 16 // cfg.axi_data_bytes)     # the first instruction's beats
        for cycle in range(100):
            ctx.set(dut.cp_insn.ready, cycle >= opened)
            _, _, beat, offered, ready, checked = await ctx.tick().sample(
                dut.mem.data.valid & dut.mem.data.ready, dut.cp_insn.valid, dut.cp_insn.ready,
                dut.checked)
            if beat:
                beats -= 1
                if beats == 0:
                    cycles.setdefault("beat", cycle)
            if offered:
                cycles.setdefault("offered", cycle)
                if ready:
                    cycles["taken"].append(cycle)
            if checked:
                cycles["checked"] = cycle
                break

    run_sim(dut, bench, background=[model.run], name="fetch-latency")
    assert cycles["offered"] - cycles["beat"] == 3
    assert cycles["taken"] == list(range(opened, opened + len(insns)))
    assert cycles["checked"] == opened + len(insns)
