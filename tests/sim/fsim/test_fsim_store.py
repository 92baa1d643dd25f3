"""STORE (docs/isa.md §3.2) with strides and offsets, and OUT mirroring every kind of ACC write (§3)."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType
from avta.isa.insn import Uop
from avta.sim.image import Image, alu, gemm, load, run_alone, store

ACC_DATA = 0x1000
OUT_DATA = 0x8000
FILL = 0xA5            # DRAM bytes a STORE must not touch keep this value

# (sram_base, y_size, x_size, x_stride)
STORES = [(0, 1, 1, 1), (0, 1, 8, 8), (2, 3, 4, 4), (5, 3, 4, 7), (1, 4, 1, 3), (0, 2, 5, 100)]


def low_bytes(acc_rows):
    """The OUT rows docs/isa.md §3 says mirror these ACC rows: the low 8 bits of each lane."""
    return np.array([[v & 0xFF for v in row.reshape(-1).tolist()] for row in acc_rows],
                    dtype=np.uint8)


@pytest.mark.parametrize("config", ["tiny", "batch2", "rect"])
@pytest.mark.parametrize("sram_base, y_size, x_size, x_stride", STORES)
def test_store_strides(random_tensor, config, sram_base, y_size, x_size, x_stride):
    cfg = load_config(config)
    rng = np.random.default_rng(x_stride * 100 + sram_base)
    acc = random_tensor(rng, (32, cfg.batch, cfg.block_out), np.int32)
    image = Image(cfg, size=1 << 17)
    image.put(ACC_DATA, acc)
    image.put(OUT_DATA, np.full(1 << 15, FILL, dtype=np.uint8))
    eb = cfg.out_elem_bytes
    image.add(load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=32))
    result, _ = run_alone(image, store(sram=sram_base, dram=OUT_DATA // eb, y=y_size, x=x_size,
                                       stride=x_stride))
    assert result.status == "ok", result.detail

    expected = np.full(1 << 15, FILL, dtype=np.uint8)
    out_rows = low_bytes(acc)
    for y in range(y_size):
        for x in range(x_size):
            element = y * x_stride + x
            expected[element * eb:(element + 1) * eb] = out_rows[sram_base + y * x_size + x]
    np.testing.assert_array_equal(image.get(OUT_DATA, 1 << 15), expected)
    assert result.counters["OUT_ST"] == y_size * x_size * eb


def test_store_out_base(tiny_cfg):
    """OUT_BASE is added to the byte address of every stored element."""
    cfg = tiny_cfg
    image = Image(cfg)
    image.put(ACC_DATA, np.arange(16, dtype=np.int32) - 8)
    image.add(load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=4))
    result, _ = run_alone(image, store(dram=0, x=4), bases={"OUT": OUT_DATA})
    assert result.status == "ok", result.detail
    np.testing.assert_array_equal(image.get(OUT_DATA, 16, np.int8), np.arange(16) - 8)


def writers(cfg):
    """(name, instructions that write ACC rows 0..3) for every ACC writer of docs/isa.md §3."""
    lanes = cfg.batch * cfg.block_out
    return {
        "LOAD ACC": [load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=4)],
        "LOAD ACC_8BIT": [load(MemType.ACC_8BIT, dram=ACC_DATA // cfg.acc8_elem_bytes, x=4)],
        "LOAD ACC padded": [load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=2,
                                 pads=(0, 0, 1, 1), pad_value=2)],
        "GEMM": [load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=4),
                 gemm(iters=(1, 4), dst=(0, 1), src=(0, 1))],
        "GEMM reset": [load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=4),
                       gemm(iters=(1, 2), dst=(0, 1), reset=1)],
        "ALU": [load(MemType.ACC, dram=ACC_DATA // cfg.acc_elem_bytes, x=4),
                alu(AluOp.ADD, iters=(1, 4), dst=(0, 1), src=(0, 1), imm=1000 + lanes)],
    }


@pytest.mark.parametrize("config", ["tiny", "batch2"])
@pytest.mark.parametrize("writer", ["LOAD ACC", "LOAD ACC_8BIT", "LOAD ACC padded", "GEMM",
                                    "GEMM reset", "ALU"])
def test_out_mirrors_every_acc_write(random_tensor, config, writer):
    cfg = load_config(config)
    rng = np.random.default_rng(7)
    image = Image(cfg, size=1 << 17)
    image.put(ACC_DATA, random_tensor(rng, 4 * cfg.acc_elem_bytes, np.uint8))
    image.put(0x4000, random_tensor(rng, 4 * cfg.inp_elem_bytes, np.int8))
    image.put(0x6000, random_tensor(rng, cfg.wgt_elem_bytes, np.int8))
    image.put_uops(0x800, [Uop(0, 0, 0)])
    image.add(load(MemType.UOP, dram=0x800 // cfg.uop_elem_bytes, x=1),
              load(MemType.INP, dram=0x4000 // cfg.inp_elem_bytes, x=4, push_next=1),
              load(MemType.WGT, dram=0x6000 // cfg.wgt_elem_bytes, x=1, push_next=1),
              gemm(uops=(0, 0), pop_prev=1), gemm(uops=(0, 0), pop_prev=1))
    image.add(*writers(cfg)[writer])
    result, sim = run_alone(image, store(dram=OUT_DATA // cfg.out_elem_bytes, x=4))
    assert result.status == "ok", result.detail
    acc = np.array(sim.sram("acc")[:4])
    assert acc.any() or writer == "GEMM reset"
    np.testing.assert_array_equal(sim.sram("out")[:4].view(np.uint8).reshape(4, -1),
                                  low_bytes(acc))
    np.testing.assert_array_equal(image.get(OUT_DATA, 4 * cfg.out_elem_bytes),
                                  low_bytes(acc).reshape(-1))
