"""cocotb side of the cocotb backend: runs jobs on ``vta_top`` with cocotbext-axi models.

Not imported by Python code directly: the cocotb runner loads it inside the simulator
(:mod:`avta.sim.cocotb.backend` starts it). ``AVTA_COCOTB_JOB`` names a JSON file with the DRAM
image path, its size, the registers to write, the cycle limit and where to put the final image
and the result; DRAM is cocotbext-axi's ``AxiRam``, the host its ``AxiLiteMaster``.
"""

import json
import os
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\..*)?")
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam  # noqa: E402

from avta.isa.registers import COUNTER_NAMES, REGISTERS, Ctrl, counter_offset  # noqa: E402

#: Cycles between two reads of CTRL while waiting for the end of a run.
POLL_CYCLES = 64


@cocotb.test()
async def run_job(dut):
    with open(os.environ["AVTA_COCOTB_JOB"]) as f:
        job = json.load(f)
    Clock(dut.clk, 10, unit="ns").start(start_high=False)
    dut.rst.value = 1
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi", bus_separator="__"), dut.clk, dut.rst,
                 size=job["dram_size"])
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil", bus_separator="__"), dut.clk,
                         dut.rst)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    with open(job["image"], "rb") as f:
        ram.write(0, f.read())
    for name, value in job["registers"].items():
        await host.write_dword(REGISTERS[name], value)
    await host.write_dword(REGISTERS["CTRL"], Ctrl.LAUNCH)
    status, waited = "timeout", 0
    while waited < job["max_cycles"]:
        await ClockCycles(dut.clk, POLL_CYCLES)
        waited += POLL_CYCLES
        ctrl = await host.read_dword(REGISTERS["CTRL"])
        if ctrl & Ctrl.ERROR:
            status = "error"
            break
        if ctrl & Ctrl.FINISH:
            status = "ok"
            break
    result = {"status": status, "cycles": await host.read_dword(REGISTERS["CYCLES"]),
              "counters": {n: await host.read_dword(counter_offset(n)) for n in COUNTER_NAMES},
              "error_code": await host.read_dword(REGISTERS["ERR_CODE"]),
              "error_insn": await host.read_dword(REGISTERS["ERR_INSN"]),
              "config_id": await host.read_dword(REGISTERS["CONFIG_ID"])}
    with open(job["final_image"], "wb") as f:
        f.write(ram.read(0, job["dram_size"]))
    with open(job["result"], "w") as f:
        json.dump(result, f)
