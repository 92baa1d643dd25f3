"""TensorStore: 2-D strided STOREs from OUT through the memory model (latency, backpressure),
with rows narrower and wider than the bus, compared byte for byte with fsim (docs/isa.md §3.2)."""

import random

import numpy as np
import pytest

from avta.hw.core.tensor_store import TensorStore
from avta.sim.amaranth.testbench import SimTimeout, run_sim, start_insn
from avta.sim.amaranth.dram import DramModel
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.amaranth.harness import ScratchpadHarness
from avta.isa.config import load_config
from avta.isa.enums import MemType, Opcode
from avta.isa.insn import MemoryInsn
from avta.sim.fsim.dram import Dram
from avta.sim.fsim.memops import execute_store

DRAM_BYTES = 2048


def random_store(cfg, rng):
    elem = cfg.out_elem_bytes
    while True:
        x_size, y_size = rng.randint(1, 6), rng.randint(1, 3)
        x_stride = x_size + rng.randint(0, 3)
        last = (y_size - 1) * x_stride + x_size
        if last * elem <= DRAM_BYTES:
            return MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT,
                              sram_base=rng.randrange(cfg.out_depth),
                              dram_base=rng.randrange(DRAM_BYTES // elem - last + 1),
                              y_size=y_size, x_size=x_size, x_stride=x_stride)


@pytest.fixture
def run_stores(random_rows, fsim_pads):
    """``run_stores(cfg, insns, *, seed=0, stall=0.3, ...)`` → ``(dram, fsim dram, errors,
    cycles)``: the STOREs on TensorStore through the memory model and on fsim."""
    def run(cfg, insns, *, seed=0, stall=0.3, latency=(0, 5), base=0, dram_bytes=DRAM_BYTES):
        unit = TensorStore(cfg=cfg)
        harness = ScratchpadHarness(cfg, unit, {"out_rd": ("out", "r")})
        rng = np.random.default_rng(seed)
        out = random_rows(cfg, "out", rng)
        dram = bytearray(rng.integers(0, 256, dram_bytes, dtype=np.uint8).tobytes())
        ref = np.frombuffer(bytes(dram), dtype=np.uint8).copy()
        model = DramModel(dram, data_bits=cfg.axi_data_bits,
                          knobs=MemoryKnobs(seed=seed, latency=latency, backpressure=stall))
        model.add_write_client(unit.mem, "store")
        errs, cycles = [], []

        async def bench(ctx):
            harness.set_rows(ctx, "out", [int.from_bytes(r.tobytes(), "little") for r in out])
            ctx.set(unit.out_base, base)
            for insn in insns:
                await start_insn(ctx, unit, insn)
                for n in range(1, 3000):
                    _, _, done, err = await ctx.tick().sample(unit.done, unit.err)
                    if done:
                        errs.append(err)
                        cycles.append(n + 1)
                        break
                else:
                    raise SimTimeout(f"{insn} did not finish")

        run_sim(harness, bench, background=[model.run], name=f"store-{cfg.name}")
        pads = fsim_pads(cfg, {"out": out})
        fs_dram = Dram(ref, {"OUT": base})
        for insn in insns:
            if insn.x_size and not any(errs):
                execute_store(cfg, insn, pads, fs_dram, strict=False)
        return bytes(dram), ref.tobytes(), errs, cycles
    return run


@pytest.mark.parametrize("config", ["tiny", "batch2", "wide"])
def test_random_stores(run_stores, config):
    cfg = load_config(config)
    rng = random.Random(config)
    insns = [random_store(cfg, rng) for _ in range(5)]
    got, want, errs, _ = run_stores(cfg, insns, seed=len(config))
    assert errs == [0] * len(insns)
    assert got == want


def test_out_base_and_zero_size(run_stores):
    cfg = load_config("tiny")
    insns = [MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=3, dram_base=1,
                        y_size=2, x_size=3, x_stride=5),
             MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0, dram_base=0,
                        y_size=4, x_size=0)]
    got, want, errs, cycles = run_stores(cfg, insns, base=8 * cfg.out_elem_bytes)
    assert got == want and errs == [0, 0]
    assert cycles[1] <= 3


def test_write_error_is_reported(run_stores):
    cfg = load_config("tiny")
    insn = MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=15, y_size=1,
                      x_size=2, x_stride=2)
    _, _, errs, _ = run_stores(cfg, [insn], dram_bytes=64)
    assert errs == [1]
