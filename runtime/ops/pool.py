"""Pooling in the accumulator: max pooling, average pooling and global average pooling.

All three read int8 feature maps in the packed OUT layout ``(N/B, C/BO, H, W, B, BO)`` — what
conv2d writes — as ACC_8BIT elements (sign-extended into ACC rows, docs/isa.md §3.1), combine rows
with ALU micro-ops, and write ``(N/B, C/BO, OH, OW, B, BO)`` int8 OUT elements. Channels are the
lanes, so nothing crosses lanes and no GEMM is needed.

**Max pooling.** The Intel Labs flow pools in the accumulator with min-value padding: LOAD ACC_8BIT with ``pad_value`` MIN fills the border with −2^31
(docs/isa.md §3.1), which never wins a MAX, so border windows need no special case. Per tile and
channel block: MOV copies the first element of every window into the output rows, then one MAX
instruction folds in the other ``k² − 1`` window positions (one micro-op each, the two loops
walking the output pixels). STORE keeps the low 8 bits, the int8 maximum.

**Average pooling.** The same with zero padding (a padded cell counts as 0 and as a cell of the
window) and ADD instead of MAX: the int32 window sum, then the requantization tail
(:class:`~avta.runtime.ops.requant.Requant`: SHR by the shift, then the clip). The shift is an arithmetic right shift, so an average is the window's sum
shifted right — rounded toward −∞ (floor), not to nearest; ``shift = log2(k²)`` gives the floor
of the mean when k² is a power of two, and the caller picks the shift otherwise
(:func:`~avta.runtime.ops.reference.avg_pool_ref`).

Per thread the ACC holds ``tcb`` input windows and ``tcb`` output tiles (:mod:`.window`).

**Global average pooling** sums each channel's whole ``H × W`` plane into one output pixel
(ResNet's 7×7 → 1×1 before the classifier). A tile is ``tcb`` channel blocks of one batch block;
their planes are loaded with one LOAD ACC_8BIT (``tcb`` DRAM rows of ``piece`` elements, one
plane apart), and a single micro-op with two loops — channel blocks outside, plane positions
inside, the destination fixed — adds them up (each ALU step sees the previous one, docs/isa.md
§3.4). A plane too large for ACC is summed in pieces, one load and ADD after another; LOAD
ACC_8BIT and ALU are both compute-stage instructions, so the pieces need no tokens.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.enums import AluOp, MemType, PadValue
from avta.isa.formats import ITER_BITS

from ..packing import pack_nchw
from ..pipeline import Pipeline
from ..stream import StreamBuilder
from ..uop_kernel import Loop, UopKernel
from .conv_plan import PlanError
from .window import WindowEmitter, WindowShape, plan_window

__all__ = ["max_pool2d", "build_max_pool2d", "plan_max_pool2d", "avg_pool2d",
           "build_avg_pool2d", "plan_avg_pool2d", "global_avg_pool", "build_global_avg_pool",
           "plan_global_avg_pool", "GlobalPoolShape", "GlobalPoolTiling"]


# -- k × k windows: max and average ---------------------------------------------------------------

def _plan_pool(cfg, shape, threads, tail_insns):
    kk = shape.k * shape.k
    return plan_window(cfg, shape, rows_per_block=lambda inp, out: inp + out,
                       uops_per_tile=lambda tcb: tcb * kk,
                       insns_per_tile=lambda tcb: 2 * tcb + 4 + tail_insns, threads=threads)


def plan_max_pool2d(cfg, shape, *, threads=2):
    return _plan_pool(cfg, shape, threads, 0)


def plan_avg_pool2d(cfg, shape, *, threads=2):
    return _plan_pool(cfg, shape, threads, 3)


def _build_pool(cfg, shape, inp, out, tiling, *, pad_value, fold, requant):
    """Window reduction: MOV of each window's first element, ``fold`` (MAX or ADD) of the others,
    then ``requant`` (``None``: no tail) over the output rows."""
    b = StreamBuilder(cfg)
    em = WindowEmitter(b, shape, tiling, inp, out)
    tiles = list(em.tiles())
    k, t = shape.k, tiling
    for i, tile in enumerate(tiles):
        base = em.pipe.begin_tile() * t.tcb * (t.inp_pitch + t.out_pitch)
        out_base = base + t.tcb * t.inp_pitch
        em.load_window(tile, base, pad_value)
        tw_in = em.tw_in(tile)
        loops = em.window_loops(tile)

        def uops(kh, kw):
            return [(out_base + c * t.out_pitch, base + c * t.inp_pitch + kh * tw_in + kw)
                    for c in range(tile.ncb)]

        b.alu(UopKernel(uops(0, 0), loops), AluOp.MOV)
        rest = [u for kh in range(k) for kw in range(k) if (kh, kw) != (0, 0)
                for u in uops(kh, kw)]
        if rest:
            b.alu(UopKernel(rest, loops), fold)
        if requant is not None:
            requant.emit(b, UopKernel([(out_base + c * t.out_pitch,) * 2
                                       for c in range(tile.ncb)], em.out_loops(tile)))
        em.finish_tile(tile, out_base, last=i == len(tiles) - 1)
    return b.finish()


def build_max_pool2d(cfg, shape, inp, out, *, threads=2, tiling=None):
    """The program pooling the ACC_8BIT elements at ``inp`` into the OUT elements at ``out``."""
    if tiling is None:
        tiling = plan_max_pool2d(cfg, shape, threads=threads)
    return _build_pool(cfg, shape, inp, out, tiling, pad_value=PadValue.MIN, fold=AluOp.MAX,
                       requant=None)


def build_avg_pool2d(cfg, shape, inp, out, *, requant, threads=2, tiling=None):
    """The program of one average pooling (a :class:`~.window.WindowShape`): the int8 map at
    ACC_8BIT element ``inp`` (``(N/B, C/BO, H, W, B, BO)``, conv2d's output layout) to
    ``requant(window sum)`` at OUT element ``out`` (``(N/B, C/BO, OH, OW, B, BO)``)."""
    if tiling is None:
        tiling = plan_avg_pool2d(cfg, shape, threads=threads)
    return _build_pool(cfg, shape, inp, out, tiling, pad_value=PadValue.ZERO, fold=AluOp.ADD,
                       requant=requant)


def _run_window(device, x, shape, build):
    cfg = device.cfg
    shape.check(cfg)
    with device.scratch() as s:
        src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out),
                       mem=MemType.ACC_8BIT)
        dst = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        device.run(build(src.elem(cfg, MemType.ACC_8BIT), dst.elem(cfg, MemType.OUT)))
        return device.read_nchw(dst, shape.n, shape.c, shape.oh, shape.ow)


def max_pool2d(device, x, *, k, stride, pad=0, threads=2, tiling=None):
    """int8 max pooling of ``x[N, C, H, W]`` on ``device``: ``[N, C, OH, OW]``."""
    shape = WindowShape(*x.shape, k, pad, stride)
    return _run_window(device, x, shape, lambda inp, out: build_max_pool2d(
        device.cfg, shape, inp, out, threads=threads, tiling=tiling))


def avg_pool2d(device, x, *, k, stride, pad=0, requant, threads=2, tiling=None):
    """int8 average pooling of ``x[N, C, H, W]`` on ``device``: ``requant`` of each ``k × k``
    window's int32 sum (zero padding counts), ``[N, C, OH, OW]``; bit for bit
    :func:`~avta.runtime.ops.reference.avg_pool_ref`."""
    shape = WindowShape(*x.shape, k, pad, stride)
    return _run_window(device, x, shape, lambda inp, out: build_avg_pool2d(
        device.cfg, shape, inp, out, requant=requant, threads=threads, tiling=tiling))


# -- global average pooling -----------------------------------------------------------------------

@dataclass(frozen=True)
class GlobalPoolShape:
    """``n × c × h × w`` int8 input, pooled to ``n × c × 1 × 1``."""
    n: int
    c: int
    h: int
    w: int

    @property
    def plane(self):
        return self.h * self.w

    def check(self, cfg):
        if self.n % cfg.batch or self.c % cfg.block_out:
            raise PlanError(f"n = {self.n} and c = {self.c} must be multiples of BATCH = "
                            f"{cfg.batch} and BLOCK_OUT = {cfg.block_out} on {cfg.name!r}")
        if self.h < 1 or self.w < 1:
            raise PlanError(f"global pooling of an empty {self.h}x{self.w} plane")


@dataclass(frozen=True)
class GlobalPoolTiling:
    """``tcb`` channel blocks per tile, their planes summed ``piece`` elements at a time; per
    thread ACC holds ``tcb·piece`` input rows and ``tcb`` output rows."""
    tcb: int
    piece: int
    threads: int

    @property
    def rows(self):
        return self.tcb * (self.piece + 1)


def _global_fits(cfg, shape, t):
    """Why tiling ``t`` does not fit (an empty string when it does)."""
    limit_a = 1 << cfg.acc_factor_bits
    if t.threads * t.rows > cfg.acc_depth:
        return f"{t.threads} x {t.rows} ACC rows exceed the {cfg.acc_depth}-row ACC"
    if t.piece >= limit_a or t.tcb >= limit_a:
        return f"ALU src factor {t.piece} does not fit the {cfg.acc_factor_bits}-bit field"
    if t.piece >= 1 << ITER_BITS or t.tcb >= 1 << ITER_BITS:
        return f"loop extent {max(t.piece, t.tcb)} does not fit the {ITER_BITS}-bit iter field"
    if t.tcb > 1 and shape.plane >= 1 << 16:
        return f"a plane of {shape.plane} elements does not fit the 16-bit LOAD x_stride"
    return ""


def plan_global_avg_pool(cfg, shape, *, threads=2):
    """Whole planes when one fits each thread's share of ACC, the most channel blocks per tile
    that fit (balanced over the tiles); otherwise one channel block per tile, summed in pieces."""
    shape.check(cfg)
    cb = shape.c // cfg.block_out
    limit = min(cfg.acc_depth // threads - 1, (1 << cfg.acc_factor_bits) - 1,
                (1 << ITER_BITS) - 1)
    if limit < 1:
        raise PlanError(f"global pooling needs 2 ACC rows per thread; {cfg.name!r} has "
                        f"{cfg.acc_depth} for {threads} thread(s)")
    if shape.plane <= limit:
        tcb = 1
        for size in range(cb, 0, -1):
            if not _global_fits(cfg, shape, GlobalPoolTiling(size, shape.plane, threads)):
                tcb = size
                break
        tcb = -(-cb // -(-cb // tcb))           # the same number of tiles, balanced
        return GlobalPoolTiling(tcb, shape.plane, threads)
    pieces = -(-shape.plane // limit)
    return GlobalPoolTiling(1, -(-shape.plane // pieces), threads)


def build_global_avg_pool(cfg, shape, inp, out, *, requant, threads=2, tiling=None):
    """The program of one global average pooling (a :class:`GlobalPoolShape`): the int8 map at
    ACC_8BIT element ``inp`` (``(N/B, C/BO, H, W, B, BO)``) to ``requant(plane sum)`` at OUT
    element ``out`` (``(N/B, C/BO, 1, 1, B, BO)``)."""
    if tiling is None:
        tiling = plan_global_avg_pool(cfg, shape, threads=threads)
    shape.check(cfg)
    why = _global_fits(cfg, shape, tiling)
    if why:
        raise PlanError(f"global pooling tiling {tiling} does not fit {cfg.name!r}: {why}")
    b = StreamBuilder(cfg)
    pipe = Pipeline(b, threads=tiling.threads)
    t, plane, cb = tiling, shape.plane, shape.c // cfg.block_out
    tiles = [(nb, cb0, min(t.tcb, cb - cb0)) for nb in range(shape.n // cfg.batch)
             for cb0 in range(0, cb, t.tcb)]
    pending = []
    for i, (nb, cb0, ncb) in enumerate(tiles):
        base = pipe.begin_tile() * t.rows
        out_base = base + t.tcb * t.piece
        first = (nb * cb + cb0) * plane
        for p0 in range(0, plane, t.piece):
            size = min(t.piece, plane - p0)
            b.load(MemType.ACC_8BIT, sram=base, dram=inp + first + p0, y_size=ncb, x_size=size,
                   x_stride=plane if ncb > 1 else size)
            blocks = Loop(ncb, 1, size)
            if p0 == 0:
                b.alu(UopKernel([(out_base, base)], [blocks]), AluOp.MOV)
                skip = 1
            else:
                skip = 0
            if size > skip:
                b.alu(UopKernel([(out_base, base + skip)], [blocks, Loop(size - skip, 0, 1)]),
                      AluOp.ADD)
        requant.emit(b, UopKernel([(out_base, out_base)], [Loop(ncb, 1, 1)]))
        pipe.end_tile()
        pending.append((out_base, nb * cb + cb0, ncb))
        while pending and (len(pending) == t.threads or i == len(tiles) - 1):
            sram, dram, ncb = pending.pop(0)
            pipe.begin_store()
            b.store(sram=sram, dram=out + dram, x_size=ncb)
            pipe.end_store()
    return b.finish()


def global_avg_pool(device, x, *, requant, threads=2, tiling=None):
    """int8 global average pooling of ``x[N, C, H, W]`` on ``device``: ``requant`` of each
    channel's int32 plane sum, ``[N, C, 1, 1]``; bit for bit
    :func:`~avta.runtime.ops.reference.global_avg_pool_ref`."""
    cfg = device.cfg
    shape = GlobalPoolShape(*np.shape(x))
    shape.check(cfg)
    with device.scratch() as s:
        src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out),
                       mem=MemType.ACC_8BIT)
        dst = s.alloc(shape.n * shape.c, mem=MemType.OUT)
        device.run(build_global_avg_pool(cfg, shape, src.elem(cfg, MemType.ACC_8BIT),
                                         dst.elem(cfg, MemType.OUT), requant=requant,
                                         threads=threads, tiling=tiling))
        return device.read_nchw(dst, shape.n, shape.c, 1, 1)
