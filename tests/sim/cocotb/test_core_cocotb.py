"""Whole-core test through cocotb: runtime-built programs on vta_top with cocotbext-axi's AXI
RAM and AXI-Lite master; the final DRAM must equal fsim's byte for byte."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp
from avta.runtime.device import Device
from avta.runtime.ops.elementwise import elementwise
from avta.runtime.ops.matmul import matmul
from avta.runtime.ops.requant import Requant
from avta.sim.cocotb.backend import CocotbBackend
from avta.sim.fsim.backend import fsim_device
from avta.sim.memory_knobs import MemoryKnobs

pytestmark = pytest.mark.cocotb

DRAM_BYTES = 1 << 16


def matmul_program(dev, rng):
    cfg = dev.cfg
    a = rng.integers(-128, 128, (cfg.batch, 2 * cfg.block_in), dtype=np.int8)
    w = rng.integers(-128, 128, (2 * cfg.block_out, 2 * cfg.block_in), dtype=np.int8)
    return matmul(dev, a, w, requant=Requant(shift=5, clip=(-100, 100), use_clp=True))


def alu_program(dev, rng):
    shape = (2, dev.cfg.batch, dev.cfg.block_out)
    a = rng.integers(-1000, 1000, shape, dtype=np.int32)
    b = rng.integers(-20, 20, shape, dtype=np.int32)
    return elementwise(dev, a, [(AluOp.ADD, "b"), (AluOp.MUL, 3), (AluOp.SHR, 1)], b)


def scale_program(dev, rng):
    """SCL (ALU_SCALE: 1 or 2) with a per-tensor immediate, then per-lane multipliers of the
    configuration's width W from ACC."""
    shape = (2, dev.cfg.batch, dev.cfg.block_out)
    a = rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    half = 1 << (dev.cfg.scale_bits - 1)
    m = rng.integers(-half, half, shape, dtype=np.int32)
    return elementwise(dev, a, [(AluOp.SCL, 23456), (AluOp.SCL, "b")], m)


@pytest.mark.parametrize("program, scale", [(matmul_program, 0), (alu_program, 0),
                                            (scale_program, 1), (scale_program, 2)],
                         ids=["matmul", "alu", "scale", "scale24"])
def test_core_through_cocotb_matches_fsim(program, scale):
    cfg = load_config("tiny").replace(alu_scale=scale)
    devices = [fsim_device(cfg, dram_size=DRAM_BYTES),
               Device(cfg, CocotbBackend(cfg, dram_size=DRAM_BYTES,
                                         knobs=MemoryKnobs(seed=5, backpressure=0.2)))]
    results = [program(dev, np.random.default_rng(21)) for dev in devices]
    assert np.array_equal(results[0], results[1])
    assert np.array_equal(devices[0].backend.dram, devices[1].backend.dram)
    assert devices[1].last_result.status == "ok"


def test_log_file_keeps_the_simulator_off_stdout(tmp_path, capfd):
    """With ``log_file`` the simulator's own lines (cocotb's log, Verilator's report) go to the
    file, run after run, so a benchmark's figures stay apart from them (``avta bench``)."""
    cfg = load_config("tiny")
    log = tmp_path / "sim.log"
    dev = Device(cfg, CocotbBackend(cfg, dram_size=DRAM_BYTES, log_file=log))
    for _ in range(2):
        alu_program(dev, np.random.default_rng(3))
    captured = capfd.readouterr()
    assert "cocotb" not in captured.out and "cocotb" not in captured.err
    text = log.read_text()
    assert text.count("Initialized cocotb") == 2 and "run_job" in text
