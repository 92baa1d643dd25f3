"""The runtime's cocotb backend: each run goes through cocotb on the Verilated ``vta_top``,
with cocotbext-axi's AXI RAM as DRAM and its AXI-Lite master as the host.

It is the slow, independent path (a Python AXI model and cocotb's scheduler every cycle); tsim
is the fast one. Both must agree with fsim. Scratchpads do not persist between runs here: each
run is a fresh simulator process.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

from avta.runtime.backend import ArrayDramBackend
from avta.runtime.host import launch_writes, run_result
from avta.sim.memory_knobs import MemoryKnobs

from .axi_ram import check_knobs
from .run import run_cocotb

__all__ = ["CocotbBackend"]


class CocotbBackend(ArrayDramBackend):
    """A device simulated through cocotb; ``max_cycles`` bounds each run (status timeout);
    ``knobs`` (:class:`MemoryKnobs`) set the AXI RAM's backpressure (:mod:`.axi_ram`);
    ``log_file``: where the simulator's output goes (appended, run after run) instead of
    stdout."""

    name = "cocotb"

    def __init__(self, cfg, *, dram_size=1 << 20, max_cycles=2_000_000, knobs=MemoryKnobs(),
                 log_file=None):
        from avta.sim.design_cache import cached_top_verilog
        check_knobs(knobs)
        super().__init__(dram_size)
        self._cfg = cfg
        self._max_cycles = max_cycles
        self._knobs = knobs
        self._log_file = log_file
        self._verilog = cached_top_verilog(cfg)

    @property
    def config_id(self):
        return self._cfg.config_id    # checked against the design's register on every run

    def run(self, insn_addr, insn_count, *, bases=None):
        with tempfile.TemporaryDirectory(prefix="avta-cocotb-") as tmp:
            tmp = Path(tmp)
            (tmp / "image.bin").write_bytes(self._dram.tobytes())
            job = {"image": str(tmp / "image.bin"), "dram_size": int(self._dram.size),
                   "writes": launch_writes(insn_addr, insn_count, bases),
                   "knobs": self._knobs.to_dict(), "max_cycles": self._max_cycles,
                   "final_image": str(tmp / "final.bin"), "result": str(tmp / "result.json")}
            (tmp / "job.json").write_text(json.dumps(job))
            run_cocotb(None, top="vta_top", test_module="avta.sim.cocotb.core",
                       verilog=self._verilog,
                       extra_env={"AVTA_COCOTB_JOB": str(tmp / "job.json")},
                       log_file=self._log_file)
            result = json.loads((tmp / "result.json").read_text())
            self._dram[:] = np.frombuffer((tmp / "final.bin").read_bytes(), dtype=np.uint8)
        if result["config_id"] != self._cfg.config_id:
            raise RuntimeError(f"the simulated design reports CONFIG_ID "
                               f"{result['config_id']:#010x}, not {self._cfg.config_id:#010x}")
        return run_result(result["status"], result["values"], max_cycles=self._max_cycles)
