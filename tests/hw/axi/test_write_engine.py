"""The write engine in the Amaranth simulator behind a small AXI4 write subordinate: a command
across a 4 KiB boundary becomes two bursts that write where they should; the planted
``vme-write-page`` fault (avta.hw.core.faults) sends the second one to the start of the first
page, and only when a command crosses a page."""

import pytest

from avta.hw.axi.signatures import PAGE_BYTES, Resp
from avta.hw.axi.write_engine import WriteEngine
from avta.hw.core.faults import FaultName
from avta.sim.amaranth.testbench import run_sim, stream_get, stream_put

DATA_BITS = 64
BEAT = DATA_BITS // 8
MEMORY = 3 * PAGE_BYTES


def _write(addr, beats, *, faults=()):
    """One command of ``beats`` beats (:func:`_payload`, all strobed) on a write engine with
    ``faults``; the AW bursts it issued ``[(awaddr, beats)]`` and the memory afterwards."""
    dut = WriteEngine(data_bits=DATA_BITS, faults=frozenset(faults))
    axi = dut.m_axi
    memory = bytearray(MEMORY)
    bursts, beats_seen = [], []
    result = {}

    async def subordinate(ctx):
        # Always ready; one OKAY response per burst once its last beat is in.
        ctx.set(axi.awready, 1)
        ctx.set(axi.wready, 1)
        owed = 0
        async for _, _, awvalid, awaddr, awlen, wvalid, wdata, wstrb, wlast, bvalid in \
                ctx.tick().sample(axi.awvalid, axi.awaddr, axi.awlen, axi.wvalid, axi.wdata,
                                  axi.wstrb, axi.wlast, axi.bvalid):
            if awvalid:
                bursts.append((awaddr, awlen + 1))
            if wvalid:
                beats_seen.append((wdata, wstrb))
                owed += wlast
            if bvalid:                          # bready is always high
                owed -= 1
            ctx.set(axi.bresp, Resp.OKAY)
            ctx.set(axi.bvalid, owed > 0)

    async def client(ctx):
        await stream_put(ctx, dut.client.cmd, {"addr": addr, "beats": beats})
        payload = _payload(beats)
        for k in range(beats):
            data = int.from_bytes(payload[k * BEAT:(k + 1) * BEAT], "little")
            await stream_put(ctx, dut.client.data, {"data": data, "strb": (1 << BEAT) - 1})
        result["resp"] = await stream_get(ctx, dut.client.resp)

    run_sim(dut, client, background=[subordinate], name="write-engine")
    assert result["resp"].err == 0
    # Beats go to the bursts in order (AXI keeps W in AW order).
    beat = iter(beats_seen)
    for start, count in bursts:
        for i in range(count):
            data, strb = next(beat)
            for b in range(BEAT):
                if strb >> b & 1:
                    memory[start + i * BEAT + b] = data >> 8 * b & 0xFF
    assert next(beat, None) is None
    return bursts, memory


def _payload(beats):
    """The bytes a command of ``beats`` beats writes: 1, 2, 3, … (mod 256)."""
    return bytes((i + 1) % 256 for i in range(beats * BEAT))


def _expected(addr, beats):
    memory = bytearray(MEMORY)
    memory[addr:addr + beats * BEAT] = _payload(beats)
    return memory


#: Two beats before the boundary and two after it.
ACROSS = (PAGE_BYTES - 2 * BEAT, 4)
#: Four beats that end on the boundary.
UP_TO = (PAGE_BYTES - 4 * BEAT, 4)


def test_a_command_across_a_page_is_split_there():
    bursts, memory = _write(*ACROSS)
    assert bursts == [(PAGE_BYTES - 2 * BEAT, 2), (PAGE_BYTES, 2)]
    assert memory == _expected(*ACROSS)


def test_planted_fault_sends_the_second_part_to_the_old_page():
    bursts, memory = _write(*ACROSS, faults={FaultName.VME_WRITE_PAGE})
    assert bursts == [(PAGE_BYTES - 2 * BEAT, 2), (0, 2)]
    assert memory != _expected(*ACROSS)
    assert memory[:2 * BEAT] == _payload(4)[2 * BEAT:]


@pytest.mark.parametrize("addr, beats, split",
                         [(*UP_TO, [4]), (PAGE_BYTES + 3 * BEAT, 300, [256, 44])],
                         ids=["ends-on-the-page", "longer-than-a-burst"])
def test_planted_fault_hides_when_no_command_crosses_a_page(addr, beats, split):
    bursts, memory = _write(addr, beats, faults={FaultName.VME_WRITE_PAGE})
    assert bursts == [(addr + sum(split[:i]) * BEAT, n) for i, n in enumerate(split)]
    assert memory == _expected(addr, beats)

