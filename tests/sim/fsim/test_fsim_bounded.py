"""fsim's memory stays bounded whatever an instruction's loop counts: long
GEMM and ALU instructions run in segments of steps, and give the same result as in one piece."""

import tracemalloc

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType
from avta.isa.insn import Uop
from avta.sim.fsim import loops
from avta.sim.image import Image, alu, gemm, load, run_alone

#: Peak traced memory allowed for a run of a million steps (it used to take ~85 bytes a step).
PEAK_BYTES = 40 << 20


def _peak(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("kind", ["gemm", "alu"])
def test_a_million_steps_in_bounded_memory(tiny_cfg, kind):
    image = Image(tiny_cfg, size=1 << 16)
    image.put_uops(0x1000, [Uop(0, 0, 0)])
    image.add(load(MemType.UOP, dram=0x1000 // tiny_cfg.uop_elem_bytes, x=1))
    # 1,024,000 steps; the ALU's walk over the 256 ACC rows keeps its hazard-free runs long.
    long = gemm(iters=(4000, 256)) if kind == "gemm" else \
        alu(AluOp.ADD, iters=(4000, 256), dst=(0, 1), src=(0, 1), imm=1)
    (result, sim), peak = _peak(lambda: run_alone(image, long))
    assert result.status == "ok", result.detail
    assert result.counters["GEMM_STEPS" if kind == "gemm" else "ALU_STEPS"] == 1_024_000
    assert peak < PEAK_BYTES, f"{peak / 2**20:.0f} MiB"
    if kind == "alu":
        assert (sim.sram("acc") == 4000).all()


def test_segments_give_the_one_piece_result(tiny_cfg, monkeypatch):
    """A GEMM and a hazard-laden ALU, run with tiny segments and in one piece, agree."""
    rng = np.random.default_rng(4)

    def run(segment):
        monkeypatch.setattr(loops, "SEGMENT_STEPS", segment)
        image = Image(tiny_cfg, size=1 << 16)
        image.put(0x2000, rng_data)
        image.put_uops(0x1000, [Uop(1, 2, 3), Uop(2, 1, 0), Uop(1, 1, 1)])
        image.add(load(MemType.UOP, dram=0x1000 // tiny_cfg.uop_elem_bytes, x=3),
                  load(MemType.ACC, dram=0x2000 // tiny_cfg.acc_elem_bytes, x=8))
        insn = alu(AluOp.ADD, uops=(0, 3), iters=(5, 7), dst=(1, 0), src=(0, 1))
        result, sim = run_alone(image, insn)
        assert result.status == "ok", result.detail
        return sim.sram("acc").copy()

    rng_data = rng.integers(-1000, 1000, 8 * tiny_cfg.acc_elem_bytes // 4, dtype=np.int32)
    assert np.array_equal(run(loops.SEGMENT_STEPS), run(4))


def test_a_huge_load_wraps_in_bounded_memory(tiny_cfg):
    """A 60000×60000 LOAD (x_stride 0: every row reads the same 60000 elements) used to allocate
    27 GiB before its checks; without strict mode only its last depth rows survive the wrap."""
    image = Image(tiny_cfg, size=1 << 18)
    data = np.arange(60000, dtype=np.int64).astype(np.int8)
    image.put(0, np.repeat(data, tiny_cfg.inp_elem_bytes))
    insn = load(MemType.INP, dram=0, y=60000, x=60000, stride=0)
    (result, sim), peak = _peak(lambda: run_alone(image, insn))
    assert result.status == "ok", result.detail
    assert peak < PEAK_BYTES, f"{peak / 2**20:.0f} MiB"
    depth, count = tiny_cfg.inp.depth, 60000 * 60000
    # Row (count - depth + k) lands in scratchpad row (count - depth + k) % depth and holds
    # element (count - depth + k) % 60000.
    cells = np.arange(count - depth, count)
    expected = np.empty(depth, dtype=np.int8)
    expected[cells % depth] = data[cells % 60000]
    assert np.array_equal(sim.sram("inp")[:, 0, 0], expected)
    strict, _ = run_alone(image, insn, strict=True)
    assert (strict.status, strict.error_code) == ("error", 10)


def test_a_load_past_dram_is_error_9_before_anything_moves(tiny_cfg):
    image = Image(tiny_cfg, size=1 << 16)
    insn = load(MemType.INP, dram=0, y=60000, x=4, stride=1)       # the last rows leave DRAM
    result, sim = run_alone(image, insn)
    assert (result.status, result.error_code) == ("error", 9)
    assert "element" in result.detail and not sim.sram("inp").any()
