"""What upstream's instruction tests cover (test_vta_insn.py), plus the extensions, on fsim.

Each result is compared with a numpy model written here from docs/isa.md §3.1 and §3.4; full 32-bit
ACC values are read back through shifted copies (avta.runtime.ops.elementwise).
"""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType, PadValue, Stage
from avta.runtime.ops.elementwise import combine_planes, elementwise, emit_readback, lane_bytes
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import Loop, UopKernel

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE
I32 = (-(1 << 31), 1 << 31)


def wrap(x):
    return ((np.asarray(x, np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def sext(x, bits):
    x = np.asarray(x, np.int64) & ((1 << bits) - 1)
    return np.where(x >> (bits - 1), x - (1 << bits), x)


def alu_model(op, a, b):
    """docs/isa.md §3.4, lane by lane on int32 values."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if op == AluOp.MIN:
        return np.minimum(a, b)
    if op == AluOp.MAX:
        return np.maximum(a, b)
    if op == AluOp.ADD:
        return wrap(a + b)
    if op == AluOp.SHR:
        s = sext(b, 6)
        return np.where(s >= 0, a >> np.maximum(s, 0), wrap(a << np.maximum(-s, 0)))
    if op == AluOp.MUL:
        return sext(a, 8) * sext(b, 8)
    if op == AluOp.CLP:
        return np.maximum(np.minimum(a, b), wrap(-b))
    if op == AluOp.MOV:
        return b
    if op == AluOp.SCL:
        return wrap((a * sext(b, 16)) >> 15)
    raise AssertionError(op)


def lanes(cfg):
    return cfg.batch * cfg.block_out


def rand32(rng, shape):
    return rng.integers(*I32, shape, dtype=np.int64).astype(np.int32)


# -- ALU: every operation, immediate and tensor -------------------------------------------------

IMMEDIATES = {AluOp.MIN: 1234, AluOp.MAX: -77, AluOp.ADD: -32768, AluOp.SHR: 5, AluOp.MUL: -3,
              AluOp.CLP: 300, AluOp.MOV: 32767, AluOp.SCL: -23456}


@pytest.mark.parametrize("op", list(AluOp), ids=lambda op: op.name)
def test_alu_immediate(cfg, rng, device, op):
    cfg = cfg.replace(alu_scale=int(op == AluOp.SCL))
    a = rand32(rng, (9, lanes(cfg)))
    imm = IMMEDIATES[op]
    out = elementwise(device(cfg), a, [(op, imm)])
    np.testing.assert_array_equal(out, alu_model(op, a, imm))


@pytest.mark.parametrize("op", list(AluOp), ids=lambda op: op.name)
def test_alu_tensor(cfg, rng, device, op):
    cfg = cfg.replace(alu_scale=int(op == AluOp.SCL))
    a, b = rand32(rng, (9, lanes(cfg))), rand32(rng, (9, lanes(cfg)))
    if op == AluOp.CLP:
        b = np.abs(b >> 4)                    # CLP with a negative bound is also defined...
        b[0, 0] = -5                          # ...and kept in one lane
    out = elementwise(device(cfg), a, [(op, "b")], b)
    np.testing.assert_array_equal(out, alu_model(op, a, b))


@pytest.mark.parametrize("imm", [-32, -31, -8, -1, 0, 1, 8, 31, 32, 63, 100, -100])
def test_shr_both_directions(cfg, rng, device, imm):
    """SHR reads imm[5:0] as a signed amount: negative shifts left (docs/isa.md §3.4)."""
    a = rand32(rng, (3, lanes(cfg)))
    out = elementwise(device(cfg), a, [(AluOp.SHR, imm)])
    np.testing.assert_array_equal(out, alu_model(AluOp.SHR, a, imm))


def test_imm_reads_src_not_dst(default_cfg, rng, device):
    """With an immediate the ALU computes f(ACC[src], imm) into ACC[dst] (docs/isa.md §3.4)."""
    cfg = default_cfg
    dev = device(cfg)
    a = rand32(rng, (2, lanes(cfg)))
    buf = dev.upload(a, mem=MemType.ACC)
    planes = dev.alloc(lane_bytes(cfg) * cfg.out_elem_bytes, mem=MemType.OUT)
    b = StreamBuilder(cfg)
    b.load(MemType.ACC, sram=0, dram=buf.elem(cfg, MemType.ACC), x_size=2)
    b.alu(UopKernel([(1, 0)]), AluOp.ADD, imm=7)        # ACC[1] = ACC[0] + 7
    run_readback(dev, b, src=1, rows=1, planes=planes)
    np.testing.assert_array_equal(read_planes(dev, planes, 1, cfg), wrap(a[:1] + 7))


def test_relu(cfg, rng, device):
    a = rng.integers(-256, 256, (10, lanes(cfg))).astype(np.int32)
    out = elementwise(device(cfg), a, [(AluOp.MAX, 0), (AluOp.MIN, 127)])
    np.testing.assert_array_equal(out, np.clip(a, 0, 127))


def test_shift_and_scale(cfg, rng, device):
    a = rng.integers(-10, 10, (8, lanes(cfg))).astype(np.int32)
    shift, scale = int(rng.integers(0, 8)), int(rng.integers(1, 5))
    out = elementwise(device(cfg), a, [(AluOp.ADD, shift), (AluOp.SHR, scale)])
    np.testing.assert_array_equal(out, (a + shift) >> scale)


@pytest.mark.parametrize("threads", [1, 2])
def test_elementwise_tiles(cfg, rng, device, threads):
    """Many tiles through both accumulator buffers, each tile stored while the next computes."""
    a, b = rand32(rng, (40, lanes(cfg))), rand32(rng, (40, lanes(cfg)))
    out = elementwise(device(cfg), a, [(AluOp.ADD, "b"), (AluOp.SHR, 3)], b,
                      threads=threads, tile_rows=7)
    np.testing.assert_array_equal(out, wrap(a.astype(np.int64) + b) >> 3)


def test_acc_8bit_load_sign_extends(cfg, int8, device):
    a = int8((6, lanes(cfg)))
    out = elementwise(device(cfg), a, [(AluOp.ADD, 1000)], a_8bit=True)
    np.testing.assert_array_equal(out, a.astype(np.int32) + 1000)


# -- save/load through the accumulator, padded loads --------------------------------------------

def run_readback(dev, builder, *, src, rows, planes, scratch=None):
    cfg = dev.cfg
    scratch = src + rows if scratch is None else scratch
    out = planes.elem(cfg, MemType.OUT)
    stores = emit_readback(builder, src=src, rows=rows, scratch=scratch,
                           planes=[out + k * rows for k in range(lane_bytes(cfg))])
    builder.dep_push(C, S)
    builder.dep_pop(C, S)
    for sram, dram in stores:
        builder.store(sram=sram, dram=dram, x_size=rows)
    return dev.run(builder.finish())


def read_planes(dev, planes, rows, cfg):
    raw = dev.read(planes, np.int8)[:lane_bytes(cfg) * rows * cfg.out_elem_bytes]
    return combine_planes(list(raw.reshape(lane_bytes(cfg), rows, -1)))


def test_save_load_out(cfg, rng, device):
    """DRAM int32 → ACC → STORE: the low 8 bits of every lane (OUT mirrors ACC, docs/isa.md §3)."""
    dev = device(cfg)
    a = rng.integers(1, 10, (6 * 6, lanes(cfg))).astype(np.int32) * 37 - 100
    src = dev.upload(a, mem=MemType.ACC)
    dst = dev.alloc(a.shape[0] * cfg.out_elem_bytes, mem=MemType.OUT)
    for shr_zero in (False, True):                    # upstream inserts ">> 0"; not needed here
        b = StreamBuilder(cfg)
        b.load(MemType.ACC, sram=0, dram=src.elem(cfg, MemType.ACC), x_size=6, y_size=6)
        if shr_zero:
            b.alu(UopKernel([(0, 0)], [Loop(36, 1, 1)]), AluOp.SHR, imm=0)
        b.dep_push(C, S)
        b.dep_pop(C, S)
        b.store(sram=0, dram=dst.elem(cfg, MemType.OUT), x_size=36)
        dev.run(b.finish())
        np.testing.assert_array_equal(dev.read(dst, np.int8).reshape(a.shape), a.astype(np.int8))


PADS = {"y0": ((2, 0), (0, 0)), "y1": ((0, 2), (0, 0)), "x0": ((0, 0), (2, 0)),
        "x1": ((0, 0), (0, 2)), "all": ((1, 1), (1, 1)), "none": ((0, 0), (0, 0))}
PAD_LANE = {PadValue.ZERO: 0, PadValue.MIN: -(1 << 31), PadValue.MAX: (1 << 31) - 1}


@pytest.mark.parametrize("pads", PADS, ids=str)
@pytest.mark.parametrize("pad_value", list(PadValue), ids=lambda p: p.name)
@pytest.mark.parametrize("mem", [MemType.ACC, MemType.ACC_8BIT], ids=lambda m: m.name)
def test_padded_acc_load(cfg, rng, device, pads, pad_value, mem):
    """docs/isa.md §3.1: W·H rows, DRAM data inside the window, the pad value outside."""
    (y0, y1), (x0, x1) = PADS[pads]
    ys, xs, stride = 3, 2, 5
    dev = device(cfg)
    data = rand32(rng, (ys, stride, lanes(cfg)))
    if mem == MemType.ACC_8BIT:
        data = data.astype(np.int8)
    buf = dev.upload(data, mem=mem)
    rows = (ys + y0 + y1) * (xs + x0 + x1)
    planes = dev.alloc(lane_bytes(cfg) * rows * cfg.out_elem_bytes, mem=MemType.OUT)
    b = StreamBuilder(cfg)
    b.load(mem, sram=0, dram=buf.elem(cfg, mem), y_size=ys, x_size=xs, x_stride=stride,
           y_pad=(y0, y1), x_pad=(x0, x1), pad_value=pad_value)
    run_readback(dev, b, src=0, rows=rows, planes=planes)
    expect = np.pad(data[:, :xs].astype(np.int64), ((y0, y1), (x0, x1), (0, 0)),
                    constant_values=PAD_LANE[pad_value]).reshape(rows, -1)
    np.testing.assert_array_equal(read_planes(dev, planes, rows, cfg), expect)


INT8_PAD = {PadValue.ZERO: 0, PadValue.MIN: -128, PadValue.MAX: 127}


@pytest.mark.parametrize("pads", ["y0", "x1", "all"], ids=str)
@pytest.mark.parametrize("pad_value", list(PadValue), ids=lambda p: p.name)
@pytest.mark.parametrize("mem", [MemType.INP, MemType.WGT], ids=lambda m: m.name)
def test_padded_gemm_operand(cfg, int8, device, pads, pad_value, mem):
    """INP and WGT padding (int8 pad values) seen through a GEMM over every loaded row."""
    (y0, y1), (x0, x1) = PADS[pads]
    ys, xs, stride = 2, 3, 4
    rows = (ys + y0 + y1) * (xs + x0 + x1)
    dev = device(cfg)
    row_shape = (cfg.batch, cfg.block_in) if mem == MemType.INP else (cfg.block_out,
                                                                       cfg.block_in)
    data = int8((ys, stride) + row_shape)
    other = int8((cfg.block_out, cfg.block_in) if mem == MemType.INP else
                 (cfg.batch, cfg.block_in))
    other_mem = MemType.WGT if mem == MemType.INP else MemType.INP
    buf, obuf = dev.upload(data, mem=mem), dev.upload(other, mem=other_mem)
    planes = dev.alloc(lane_bytes(cfg) * rows * cfg.out_elem_bytes, mem=MemType.OUT)
    b = StreamBuilder(cfg)
    b.load(mem, sram=0, dram=buf.elem(cfg, mem), y_size=ys, x_size=xs, x_stride=stride,
           y_pad=(y0, y1), x_pad=(x0, x1), pad_value=pad_value)
    b.load(other_mem, sram=0, dram=obuf.elem(cfg, other_mem), x_size=1)
    b.dep_push(L, C)
    b.dep_pop(L, C)
    b.gemm(UopKernel([(0, 0, 0)], [Loop(rows, 1)]), reset=True)
    step = Loop(rows, 1, 1, 0) if mem == MemType.INP else Loop(rows, 1, 0, 1)
    b.gemm(UopKernel([(0, 0, 0)], [step]))
    run_readback(dev, b, src=0, rows=rows, planes=planes)
    padded = np.pad(data[:, :xs].astype(np.int64), ((y0, y1), (x0, x1), (0, 0), (0, 0)),
                    constant_values=INT8_PAD[pad_value]).reshape((rows,) + row_shape)
    o = other.astype(np.int64)
    if mem == MemType.INP:        # acc[r][b][o] = Σ_k inp[r][b][k]·wgt[o][k]
        expect = np.einsum("rbk,ok->rbo", padded, o)
    else:                         # acc[r][b][o] = Σ_k inp[b][k]·wgt[r][o][k]
        expect = np.einsum("bk,rok->rbo", o, padded)
    np.testing.assert_array_equal(read_planes(dev, planes, rows, cfg),
                                  expect.reshape(rows, -1))
