"""Depthwise conv2d with ALU MUL (as the Intel Labs flow runs it).

Each channel has its own ``k × k`` filter, so channels stay in their lanes: the input windows and
the weights are loaded into ACC with ACC_8BIT (zero padding), and per tile and channel block

1. MOV copies, for every kernel position (kh, kw), the input pixels it meets into a product
   region (one micro-op per position, the two loops walking the output pixels);
2. MUL multiplies each product region by its weight row (MUL takes the low 8 bits of both
   operands as int8, docs/isa.md §3.4: exactly the int8 input and weight);
3. MOV and ADD sum the product regions into the output rows;
4. the requantization tail (:class:`~avta.runtime.ops.requant.Requant`) and STORE.

Any stride works, MobileNet's 3×3 stride 2 included: the MOV's two loops step the input window
by ``stride·TW_in`` rows per output row and ``stride`` per output column
(:meth:`~avta.runtime.ops.window.WindowEmitter.window_loops`), and each tile loads the
``(th−1)·stride + k`` rows and columns its outputs need, padded by the LOAD at the borders.

Weights in DRAM: ``(C/BLOCK_OUT, KH, KW, BATCH, BLOCK_OUT)`` int8 ACC_8BIT elements, the same for
every batch row. Per thread the ACC holds ``tcb`` × (input window + ``k²`` product regions + output
+ ``k²`` weight rows).
"""

import numpy as np

from avta.isa.enums import AluOp, MemType, PadValue

from ..packing import pack_nchw
from ..stream import StreamBuilder
from ..uop_kernel import UopKernel
from .requant import Requant
from .window import WindowEmitter, WindowShape, plan_window

__all__ = ["depthwise_conv2d", "build_depthwise_conv2d", "plan_depthwise_conv2d",
           "pack_depthwise_weights"]


def plan_depthwise_conv2d(cfg, shape, *, threads=2):
    kk = shape.k * shape.k
    return plan_window(cfg, shape, rows_per_block=lambda inp, out: inp + (kk + 1) * out + kk,
                       uops_per_tile=lambda tcb: 2 * tcb * kk,
                       insns_per_tile=lambda tcb: tcb + 10, threads=threads)


def pack_depthwise_weights(cfg, w):
    """``w[C, 1, KH, KW]`` int8 as ACC_8BIT elements ``(C/BO, KH, KW, BATCH, BO)``."""
    c, _, kh, kw = w.shape
    blocks = np.asarray(w, np.int8)[:, 0].reshape(c // cfg.block_out, cfg.block_out, kh, kw)
    blocks = blocks.transpose(0, 2, 3, 1)[:, :, :, None, :]
    return np.ascontiguousarray(np.broadcast_to(blocks, blocks.shape[:3] + (cfg.batch,
                                                                          cfg.block_out)))


def build_depthwise_conv2d(cfg, shape, inp, wgt, out, *, requant=Requant(), threads=2,
                           tiling=None):
    """The program of one depthwise layer: ACC_8BIT input at ``inp``, weights at ``wgt``
    (:func:`pack_depthwise_weights`), OUT elements at ``out``."""
    if tiling is None:
        tiling = plan_depthwise_conv2d(cfg, shape, threads=threads)
    b = StreamBuilder(cfg)
    em = WindowEmitter(b, shape, tiling, inp, out)
    t, k = tiling, shape.k
    kk = k * k
    per_block = t.inp_pitch + (kk + 1) * t.out_pitch + kk
    tiles = list(em.tiles())
    for i, tile in enumerate(tiles):
        base = em.pipe.begin_tile() * t.tcb * per_block
        prod = base + t.tcb * t.inp_pitch                  # [c][kh·k + kw] product regions
        acc = prod + t.tcb * kk * t.out_pitch               # [c] output rows
        wrow = acc + t.tcb * t.out_pitch                    # [c][kh·k + kw] weight rows
        em.load_window(tile, base, PadValue.ZERO)
        b.load(MemType.ACC_8BIT, sram=wrow, dram=wgt + tile.cb0 * kk, x_size=tile.ncb * kk)
        tw_in = em.tw_in(tile)
        blocks = range(tile.ncb)

        def region(c, p):
            return prod + (c * kk + p) * t.out_pitch

        b.alu(UopKernel([(region(c, kh * k + kw), base + c * t.inp_pitch + kh * tw_in + kw)
                         for kh in range(k) for kw in range(k) for c in blocks],
                        em.window_loops(tile)), AluOp.MOV)
        b.alu(UopKernel([(region(c, p), wrow + c * kk + p) for p in range(kk) for c in blocks],
                        em.out_loops(tile, src_moves=False)), AluOp.MUL)
        b.alu(UopKernel([(acc + c * t.out_pitch, region(c, 0)) for c in blocks],
                        em.out_loops(tile)), AluOp.MOV)
        if kk > 1:
            b.alu(UopKernel([(acc + c * t.out_pitch, region(c, p)) for p in range(1, kk)
                             for c in blocks], em.out_loops(tile)), AluOp.ADD)
        same = UopKernel([(acc + c * t.out_pitch,) * 2 for c in blocks], em.out_loops(tile))
        requant.emit(b, same)
        em.finish_tile(tile, acc, last=i == len(tiles) - 1)
    return b.finish()


def depthwise_conv2d(device, x, w, *, stride=1, pad=0, requant=Requant(), threads=2,
                     tiling=None):
    """int8 depthwise convolution of ``x[N, C, H, W]`` with ``w[C, 1, K, K]`` on ``device``."""
    cfg = device.cfg
    if w.shape[0] != x.shape[1] or w.shape[1] != 1 or w.shape[2] != w.shape[3]:
        raise ValueError(f"depthwise weights must be [C, 1, K, K] with C = {x.shape[1]}; got "
                         f"{list(w.shape)}")
    shape = WindowShape(*x.shape, w.shape[2], pad, stride)
    shape.check(cfg)
    with device.scratch() as s:
        src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out),
                       mem=MemType.ACC_8BIT)
        wgt = s.upload(pack_depthwise_weights(cfg, w), mem=MemType.ACC_8BIT)
        out = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        device.run(build_depthwise_conv2d(
            cfg, shape, src.elem(cfg, MemType.ACC_8BIT), wgt.elem(cfg, MemType.ACC_8BIT),
            out.elem(cfg, MemType.OUT), requant=requant, threads=threads, tiling=tiling))
        return device.read_nchw(out, shape.n, shape.c, shape.oh, shape.ow)
