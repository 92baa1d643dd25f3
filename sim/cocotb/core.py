"""cocotb side of the cocotb backend: runs one job on ``vta_top`` with cocotbext-axi models.

Not imported by Python code directly: the cocotb runner loads it inside the simulator
(:mod:`avta.sim.cocotb.backend` starts it). ``AVTA_COCOTB_JOB`` names a JSON file with the DRAM
image path, its size, the register writes before the launch, the memory knobs, the cycle limit
and where to put the final image and the result. DRAM is cocotbext-axi's ``AxiRam``, the host
its ``AxiLiteMaster``; the host follows :mod:`avta.runtime.host`, as every register-level
backend does.
"""

import json
import os
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi(\..*)?")
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam  # noqa: E402

from avta.isa.registers import REGISTERS  # noqa: E402
from avta.runtime.host import LAUNCH, RESULT_REGISTERS, ctrl_status  # noqa: E402
from avta.sim.memory_knobs import MemoryKnobs  # noqa: E402

from .axi_ram import apply_knobs  # noqa: E402

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
    apply_knobs(ram, MemoryKnobs.from_dict(job["knobs"]))
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil", bus_separator="__"), dut.clk,
                         dut.rst)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    with open(job["image"], "rb") as f:
        ram.write(0, f.read())
    for offset, value in job["writes"]:
        await host.write_dword(offset, value)
    await host.write_dword(*LAUNCH)
    status, waited = "timeout", 0
    while waited < job["max_cycles"]:
        await ClockCycles(dut.clk, POLL_CYCLES)
        waited += POLL_CYCLES
        status = ctrl_status(await host.read_dword(REGISTERS["CTRL"])) or "timeout"
        if status != "timeout":
            break
    values = {name: await host.read_dword(offset) for name, offset in RESULT_REGISTERS.items()}
    result = {"status": status, "values": values,
              "config_id": await host.read_dword(REGISTERS["CONFIG_ID"])}
    with open(job["final_image"], "wb") as f:
        f.write(ram.read(0, job["dram_size"]))
    with open(job["result"], "w") as f:
        json.dump(result, f)
