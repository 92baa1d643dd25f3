"""cocotb tests of the memory engine against cocotbext-axi's AXI RAM.

Parameters come from the environment (set by test_vme_cocotb.py): AVTA_DATA_BITS,
AVTA_TAG_BITS, and AVTA_PAUSE (``none`` or ``random``: pause generators on every channel).
Command and beat payloads are packed with the same Amaranth layouts the RTL uses.
"""

import itertools
import os
import random
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, ReadOnly

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\..*)?")
from cocotbext.axi import AxiBus, AxiRam  # noqa: E402

from avta.hw.axi.read_engine import read_beat_layout, read_command_layout  # noqa: E402
from avta.hw.axi.write_engine import write_beat_layout, write_command_layout  # noqa: E402

DATA_BITS = int(os.environ.get("AVTA_DATA_BITS", "64"))
TAG_BITS = int(os.environ.get("AVTA_TAG_BITS", "8"))
PAUSE = os.environ.get("AVTA_PAUSE", "none")
BEAT = DATA_BITS // 8
RAM_BYTES = 1 << 16
CYCLE_LIMIT = 200_000


def pauses(seed):
    rng = random.Random(seed)
    return (rng.random() < 0.3 for _ in itertools.count())


async def setup(dut):
    Clock(dut.clk, 10, unit="ns").start(start_high=False)
    dut.rst.value = 1
    for name in ("rd_cmd__valid", "rd_data__ready", "wr_cmd__valid", "wr_data__valid", "clear"):
        getattr(dut, name).value = 0
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi", bus_separator="__"), dut.clk, dut.rst,
                 size=RAM_BYTES)
    if PAUSE == "random":
        for index, channel in enumerate((ram.write_if.aw_channel, ram.write_if.w_channel,
                                         ram.write_if.b_channel, ram.read_if.ar_channel,
                                         ram.read_if.r_channel)):
            channel.set_pause_generator(pauses(index))
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
    cmd_layout = read_command_layout(TAG_BITS)
    beat_layout = read_beat_layout(DATA_BITS, TAG_BITS)
    # lengths that cross 4 KiB pages and exceed one 256-beat burst
    commands = [(4096 - 3 * BEAT, 7, 1), (0, 1, 2), (8192 - BEAT, 300, 3), (BEAT * 5, 33, 4),
                (16384 + 4096 - BEAT, 2, 5)]
    expected = {}
    for addr, beats, tag in commands:
        for beat in range(beats):
            expected[(tag, beat)] = image[addr + beat * BEAT: addr + (beat + 1) * BEAT]

    got = {}

    async def collect():
        while len(got) < len(expected):
            dut.rd_data__ready.value = int(PAUSE == "none" or rng.random() < 0.7)
            await ReadOnly()
            if dut.rd_data__valid.value and dut.rd_data__ready.value:
                beat = beat_layout.from_bits(dut.rd_data__payload.value.to_unsigned())
                key = (int(beat.tag), int(beat.beat))
                assert key not in got, f"beat {key} delivered twice"
                got[key] = int(beat.data).to_bytes(BEAT, "little")
            await RisingEdge(dut.clk)

    collector = cocotb.start_soon(collect())
    for addr, beats, tag in commands:
        await send(dut, "rd_cmd", cmd_layout.const({"addr": addr, "beats": beats,
                                                    "tag": tag}).as_bits())
    for _ in range(CYCLE_LIMIT):
        if collector.done():
            break
        await RisingEdge(dut.clk)
    assert collector.done(), f"only {len(got)} of {len(expected)} beats arrived"
    assert got == expected


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def writes_respect_strobes(dut):
    ram = await setup(dut)
    rng = random.Random(2)
    ram.write(0, bytes(RAM_BYTES))
    cmd_layout = write_command_layout()
    beat_layout = write_beat_layout(DATA_BITS)
    model = bytearray(RAM_BYTES)
    for addr, beats in ((4096 - 2 * BEAT, 5), (BEAT * 3, 1), (12288 - BEAT, 260)):
        done = cocotb.start_soon(wait_done(dut))
        await send(dut, "wr_cmd", cmd_layout.const({"addr": addr, "beats": beats}).as_bits())
        for beat in range(beats):
            data = rng.getrandbits(DATA_BITS)
            strb = rng.getrandbits(BEAT) if beat % 3 else (1 << BEAT) - 1
            for byte in range(BEAT):
                if strb >> byte & 1:
                    model[addr + beat * BEAT + byte] = (data >> (8 * byte)) & 0xFF
            await send(dut, "wr_data", beat_layout.const({"data": data, "strb": strb}).as_bits())
        await done
        assert ram.read(0, RAM_BYTES) == bytes(model), f"after write at {addr:#x}"
    assert dut.error.value == 0


async def wait_done(dut):
    for _ in range(CYCLE_LIMIT):
        await ReadOnly()
        seen = bool(dut.wr_done.value)
        await RisingEdge(dut.clk)
        if seen:
            return
    raise AssertionError("wr_done never pulsed")
