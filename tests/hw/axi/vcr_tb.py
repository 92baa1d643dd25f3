"""cocotb tests of the control registers through cocotbext-axi's AXI4-Lite master.

Run by tests/hw/axi/test_vcr_cocotb.py; the expected values come from the environment so the
same module serves any configuration.
"""

import os
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

# cocotbext-axi still uses APIs cocotb 2.x deprecates; the warnings are not ours.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\..*)?")
from cocotbext.axi import AxiLiteBus, AxiLiteMaster  # noqa: E402

REG_CTRL, REG_INSN_COUNT, REG_INSN_ADDR, REG_UOP_BASE, REG_OUT_BASE = 0x00, 0x08, 0x0C, 0x10, 0x20
REG_ERR_CODE, REG_CONFIG_ID = 0x60, 0x68


async def setup(dut):
    Clock(dut.clk, 10, unit="ns").start(start_high=False)
    dut.rst.value = 1
    for name in ("busy", "finished", "error", "cycles", "err_code", "err_insn"):
        getattr(dut, name).value = 0
    dut.counters.value = 0
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    return AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil", bus_separator="__"), dut.clk,
                         dut.rst)


@cocotb.test(timeout_time=200, timeout_unit="us")
async def registers_round_trip(dut):
    master = await setup(dut)
    values = {REG_INSN_COUNT: 17, REG_INSN_ADDR: 0x1000, REG_UOP_BASE: 0x40000, REG_OUT_BASE: 7}
    for addr, value in values.items():
        await master.write_dword(addr, value)
    for addr, value in values.items():
        assert await master.read_dword(addr) == value, hex(addr)
    assert dut.insn_count.value.to_unsigned() == 17


@cocotb.test(timeout_time=200, timeout_unit="us")
async def config_id_and_status(dut):
    master = await setup(dut)
    assert await master.read_dword(REG_CONFIG_ID) == int(os.environ["AVTA_CONFIG_ID"])
    dut.finished.value = 1
    dut.err_code.value = 9
    await RisingEdge(dut.clk)
    assert await master.read_dword(REG_CTRL) == 0b010
    assert await master.read_dword(REG_ERR_CODE) == 9


@cocotb.test(timeout_time=200, timeout_unit="us")
async def launch_pulses_once(dut):
    master = await setup(dut)
    pulses = 0

    async def count():
        nonlocal pulses
        while True:
            await RisingEdge(dut.clk)
            pulses += int(dut.launch.value)

    task = cocotb.start_soon(count())
    await master.write_dword(REG_CTRL, 1)
    await ClockCycles(dut.clk, 5)
    task.cancel()
    assert pulses == 1


@cocotb.test(timeout_time=200, timeout_unit="us")
async def unmapped_read_is_an_error(dut):
    master = await setup(dut)
    resp = await master.read(0x70, 4)
    assert int(resp.resp) == 2   # SLVERR
