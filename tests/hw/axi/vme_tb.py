"""cocotb tests of the memory engine against cocotbext-axi's AXI RAM.

Parameters come from the environment (set by test_vme_cocotb.py): AVTA_DATA_BITS,
AVTA_TAG_BITS, and AVTA_MEMORY_KNOBS (a :class:`MemoryKnobs` as JSON: the RAM's backpressure).
Command and beat payloads are packed with the same Amaranth layouts the RTL uses.
"""

import json
import os
import random
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, ReadOnly

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\..*)?")
from cocotbext.axi import AxiBus, AxiRam  # noqa: E402

from avta.hw.mem_client import (read_beat_layout, read_cmd_layout,  # noqa: E402
                                 write_beat_layout, write_cmd_layout, write_resp_layout)
from avta.sim.cocotb.axi_ram import apply_knobs  # noqa: E402
from avta.sim.memory_knobs import MemoryKnobs  # noqa: E402

DATA_BITS = int(os.environ.get("AVTA_DATA_BITS", "64"))
TAG_BITS = int(os.environ.get("AVTA_TAG_BITS", "8"))
KNOBS = MemoryKnobs.from_dict(json.loads(os.environ.get("AVTA_MEMORY_KNOBS", "{}")))
BEAT = DATA_BITS // 8
RAM_BYTES = 1 << 16
CYCLE_LIMIT = 200_000


async def setup(dut):
    Clock(dut.clk, 10, unit="ns").start(start_high=False)
    dut.rst.value = 1
    for name in ("rd0__cmd__valid", "rd0__data__ready", "rd1__cmd__valid", "rd1__data__ready",
                 "write__cmd__valid", "write__data__valid", "write__resp__ready"):
        getattr(dut, name).value = 0
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi", bus_separator="__"), dut.clk, dut.rst,
                 size=RAM_BYTES)
    apply_knobs(ram, KNOBS)
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    return ram


async def send(dut, port, payload):
    """Drive one transfer on stream ``port``: valid held until a cycle ends with ready high."""
    getattr(dut, f"{port}__payload").value = payload
    getattr(dut, f"{port}__valid").value = 1
    for _ in range(CYCLE_LIMIT):
        await ReadOnly()
        accepted = bool(getattr(dut, f"{port}__ready").value)
        await RisingEdge(dut.clk)
        if accepted:
            getattr(dut, f"{port}__valid").value = 0
            return
    raise AssertionError(f"{port} never became ready in {CYCLE_LIMIT} cycles")


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def reads_land_where_tagged(dut):
    ram = await setup(dut)
    rng = random.Random(1)
    image = bytes(rng.getrandbits(8) for _ in range(RAM_BYTES))
    ram.write(0, image)
    cmd_layout = read_cmd_layout(data_bits=DATA_BITS, tag_shape=TAG_BITS)
    beat_layout = read_beat_layout(data_bits=DATA_BITS, tag_shape=TAG_BITS)
    # (client, byte address, beats, tag): unaligned starts, 4 KiB crossings, > 256 beats
    commands = [(0, 4096 - 3 * BEAT + 5, 7, 1), (1, 0, 1, 2), (0, 8192 - BEAT, 300, 3),
                (1, BEAT * 5 + 1, 33, 4), (1, 16384 + 4096 - BEAT, 2, 5), (0, 64, 3, 6)]
    expected = {}
    for client, addr, beats, tag in commands:
        base = addr & ~(BEAT - 1)
        for beat in range(beats):
            expected[(client, tag, beat)] = image[base + beat * BEAT: base + (beat + 1) * BEAT]

    got = {}
    order = {0: [], 1: []}

    async def collect():
        while len(got) < len(expected):
            for client in (0, 1):
                # The clients hold off as often as the memory does.
                getattr(dut, f"rd{client}__data__ready").value = int(
                    rng.random() >= KNOBS.backpressure)
            await ReadOnly()
            for client in (0, 1):
                port = f"rd{client}__data"
                if getattr(dut, f"{port}__valid").value and getattr(dut, f"{port}__ready").value:
                    beat = beat_layout.from_bits(getattr(dut, f"{port}__payload").value
                                                 .to_unsigned())
                    key = (client, int(beat.tag), int(beat.beat))
                    assert key not in got, f"beat {key} delivered twice"
                    assert not beat.err, f"beat {key} has an error"
                    got[key] = int(beat.data).to_bytes(BEAT, "little")
                    order[client].append(key)
            await RisingEdge(dut.clk)

    collector = cocotb.start_soon(collect())
    for client, addr, beats, tag in commands:
        await send(dut, f"rd{client}__cmd",
                   cmd_layout.const({"addr": addr, "beats": beats, "tag": tag}).as_bits())
    for _ in range(CYCLE_LIMIT):
        if collector.done():
            break
        await RisingEdge(dut.clk)
    assert collector.done(), f"only {len(got)} of {len(expected)} beats arrived"
    assert got == expected
    for client, keys in order.items():   # the interface promises in-order beats per command
        for tag in {k[1] for k in keys}:
            beats = [k[2] for k in keys if k[1] == tag]
            assert beats == sorted(beats), f"client {client} tag {tag} out of order"


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def writes_respect_strobes(dut):
    ram = await setup(dut)
    rng = random.Random(2)
    ram.write(0, bytes(RAM_BYTES))
    cmd_layout = write_cmd_layout(data_bits=DATA_BITS)
    beat_layout = write_beat_layout(data_bits=DATA_BITS)
    model = bytearray(RAM_BYTES)
    for addr, beats in ((4096 - 2 * BEAT + 3, 5), (BEAT * 3, 1), (12288 - BEAT, 260)):
        base = addr & ~(BEAT - 1)
        done = cocotb.start_soon(wait_resp(dut))
        await send(dut, "write__cmd", cmd_layout.const({"addr": addr, "beats": beats}).as_bits())
        for beat in range(beats):
            data = rng.getrandbits(DATA_BITS)
            strb = rng.getrandbits(BEAT) if beat % 3 else (1 << BEAT) - 1
            for byte in range(BEAT):
                if strb >> byte & 1:
                    model[base + beat * BEAT + byte] = (data >> (8 * byte)) & 0xFF
            await send(dut, "write__data",
                       beat_layout.const({"data": data, "strb": strb}).as_bits())
        resp = await done
        assert not resp.err, f"write at {addr:#x} answered an error"
        assert ram.read(0, RAM_BYTES) == bytes(model), f"after write at {addr:#x}"


async def wait_resp(dut):
    """Take one write response (ready held high) and return its payload."""
    dut.write__resp__ready.value = 1
    for _ in range(CYCLE_LIMIT):
        await ReadOnly()
        payload = (write_resp_layout().from_bits(int(dut.write__resp__payload.value))
                   if dut.write__resp__valid.value else None)
        await RisingEdge(dut.clk)
        if payload is not None:
            dut.write__resp__ready.value = 0
            return payload
    raise AssertionError("no write response")
