"""The tsim harness on a small real design (VCR + VME + copy engine): AXI-Lite host, memory
model with latency, reordering and backpressure, error responses, cycle limit, build cache."""

import numpy as np
import pytest

from avta.isa.registers import REGISTERS
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.tsim import build
from avta.sim.tsim.build import build_library
from avta.sim.tsim.driver import Tsim, TsimError
from avta.sim.tsim.harness_header import HEADER_NAME, harness_header

pytestmark = pytest.mark.tsim

KNOBS = {
    "plain": MemoryKnobs(),
    "slow": MemoryKnobs(seed=3, latency=(20, 20), outstanding=1, write_latency=9),
    "shaken": MemoryKnobs.random(seed=7),
}


@pytest.mark.parametrize("knobs", list(KNOBS), ids=list(KNOBS))
def test_copy_through_the_memory_model(copy_design, knobs):
    cfg, verilog = copy_design
    beat = cfg.axi_data_bits // 8
    sim = Tsim(cfg, verilog=verilog, knobs=KNOBS[knobs])
    rng = np.random.default_rng(5)
    dram = rng.integers(0, 256, 1 << 16, dtype=np.uint8)
    before = dram.copy()
    src, dst, beats = 4096 - 3 * beat, 32768, 700    # crosses pages, > 256 beats, no overlap
    result = sim.run(dram, src, beats, bases={"OUT": dst})
    assert result.status == "ok", result
    expected = before.copy()
    expected[dst:dst + beats * beat] = before[src:src + beats * beat]
    assert np.array_equal(dram, expected)
    assert result.counters["OUT_ST"] == beats * beat
    assert result.cycles >= beats        # one beat per cycle at best


def test_memory_model_slows_with_latency(copy_design):
    cfg, verilog = copy_design
    cycles = {}
    for name in ("plain", "slow"):
        dram = np.zeros(1 << 16, dtype=np.uint8)
        cycles[name] = Tsim(cfg, verilog=verilog, knobs=KNOBS[name]).run(
            dram, 0, 64, bases={"OUT": 32768}).cycles
    assert cycles["slow"] > cycles["plain"] + 20


def test_access_outside_dram_is_error_9(copy_design):
    cfg, verilog = copy_design
    sim = Tsim(cfg, verilog=verilog)
    dram = np.zeros(4096, dtype=np.uint8)
    result = sim.run(dram, 4096 - 64, 64, bases={"OUT": 0})   # reads run past the end
    assert result.status == "error" and result.error_code == 9
    # a write past the end is refused and reported too, and changes nothing outside
    dram = np.zeros(4096, dtype=np.uint8)
    result = sim.run(dram, 0, 8, bases={"OUT": 4096})
    assert result.status == "error" and result.error_code == 9


def test_cycle_limit_gives_timeout(copy_design):
    cfg, verilog = copy_design
    sim = Tsim(cfg, verilog=verilog, knobs=KNOBS["slow"])
    dram = np.zeros(1 << 16, dtype=np.uint8)
    result = sim.run(dram, 0, 2000, bases={"OUT": 32768}, max_cycles=200)
    assert result.status == "timeout"


def test_registers_and_config_id(copy_design):
    cfg, verilog = copy_design
    sim = Tsim(cfg, verilog=verilog)
    assert sim.read_reg(REGISTERS["CONFIG_ID"]) == cfg.config_id
    sim.write_reg(REGISTERS["INP_BASE"], 0x1234)
    assert sim.read_reg(REGISTERS["INP_BASE"]) == 0x1234


def test_build_is_cached(copy_design):
    cfg, verilog = copy_design
    first = build_library(verilog, data_bits=cfg.axi_data_bits)
    stamp = first.stat().st_mtime_ns
    assert build_library(verilog, data_bits=cfg.axi_data_bits) == first
    assert first.stat().st_mtime_ns == stamp


def test_build_compiles_the_generated_header_and_rebuilds_when_it_changes(copy_design,
                                                                           monkeypatch):
    cfg, verilog = copy_design
    lib = build_library(verilog, data_bits=cfg.axi_data_bits)
    assert (lib.parent / HEADER_NAME).read_text() == harness_header()
    # A fact shared with Python changes: the header, hence the cache key, changes with it.
    changed = harness_header() + "// changed\n"
    monkeypatch.setattr(build, "harness_header", lambda: changed)
    other = build_library(verilog, data_bits=cfg.axi_data_bits)
    assert other != lib and (other.parent / HEADER_NAME).read_text() == changed


def test_vcd_waveform_is_written(copy_design, tmp_path):
    cfg, verilog = copy_design
    waves = tmp_path / "run.vcd"
    sim = Tsim(cfg, verilog=verilog, waves=waves)
    dram = np.zeros(1 << 16, dtype=np.uint8)
    assert sim.run(dram, 0, 4, bases={"OUT": 32768}).status == "ok"
    sim.close()
    text = waves.read_text()
    assert "$enddefinitions" in text and "m_axi" in text


def _have_lz4():
    import subprocess
    return subprocess.run(["g++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                          capture_output=True, text=True).returncode == 0


@pytest.mark.skipif(_have_lz4(), reason="lz4 headers installed: FST builds")
def test_fst_without_lz4_says_what_to_do(copy_design, tmp_path):
    from avta.sim.verilator import VerilatorError
    cfg, verilog = copy_design
    with pytest.raises(VerilatorError, match="liblz4-dev.*vcd"):
        Tsim(cfg, verilog=verilog, waves=tmp_path / "run.fst")


def test_waveform_suffix_is_checked(copy_design, tmp_path):
    cfg, verilog = copy_design
    with pytest.raises(ValueError, match="must end in .vcd or .fst"):
        Tsim(cfg, verilog=verilog, waves=tmp_path / "run.wav")


def test_close_frees_the_design(copy_design):
    cfg, verilog = copy_design
    with Tsim(cfg, verilog=verilog) as sim:
        assert sim.run(np.zeros(1 << 16, dtype=np.uint8), 0, 1).status == "ok"
    sim.close()                          # a second close is harmless
    with pytest.raises(TsimError, match="closed"):
        sim.run(np.zeros(1 << 16, dtype=np.uint8), 0, 1)
