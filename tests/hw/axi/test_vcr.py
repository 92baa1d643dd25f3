"""Control registers in the Amaranth simulator: every register, strobes, launch, errors."""

import pytest
from amaranth.sim import Simulator

from avta.hw.axi.signatures import Resp
from avta.hw.axi.sim_bus import axil_read, axil_write
from avta.hw.axi.vcr import BASE_NAMES, ControlRegisters
from avta.isa.config import load_config
from avta.isa.registers import COUNTER_NAMES, REGISTERS, counter_offset
from avta.version import HW_VERSION


def run(cfg, bench):
    dut = ControlRegisters(cfg=cfg)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    async def testbench(ctx):
        await bench(ctx, dut)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("name", ("INSN_COUNT", "INSN_ADDR") + BASE_NAMES)
def test_writable_register_round_trips(tiny_cfg, name):
    async def bench(ctx, dut):
        assert await axil_write(ctx, dut.s_axil, REGISTERS[name], 0xDEADBEEF) == Resp.OKAY
        assert ctx.get(getattr(dut, name.lower())) == 0xDEADBEEF
        assert await axil_read(ctx, dut.s_axil, REGISTERS[name]) == (0xDEADBEEF, Resp.OKAY)
    run(tiny_cfg, bench)


def test_byte_strobes(tiny_cfg):
    async def bench(ctx, dut):
        await axil_write(ctx, dut.s_axil, REGISTERS["INSN_ADDR"], 0x11223344)
        await axil_write(ctx, dut.s_axil, REGISTERS["INSN_ADDR"], 0xAABBCCDD, strb=0b0101)
        assert (await axil_read(ctx, dut.s_axil, REGISTERS["INSN_ADDR"]))[0] == 0x11BB33DD
    run(tiny_cfg, bench)


def test_read_only_values(tiny_cfg):
    async def bench(ctx, dut):
        ctx.set(dut.cycles, 1234)
        ctx.set(dut.err_code, 7)
        ctx.set(dut.err_insn, 42)
        for index in range(len(COUNTER_NAMES)):
            ctx.set(dut.counters[index], 100 + index)
        def read(name):
            return axil_read(ctx, dut.s_axil, REGISTERS[name])
        assert await read("CYCLES") == (1234, Resp.OKAY)
        assert await read("ERR_CODE") == (7, Resp.OKAY)
        assert await read("ERR_INSN") == (42, Resp.OKAY)
        assert await read("CONFIG_ID") == (tiny_cfg.config_id, Resp.OKAY)
        assert await read("VERSION") == (HW_VERSION, Resp.OKAY)
        for index, name in enumerate(COUNTER_NAMES):
            assert await axil_read(ctx, dut.s_axil, counter_offset(name)) == (100 + index, 0)
    run(tiny_cfg, bench)


@pytest.mark.parametrize("busy, finished, error", [(1, 0, 0), (0, 1, 0), (0, 1, 1), (0, 0, 1)])
def test_ctrl_status_bits(tiny_cfg, busy, finished, error):
    async def bench(ctx, dut):
        ctx.set(dut.busy, busy)
        ctx.set(dut.finished, finished)
        ctx.set(dut.error, error)
        expected = busy | finished << 1 | error << 2
        assert await axil_read(ctx, dut.s_axil, REGISTERS["CTRL"]) == (expected, Resp.OKAY)
    run(tiny_cfg, bench)


def test_launch_is_one_cycle_and_ignored_while_busy(tiny_cfg):
    seen = []

    async def bench(ctx, dut):
        await axil_write(ctx, dut.s_axil, REGISTERS["CTRL"], 1)
        ctx.set(dut.busy, 1)
        await axil_write(ctx, dut.s_axil, REGISTERS["CTRL"], 1)
        ctx.set(dut.busy, 0)
        await axil_write(ctx, dut.s_axil, REGISTERS["CTRL"], 0)   # bit 0 clear: no launch

    async def watch(ctx, dut):
        async for _, _, launch in ctx.tick().sample(dut.launch):
            seen.append(launch)

    dut = ControlRegisters(cfg=tiny_cfg)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    async def bench_tb(ctx):
        await bench(ctx, dut)

    async def watch_tb(ctx):
        await watch(ctx, dut)
    sim.add_testbench(bench_tb)
    sim.add_testbench(watch_tb, background=True)
    sim.run()
    assert sum(seen) == 1
    assert "11" not in "".join(map(str, seen))


@pytest.mark.parametrize("addr", [0x58 + 4, 0x70, 0xFC])
def test_unmapped_offsets_answer_slverr(tiny_cfg, addr):
    async def bench(ctx, dut):
        assert (await axil_read(ctx, dut.s_axil, addr))[1] == Resp.SLVERR
        assert await axil_write(ctx, dut.s_axil, addr, 1) == Resp.SLVERR
    run(tiny_cfg, bench)


@pytest.mark.parametrize("name", ["CYCLES", "ERR_CODE", "CONFIG_ID", "VERSION"])
def test_writing_read_only_registers_answers_slverr(tiny_cfg, name):
    async def bench(ctx, dut):
        assert await axil_write(ctx, dut.s_axil, REGISTERS[name], 5) == Resp.SLVERR
        assert (await axil_read(ctx, dut.s_axil, REGISTERS[name]))[0] != 5
    run(tiny_cfg, bench)


def test_config_id_follows_the_configuration():
    async def bench(ctx, dut):
        assert (await axil_read(ctx, dut.s_axil, REGISTERS["CONFIG_ID"]))[0] == cfg.config_id
    cfg = load_config("default")
    run(cfg, bench)
