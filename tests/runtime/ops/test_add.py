"""The residual add (two int8 maps → ACC_8BIT, ALU ADD, requant, STORE) on fsim, bit for bit
against the numpy reference, and a small network chained through device DRAM."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType
from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d, pack_bias
from avta.runtime.ops.conv_plan import Conv2dShape, PlanError
from avta.runtime.ops.elementwise import add, build_add
from avta.runtime.ops.matmul import build_dense
from avta.runtime.ops.pool import GlobalPoolShape, build_global_avg_pool
from avta.runtime.ops.reference import add_ref, conv2d_ref, global_avg_pool_ref, matmul_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.packing import pack_nchw, pack_oihw

TAILS = {"relu": Requant(0, (0, 127)), "shr1-clip": Requant(1, (-128, 127)),
         "wrap": Requant(), "clp": Requant(1, (-100, 100), use_clp=True)}


@pytest.mark.parametrize("tail", TAILS)
def test_add(cfg, int8, device, tail):
    a = int8((2 * cfg.batch, 2 * cfg.block_out, 3, 5))
    b = int8(a.shape)
    a[0, 0, 0, :2], b[0, 0, 0, :2] = 127, (127, -128)      # the int32 sum leaves int8
    rq = TAILS[tail]
    out = add(device(cfg), a, b, requant=rq)
    np.testing.assert_array_equal(out, add_ref(a, b, requant=rq))


@pytest.mark.parametrize("threads", [1, 2])
def test_add_tiles(cfg, int8, device, threads):
    """Many tiles through both accumulator buffers."""
    a = int8((cfg.batch, cfg.block_out, 6, 7))
    b = int8(a.shape)
    rq = Requant(1, (0, 127))
    dev = device(cfg, schedule="random", seed=threads)
    out = add(dev, a, b, requant=rq, threads=threads, tile_rows=5)
    np.testing.assert_array_equal(out, add_ref(a, b, requant=rq))
    insns = dev.last_program.insns
    assert sum(i.opcode == 4 and i.alu_opcode == AluOp.ADD and not i.use_imm
               for i in insns) == -(-42 // 5)
    assert {i.memory_type for i in insns if i.opcode == 0 and i.x_size} <= {
        MemType.ACC_8BIT, MemType.UOP}


def test_add_errors(default_cfg, device):
    cfg = default_cfg
    with pytest.raises(ValueError, match="must be equal"):
        add(device(cfg), np.zeros((1, 16, 2, 2), np.int8), np.zeros((1, 16, 2, 3), np.int8),
            requant=Requant())
    with pytest.raises(PlanError, match="BLOCK_OUT = 16"):
        add(device(cfg), np.zeros((1, 8, 2, 2), np.int8), np.zeros((1, 8, 2, 2), np.int8),
            requant=Requant())
    with pytest.raises(PlanError, match="does not fit"):
        build_add(cfg, (1, 16, 64, 64), 0, 0, 0, requant=Requant(), tile_rows=1024)


@pytest.mark.parametrize("cfg", ["tiny", "batch2"], indirect=True)
def test_chain_in_device_dram(cfg, rng, int8, device):
    """conv2d → residual add of its input → global average pool → dense, each layer a program
    reading the previous one's output where it left it in DRAM (BLOCK_IN = BLOCK_OUT here, so
    conv2d's INP input layout is its OUT output layout)."""
    assert cfg.block_in == cfg.block_out
    n, c, h, classes = cfg.batch, 2 * cfg.block_out, 5, 3 * cfg.block_out
    x, wt = int8((n, c, h, h)), int8((c, c, 3, 3))
    bias = rng.integers(-2000, 2000, c)
    fc, fc_bias = int8((classes, c)), rng.integers(-500, 500, classes)
    rq_conv, rq_add = Requant(7, (0, 127)), Requant(1, (0, 127))
    rq_pool, rq_fc = Requant(5, (0, 127)), Requant(6, (-128, 127))
    y = conv2d_ref(x, wt, bias, stride=1, pad=1, requant=rq_conv)
    y = add_ref(y, x, requant=rq_add)
    y = global_avg_pool_ref(y, requant=rq_pool)
    ref = matmul_ref(y[:, :, 0, 0], fc, fc_bias, requant=rq_fc)

    dev = device(cfg)
    b, bo = cfg.batch, cfg.block_out

    def elem(buf, mem):
        return buf.elem(cfg, mem)

    x_buf = dev.upload(pack_nchw(x, b, cfg.block_in), mem=MemType.INP)
    w_buf = dev.upload(pack_oihw(wt, bo, cfg.block_in), mem=MemType.WGT)
    b_buf = dev.upload(pack_bias(cfg, bias), mem=MemType.ACC)
    conv_out, sum_out = dev.alloc(x.size, mem=MemType.OUT), dev.alloc(x.size, mem=MemType.OUT)
    pool_out = dev.alloc(n * c, mem=MemType.OUT)
    fc_w = dev.upload(pack_oihw(fc[:, :, None, None], bo, cfg.block_in), mem=MemType.WGT)
    fc_b = dev.upload(pack_bias(cfg, fc_bias), mem=MemType.ACC)
    fc_out = dev.alloc(n * classes, mem=MemType.OUT)
    acc8, out = MemType.ACC_8BIT, MemType.OUT
    dev.run(build_conv2d(cfg, Conv2dShape(n, c, h, h, c, 3, 3, 1, 1), Conv2dBuffers(
        elem(x_buf, MemType.INP), elem(w_buf, MemType.WGT), elem(conv_out, out),
        elem(b_buf, MemType.ACC)), requant=rq_conv))
    dev.run(build_add(cfg, x.shape, elem(conv_out, acc8), elem(x_buf, acc8), elem(sum_out, out),
                      requant=rq_add))
    dev.run(build_global_avg_pool(cfg, GlobalPoolShape(n, c, h, h), elem(sum_out, acc8),
                                  elem(pool_out, out), requant=rq_pool))
    dev.run(build_dense(cfg, n, c, classes, Conv2dBuffers(
        elem(pool_out, MemType.INP), elem(fc_w, MemType.WGT), elem(fc_out, out),
        elem(fc_b, MemType.ACC)), requant=rq_fc))
    got = dev.read_nchw(fc_out, n, classes, 1, 1)[:, :, 0, 0]
    np.testing.assert_array_equal(got, ref)
