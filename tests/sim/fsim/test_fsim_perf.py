"""A ResNet-18 C2-sized convolution (56x56, 64 -> 64 channels, 3x3, pad 1) built by hand on
the default configuration: bit-exact against numpy, and fsim's wall time against a numpy
reference of the same convolution (the aim: fsim within 5x of it). Slow: ``pytest -m slow``.
"""

import time

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType
from avta.isa.insn import Uop
from avta.sim.fsim import Fsim
from avta.sim.image import Image, alu, finish, gemm, load, store, sync

SIZE, CHANNELS, KERNEL, SHIFT = 56, 64, 3, 8
TILE = 4                     # output rows per tile: INP holds (TILE+2)·58·4 rows
UOPS, WGT, INP, OUT = 0x1000, 0x4000, 0x20000, 0x80000


def conv_program(cfg, x, w):
    """Tiles of TILE output rows: a padded 2-D LOAD of the input rows, one GEMM over a
    (co, kh, kw, ci) micro-op kernel, SHR, STORE; single-buffered with tokens."""
    blocks = CHANNELS // cfg.block_in                       # input and output channel blocks
    width = SIZE + 2                                        # padded row, in pixels
    image = Image(cfg, size=0xC0000)
    # DRAM layouts: input (h, w, ci) blocks of block_in; weights (co, kh, kw, ci) 16x16 tiles.
    image.put(INP, x.reshape(blocks, cfg.block_in, SIZE, SIZE).transpose(2, 3, 0, 1))
    image.put(WGT, w.reshape(blocks, cfg.block_out, blocks, cfg.block_in, KERNEL, KERNEL)
              .transpose(0, 4, 5, 2, 1, 3))
    kernel = [Uop(co, (kh * width + kw) * blocks + ci, ((co * KERNEL + kh) * KERNEL + kw) *
                  blocks + ci)
              for co in range(blocks) for kh in range(KERNEL) for kw in range(KERNEL)
              for ci in range(blocks)]
    image.put_uops(UOPS, kernel)
    image.add(load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=len(kernel)),
              load(MemType.WGT, dram=WGT // cfg.wgt_elem_bytes, x=len(kernel)))
    tiles = SIZE // TILE
    row = SIZE * blocks                                     # elements per input row
    for t in range(tiles):
        top, bottom = int(t == 0), int(t == tiles - 1)
        first = t * TILE - 1 + top
        image.add(
            load(MemType.INP, dram=INP // cfg.inp_elem_bytes + first * row,
                 y=TILE + 2 - top - bottom, x=row, stride=row,
                 pads=(top, bottom, blocks, blocks), pop_next=int(t > 0), push_next=1),
            gemm(uops=(0, len(kernel)), iters=(TILE, SIZE), dst=(SIZE * blocks, blocks),
                 reset=1, pop_next=int(t > 0)),
            gemm(uops=(0, len(kernel)), iters=(TILE, SIZE), dst=(SIZE * blocks, blocks),
                 src=(width * blocks, blocks), pop_prev=1),
            alu(AluOp.SHR, iters=(1, TILE * SIZE * blocks), dst=(0, 1), src=(0, 1), imm=SHIFT,
                push_prev=int(t < tiles - 1), push_next=1),
            store(dram=OUT // cfg.out_elem_bytes + t * TILE * SIZE * blocks,
                  x=TILE * SIZE * blocks, pop_prev=1, push_prev=1))
    image.add(sync("pop_next"), finish())
    return image


def numpy_conv(x, w):
    """The same convolution in numpy: (co, h, w) int64 sums over the 3x3 window."""
    padded = np.pad(x.astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((CHANNELS, SIZE, SIZE), dtype=np.int64)
    for kh in range(KERNEL):
        for kw in range(KERNEL):
            out += np.einsum("chw,oc->ohw", padded[:, kh:kh + SIZE, kw:kw + SIZE],
                             w[:, :, kh, kw].astype(np.int64), optimize=True)
    return out


@pytest.mark.slow
def test_c2_convolution_bit_exact_and_fast(random_tensor):
    cfg = load_config("default")
    rng = np.random.default_rng(2)
    x = random_tensor(rng, (CHANNELS, SIZE, SIZE), np.int8)
    w = random_tensor(rng, (CHANNELS, CHANNELS, KERNEL, KERNEL), np.int8)
    image = conv_program(cfg, x, w)
    data = image.to_bytes()                                 # the program at address 0

    fsim_times, result = [], None
    for _ in range(3):
        dram = bytearray(data)
        start = time.perf_counter()
        result = Fsim(cfg, strict=True).run(dram, 0, len(image.insns))
        fsim_times.append(time.perf_counter() - start)
    assert result.status == "ok", result.detail
    numpy_times = []
    for _ in range(3):
        start = time.perf_counter()
        expected = numpy_conv(x, w)
        numpy_times.append(time.perf_counter() - start)

    got = np.frombuffer(bytes(dram[OUT:OUT + CHANNELS * SIZE * SIZE]), np.int8)
    got = got.reshape(SIZE, SIZE, CHANNELS // cfg.block_out, cfg.block_out) \
        .transpose(2, 3, 0, 1).reshape(CHANNELS, SIZE, SIZE)
    np.testing.assert_array_equal(got, (expected >> SHIFT).astype(np.int8))
    assert result.counters["GEMM_STEPS"] == 2 * SIZE * SIZE * (CHANNELS // 16) ** 2 * 9
    ratio = min(fsim_times) / min(numpy_times)
    print(f"\nC2 on default: fsim {min(fsim_times):.3f} s, numpy {min(numpy_times):.3f} s, "
          f"ratio {ratio:.2f}; counters {result.counters}; cycles (estimate) {result.cycles}")
    assert ratio < 5
