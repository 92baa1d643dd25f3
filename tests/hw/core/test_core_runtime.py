"""Runtime-built programs on the RTL core: every run goes to fsim and to the core (Amaranth
simulator, DRAM model with latency, backpressure and reordering) from the same DRAM image, and
the final images must match byte for byte, with the same status and exact counters.

Programs: conv2d (padded INP loads, GEMM, requantization), every ALU op with an immediate and
with a tensor operand, padded ACC loads with every pad value, and GEMM/ALU chains with
read-after-write at distances 1 to 6 (docs/isa.md §3.3, §3.4).
"""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, PadValue, Stage
from avta.runtime.ops.conv2d import conv2d
from avta.runtime.ops.elementwise import combine_planes, elementwise, emit_readback
from avta.runtime.ops.reference import conv2d_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import Loop, UopKernel

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


@pytest.mark.parametrize("pad,stride,requant", [
    (1, 1, Requant(shift=3, clip=(-100, 100))),
    (0, 2, Requant(shift=2, clip=(-50, 50), use_clp=True)),
])
def test_conv2d(mirrored_core_device, pad, stride, requant):
    dev = mirrored_core_device()
    cfg = dev.cfg
    rng = np.random.default_rng(pad + 2 * stride)
    x = rng.integers(-16, 16, (1, 2 * cfg.block_in, 5, 5), dtype=np.int8)
    w = rng.integers(-16, 16, (cfg.block_out, 2 * cfg.block_in, 3, 3), dtype=np.int8)
    bias = rng.integers(-100, 100, cfg.block_out, dtype=np.int32)
    y = conv2d(dev, x, w, bias, stride=stride, pad=pad, requant=requant)
    assert (y == conv2d_ref(x, w, bias, stride=stride, pad=pad, requant=requant)).all()
    assert dev.last_result.counters["GEMM_STEPS"] > 0


@pytest.mark.parametrize("operand", ["imm", "tensor"])
@pytest.mark.parametrize("op", list(AluOp), ids=lambda op: op.name)
def test_elementwise(mirrored_core_device, op, operand):
    dev = mirrored_core_device(load_config("tiny").replace(alu_scale=int(op == AluOp.SCL)))
    rng = np.random.default_rng(int(op))
    a = rng.integers(-3000, 3000, 3 * dev.cfg.block_out, dtype=np.int32)
    if operand == "imm":
        imm = {AluOp.SHR: -3, AluOp.CLP: 1000, AluOp.SCL: 23456}.get(op, 77)
        steps, b = [(op, imm)], None
    else:
        b = rng.integers(-3000, 3000, a.shape, dtype=np.int32)
        if op == AluOp.SHR:
            b = rng.integers(-32, 32, a.shape, dtype=np.int32)
        steps = [(op, "b")]
    elementwise(dev, a, steps, b, a_8bit=operand == "imm" and op == AluOp.MOV)
    assert dev.last_result.counters["ALU_STEPS"] > 0


def _readback(dev, builder, acc_rows, start_row):
    """Store ACC rows ``[0, acc_rows)`` as four byte planes; the plane buffer."""
    cfg = dev.cfg
    planes = dev.alloc(4 * acc_rows * cfg.out_elem_bytes, mem=MemType.OUT)
    base = planes.elem(cfg, MemType.OUT)
    builder.dep_push(C, S)
    builder.dep_pop(C, S)
    stores = emit_readback(builder, src=0, rows=acc_rows, scratch=start_row,
                           planes=[base + k * acc_rows for k in range(4)])
    builder.dep_push(C, S)
    builder.dep_pop(C, S)
    for sram, dram in stores:
        builder.store(sram=sram, dram=dram, x_size=acc_rows)
    return planes


def test_padded_acc_loads_every_pad_value(mirrored_core_device):
    dev = mirrored_core_device()
    cfg = dev.cfg
    rng = np.random.default_rng(5)
    acc = dev.upload(rng.integers(-1000, 1000, (8, cfg.block_out), dtype=np.int32),
                     mem=MemType.ACC)
    acc8 = dev.upload(rng.integers(-128, 128, (8, cfg.block_out), dtype=np.int8),
                      mem=MemType.ACC_8BIT)
    b = StreamBuilder(cfg)
    b.load(MemType.ACC, sram=0, dram=acc.elem(cfg, MemType.ACC), x_size=2, y_size=2,
           x_stride=3, y_pad=(1, 0), x_pad=(1, 1), pad_value=PadValue.MIN)
    b.load(MemType.ACC_8BIT, sram=16, dram=acc8.elem(cfg, MemType.ACC_8BIT), x_size=3,
           y_pad=(0, 1), x_pad=(0, 2), pad_value=PadValue.MAX)
    b.load(MemType.ACC, sram=26, dram=acc.elem(cfg, MemType.ACC), x_size=1, x_pad=(2, 0))
    planes = _readback(dev, b, 29, 32)
    dev.run(b.finish())
    got = combine_planes(list(dev.read(planes, np.int8).reshape(4, 29, -1)))
    assert (got[0] == np.iinfo(np.int32).min).all() and (got[20] == np.iinfo(np.int32).max).all()


@pytest.mark.parametrize("distance", range(1, 7))
def test_gemm_and_alu_chains(mirrored_core_device, distance):
    """GEMM steps accumulate into the row written ``distance`` steps earlier; ALU steps read
    (through src) and update (through dst) rows written ``distance`` steps earlier."""
    dev = mirrored_core_device(seed=distance)
    cfg = dev.cfg
    rng = np.random.default_rng(distance)
    inp = dev.upload(rng.integers(-20, 20, (8, cfg.inp_elem_bytes), dtype=np.int8),
                     mem=MemType.INP)
    wgt = dev.upload(rng.integers(-20, 20, (8, cfg.wgt_elem_bytes), dtype=np.int8),
                     mem=MemType.WGT)
    b = StreamBuilder(cfg)
    b.load(MemType.INP, sram=0, dram=inp.elem(cfg, MemType.INP), x_size=8)
    b.load(MemType.WGT, sram=0, dram=wgt.elem(cfg, MemType.WGT), x_size=8)
    b.dep_push(L, C)
    b.dep_pop(L, C)
    rows = 16
    b.gemm(UopKernel([(0, 0, 0)], [Loop(rows, 1)]), reset=True)
    # GEMM: step k adds INP[k % 8]·WGT[(k + 3) % 8] into ACC[k % distance].
    b.gemm(UopKernel([(k % distance, k % 8, (k + 3) % 8) for k in range(12)], [Loop(2)]))
    # ALU through src: step k writes row 8 + k from row 8 + k − distance.
    b.alu(UopKernel([(8 + k, 8 + k - distance) for k in range(distance, 8)]), AluOp.ADD)
    b.alu(UopKernel([(k, k) for k in range(distance)], [Loop(3)]), AluOp.SHR, imm=-1)
    b.alu(UopKernel([(k, (k + 1) % distance) for k in range(distance)], [Loop(2)]), AluOp.MUL)
    _readback(dev, b, rows, 32)
    dev.run(b.finish())
    assert dev.last_result.counters["GEMM_STEPS"] == rows + 24
