"""The control registers on Verilator, driven by cocotbext-axi (cocotb 2.x runner under pytest)."""

from pathlib import Path

import pytest

from avta.hw.axi.vcr import ControlRegisters
from avta.isa.config import load_config
from avta.sim.cocotb.run import run_cocotb

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("config", ["tiny"])
def test_vcr_on_verilator(config):
    cfg = load_config(config)
    run_cocotb(ControlRegisters(cfg=cfg), top="vcr", test_module="vcr_tb",
               test_dir=Path(__file__).parent,
               extra_env={"AVTA_CONFIG_ID": str(cfg.config_id)})
