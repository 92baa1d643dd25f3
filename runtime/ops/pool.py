"""Max pooling: windows loaded with the most negative pad value, reduced with ALU MOV and MAX.

The Intel Labs flow pools in the accumulator with min-value padding (intel-extensions.md §1.6):
LOAD ACC_8BIT with ``pad_value`` MIN fills the border with −2^31 (docs/isa.md §3.1), which never wins a
MAX, so border windows need no special case. Per tile and channel block: MOV copies the first
element of every window into the output rows, then one MAX instruction folds in the other
``k² − 1`` window positions (one micro-op each, the two loops walking the output pixels).
STORE keeps the low 8 bits, the int8 maximum.

Per thread the ACC holds ``tcb`` input windows and ``tcb`` output tiles.
"""

import numpy as np

from avta.isa.enums import AluOp, MemType, PadValue

from ..packing import pack_nchw
from ..stream import StreamBuilder
from ..uop_kernel import UopKernel
from .window import WindowEmitter, WindowShape, plan_window

__all__ = ["max_pool2d", "build_max_pool2d", "plan_max_pool2d"]


def plan_max_pool2d(cfg, shape, *, threads=2):
    kk = shape.k * shape.k
    return plan_window(cfg, shape, rows_per_block=lambda inp, out: inp + out,
                       uops_per_tile=lambda tcb: tcb * kk, insns_per_tile=lambda tcb: 2 * tcb + 4,
                       threads=threads)


def build_max_pool2d(cfg, shape, inp, out, *, threads=2, tiling=None):
    """The program pooling the ACC_8BIT elements at ``inp`` into the OUT elements at ``out``."""
    if tiling is None:
        tiling = plan_max_pool2d(cfg, shape, threads=threads)
    b = StreamBuilder(cfg)
    em = WindowEmitter(b, shape, tiling, inp, out)
    tiles = list(em.tiles())
    k, t = shape.k, tiling
    for i, tile in enumerate(tiles):
        base = em.pipe.begin_tile() * t.tcb * (t.inp_pitch + t.out_pitch)
        out_base = base + t.tcb * t.inp_pitch
        em.load_window(tile, base, PadValue.MIN)
        tw_in = em.tw_in(tile)
        loops = em.window_loops(tile)

        def uops(kh, kw):
            return [(out_base + c * t.out_pitch, base + c * t.inp_pitch + kh * tw_in + kw)
                    for c in range(tile.ncb)]

        b.alu(UopKernel(uops(0, 0), loops), AluOp.MOV)
        rest = [u for kh in range(k) for kw in range(k) if (kh, kw) != (0, 0)
                for u in uops(kh, kw)]
        if rest:
            b.alu(UopKernel(rest, loops), AluOp.MAX)
        em.finish_tile(tile, out_base, last=i == len(tiles) - 1)
    return b.finish()


def max_pool2d(device, x, *, k, stride, pad=0, threads=2, tiling=None):
    """int8 max pooling of ``x[N, C, H, W]`` on ``device``: ``[N, C, OH, OW]``."""
    cfg = device.cfg
    shape = WindowShape(*x.shape, k, pad, stride)
    shape.check(cfg)
    with device.scratch() as s:
        src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out),
                       mem=MemType.ACC_8BIT)
        dst = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        device.run(build_max_pool2d(cfg, shape, src.elem(cfg, MemType.ACC_8BIT),
                                    dst.elem(cfg, MemType.OUT), threads=threads, tiling=tiling))
        return device.read_nchw(dst, shape.n, shape.c, shape.oh, shape.ow)
