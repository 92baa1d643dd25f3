"""The memory engine on Verilator against cocotbext-axi's AXI RAM, with and without
backpressure."""

import json
from pathlib import Path

import pytest

from avta.hw.axi.vme import MemoryEngine
from avta.sim.cocotb.run import run_cocotb
from avta.sim.memory_knobs import MemoryKnobs

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("data_bits", [64, 256])
@pytest.mark.parametrize("backpressure", [0.0, 0.3])
def test_vme_on_verilator(data_bits, backpressure):
    run_cocotb(MemoryEngine(data_bits=data_bits, read_clients={"rd0": 8, "rd1": 8}), top="vme", test_module="vme_tb",
               test_dir=Path(__file__).parent,
               extra_env={"AVTA_DATA_BITS": str(data_bits), "AVTA_TAG_BITS": "8",
                          "AVTA_MEMORY_KNOBS": json.dumps(MemoryKnobs(backpressure=backpressure).to_dict())})
