"""Random well-formed programs (built with the runtime's StreamBuilder, so tokens order every
cross-stage hazard) on fsim and on the RTL core under random memory timing; the final DRAM images
must match byte for byte (docs/isa.md §3, well-formed programs)."""

import random

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import MemType, PadValue, Stage
from avta.isa.legality import alu_ops
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import Loop, UopKernel

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE
INP_ROWS, WGT_ROWS, ACC_ROWS = 24, 12, 16


def _load(b, rng, mem, buf, elems, rows):
    """A random 2-D LOAD of ``mem`` from ``buf`` (``elems`` elements) into the first ``rows``."""
    while True:
        x, y = rng.randint(1, 4), rng.randint(1, 3)
        stride = x + rng.randint(0, 2)
        pads = [rng.choice([0, 0, 1]) for _ in range(4)]
        height, width = pads[0] + y + pads[1], pads[2] + x + pads[3]
        last = (y - 1) * stride + x
        if height * width <= rows and last <= elems:
            break
    b.load(mem, sram=rng.randrange(rows - height * width + 1), dram=buf + rng.randrange(
        elems - last + 1), x_size=x, y_size=y, x_stride=stride, y_pad=tuple(pads[:2]),
        x_pad=tuple(pads[2:]), pad_value=rng.choice(list(PadValue)))


def _kernel(rng, gemm):
    n = rng.randint(1, 4)
    uops = [(rng.randrange(ACC_ROWS // 2), rng.randrange(INP_ROWS // 2 if gemm else ACC_ROWS // 2),
             rng.randrange(WGT_ROWS // 2) if gemm else 0) for _ in range(n)]
    loops = [Loop(rng.randint(1, 3), rng.randrange(3), rng.randrange(3),
                  rng.randrange(3) if gemm else 0) for _ in range(rng.randint(0, 2))]
    return UopKernel(uops, loops)


def random_program(dev, rng, rounds=3):
    cfg = dev.cfg
    data = np.random.default_rng(rng.randrange(1 << 30))
    bufs = {
        MemType.INP: dev.upload(data.integers(-30, 30, (32, cfg.inp_elem_bytes), dtype=np.int8),
                                mem=MemType.INP),
        MemType.WGT: dev.upload(data.integers(-30, 30, (16, cfg.wgt_elem_bytes), dtype=np.int8),
                                mem=MemType.WGT),
        MemType.ACC: dev.upload(data.integers(-500, 500, (16, cfg.acc_elem_bytes // 4),
                                              dtype=np.int32), mem=MemType.ACC),
        MemType.ACC_8BIT: dev.upload(data.integers(-128, 128, (16, cfg.acc8_elem_bytes),
                                                   dtype=np.int8), mem=MemType.ACC_8BIT),
    }
    elem = {m: buf.elem(cfg, m) for m, buf in bufs.items()}
    out = dev.alloc(400 * cfg.out_elem_bytes, mem=MemType.OUT)
    out_next = out.elem(cfg, MemType.OUT)
    b = StreamBuilder(cfg)
    for r in range(rounds):
        if r:
            b.dep_pop(C, L)
        for _ in range(rng.randint(1, 3)):
            mem = rng.choice([MemType.INP, MemType.WGT])
            _load(b, rng, mem, elem[mem], 32 if mem == MemType.INP else 16,
                  INP_ROWS if mem == MemType.INP else WGT_ROWS)
        b.dep_push(L, C)
        b.dep_pop(L, C)
        if r:
            b.dep_pop(S, C)
        for _ in range(rng.randint(2, 5)):
            kind = rng.randrange(4)
            if kind == 0:
                mem = rng.choice([MemType.ACC, MemType.ACC_8BIT])
                _load(b, rng, mem, elem[mem], 16, ACC_ROWS)
            elif kind == 1:
                b.gemm(_kernel(rng, True), reset=rng.random() < 0.2)
            else:
                op = rng.choice(alu_ops(cfg))
                imm = rng.randrange(-40, 40) if rng.random() < 0.5 else None
                b.alu(_kernel(rng, False), op, imm=imm)
        b.dep_push(C, S)
        if r + 1 < rounds:
            b.dep_push(C, L)
        b.dep_pop(C, S)
        for _ in range(rng.randint(1, 2)):
            x, y = rng.randint(1, 4), rng.randint(1, 3)
            stride = x + rng.randint(0, 2)
            b.store(sram=rng.randrange(ACC_ROWS - x * y + 1), dram=out_next, x_size=x, y_size=y,
                    x_stride=stride)
            out_next += y * stride
        b.dep_push(S, C)
    return b.finish()


@pytest.fixture
def run_random(mirrored_core_device):
    """``run_random(cfg, seed)``: a random program on fsim and on the core; they must agree."""
    def run(cfg, seed):
        dev = mirrored_core_device(cfg, seed=seed)
        program = random_program(dev, random.Random(seed))
        assert dev.run(program).status == "ok"
    return run


@pytest.mark.parametrize("config,seed", [("tiny", s) for s in range(4)] + [("rect", 0)])
def test_random_program(run_random, config, seed):
    run_random(load_config(config), seed)


def test_random_program_with_alu_scale(run_random):
    """SCL (ALU_SCALE: 1) among the random ALU ops, forwarded like the others."""
    run_random(load_config("tiny").replace(alu_scale=1), 5)


def test_random_program_two_acc_read_ports(run_random):
    run_random(load_config("tiny").replace(acc_read_ports=2), 11)


@pytest.mark.parametrize("bus,log_uop_width", [(128, 6), (512, 5)])
def test_random_program_wide_bus(run_random, bus, log_uop_width):
    """Several rows per beat on loads, stores and fetch; 64-bit micro-ops."""
    run_random(load_config("tiny").replace(axi_data_bits=bus, log_uop_width=log_uop_width), 21)


@pytest.mark.slow
@pytest.mark.parametrize("config,ports", [("tiny", 1), ("tiny", 2), ("batch2", 1), ("rect", 2)])
def test_random_programs_many(run_random, config, ports):
    cfg = load_config(config).replace(acc_read_ports=ports)
    for seed in range(100, 130 if config == "tiny" else 106):
        run_random(cfg, seed)
