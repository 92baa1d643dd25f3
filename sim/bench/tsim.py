"""tsim benchmarks: simulation speed against the cocotb path, and bus utilization.

``tsim-gemm``: a GEMM-heavy program (a blocked matrix multiply built by the runtime) on tsim and
through cocotb: RTL cycles, simulated cycles per second of each path, and their ratio; the two
final DRAM images must be identical.

``load-utilization``: one long LOAD INP on tsim for a 64-bit and a 256-bit configuration: bus
bytes per cycle over the bus width (1.0 = one full beat every cycle).
"""

import numpy as np

from avta.isa.config import load_config
from avta.isa.encoding import codec, finish
from avta.isa.enums import MemType, Opcode
from avta.isa.insn import MemoryInsn

from .timed import run_seconds

__all__ = ["tsim_gemm", "load_utilization"]

SEED = 0xB0A7


def _gemm_program(dev, m, k, n):
    """Run the matmul on ``dev``; its result and the seconds spent in the backend's run alone
    (the simulation, not building the program on the host)."""
    from avta.runtime.ops.matmul import matmul
    from avta.runtime.ops.requant import Requant
    rng = np.random.default_rng(SEED)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    with run_seconds(dev.backend) as spent:
        out = matmul(dev, a, w, requant=Requant(shift=8, clip=(-127, 127)))
    return out, sum(spent)


def tsim_gemm(cfg, *, shape=(64, 512, 256), with_cocotb=True):
    """Print and return the tsim and cocotb figures of one GEMM-heavy program."""
    from avta.sim.targets import make_device
    from avta.sim.tsim.build import build_library
    from avta.sim.design_cache import cached_top_verilog

    m, k, n = shape
    m = max(m, cfg.batch)
    build_library(cached_top_verilog(cfg), data_bits=cfg.axi_data_bits)      # not timed
    dram = 8 << 20
    tsim_dev = make_device(cfg, "tsim", dram, max_cycles=20_000_000)
    _, tsim_wall = _gemm_program(tsim_dev, m, k, n)
    result = tsim_dev.last_result
    figures = {"config": cfg.name, "shape": (m, k, n), "cycles": result.cycles,
               "gemm_steps": result.counters["GEMM_STEPS"], "tsim_seconds": tsim_wall,
               "tsim_cycles_per_second": result.cycles / tsim_wall}
    print(f"tsim-gemm on {cfg.name} ({cfg.shape_name}): matmul {m}x{k}x{n}")
    print(f"  RTL cycles          {result.cycles:,}  (GEMM steps {figures['gemm_steps']:,}, "
          f"{figures['gemm_steps'] / result.cycles:.2f} steps/cycle)")
    print(f"  tsim                {tsim_wall:.3f} s, {figures['tsim_cycles_per_second']:,.0f} "
          f"cycles/s (the run only)")
    if with_cocotb:
        from avta.files import cache_root
        # cocotb's and Verilator's own lines go to a log, not between the figures.
        log = cache_root() / "logs" / f"bench-tsim-gemm-{cfg.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        cocotb_dev = make_device(cfg, "cocotb", dram, log_file=log)
        _gemm_program(cocotb_dev, m, k, n)       # first run: builds the cocotb model (untimed)
        cocotb_dev = make_device(cfg, "cocotb", dram, log_file=log)
        _, cocotb_wall = _gemm_program(cocotb_dev, m, k, n)
        same = np.array_equal(tsim_dev.backend.dram, cocotb_dev.backend.dram)
        figures.update(cocotb_seconds=cocotb_wall,
                       cocotb_cycles_per_second=result.cycles / cocotb_wall,
                       speedup=cocotb_wall / tsim_wall, identical=same)
        print(f"  cocotb              {cocotb_wall:.3f} s, "
              f"{figures['cocotb_cycles_per_second']:,.0f} cycles/s (the run, including the "
              f"simulator's start)")
        print(f"  tsim / cocotb speed {figures['speedup']:.1f}x; final DRAM identical: {same}")
        print(f"  (the simulator's own log: {log})")
    return figures


def _long_load_program(cfg):
    """One LOAD INP filling the INP scratchpad, then the closing tokens and FINISH."""
    rows = cfg.inp_depth
    return [
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, y_size=1, x_size=rows,
                   x_stride=rows, push_next=1),
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_prev=1),
        finish(),
    ], rows * cfg.inp_elem_bytes


def load_utilization(configs=("default", "wide")):
    """Print and return bytes per cycle over bus bytes of a long LOAD, per configuration."""
    from avta.sim.tsim.driver import Tsim
    figures = {}
    for name in configs:
        cfg = load_config(name)
        program, nbytes = _long_load_program(cfg)
        dram = np.zeros(nbytes + 4096, dtype=np.uint8)
        code = codec(cfg).encode_program(program)
        insn_addr = nbytes
        dram[insn_addr:insn_addr + len(code)] = np.frombuffer(code, dtype=np.uint8)
        result = Tsim(cfg).run(dram, insn_addr, len(program))
        assert result.ok and result.counters["INP_LD"] == nbytes, result
        per_cycle = nbytes / result.cycles
        figures[name] = per_cycle / cfg.axi_data_bytes
        print(f"load-utilization on {name} (AXI {cfg.axi_data_bits}): {nbytes} bytes in "
              f"{result.cycles} cycles = {per_cycle:.2f} B/cycle = "
              f"{figures[name]:.1%} of the bus")
    return figures
