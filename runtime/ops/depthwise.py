"""Depthwise conv2d: on the GEMM core with diagonal weight blocks, or with ALU MUL (as the Intel
Labs flow runs it), whichever the cycle estimate says is faster.

**On the GEMM core** (:func:`build_depthwise_gemm`). One kernel position of one channel block is
a GEMM step whose weight block is diagonal: output channel ``o`` of the block gets input channel
``o`` times its weight, the other BLOCK − 1 products of its dot product are zero. Only one in
BLOCK_IN of the MACs is useful, but a step covers a whole output row of a block in one cycle,
where the ALU needs a MUL and an ADD (each two ACC reads) per kernel position. The layer is the
conv2d of :mod:`.conv2d` with a depthwise :class:`~.conv_plan.Conv2dShape`: a task's input blocks
are its tile's output blocks, its kernel has ``tco · KH · KW`` micro-ops, and only the diagonal
blocks are stored (:func:`~avta.runtime.packing.pack_diagonal`): weights in DRAM are WGT
elements ``(C/BLOCK, KH, KW, BLOCK_OUT, BLOCK_IN)``. Input and output are the conv2d's INP and
OUT layouts. It needs BLOCK_IN = BLOCK_OUT (the lanes of a block must line up).

**With the ALU** (:func:`build_depthwise_conv2d`). Each channel has its own ``k × k`` filter, so
channels stay in their lanes: the input windows and the weights are loaded into ACC with
ACC_8BIT (zero padding), and per tile and channel block

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
every batch row. Per thread the ACC holds ``tcb`` × (input window + ``k²`` product regions +
output + ``k²`` weight rows). The ALU path needs no WGT rows, so it runs kernels too large for
the WGT scratchpad and rectangular GEMM cores.

**The choice** (:func:`plan_depthwise`): the fastest of both by their cycle estimates, the
GEMM path's the conv2d planner's (:mod:`.conv_cycles`), the ALU path's
:func:`estimate_alu`.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.costs import ALU_FILL, load_cycles, store_cycles, two_operand_step
from avta.isa.enums import AluOp, MemType, PadValue

from ..packing import pack_diagonal, pack_nchw
from ..stream import StreamBuilder
from ..uop_kernel import UopKernel
from .conv2d import Conv2dBuffers, build_conv2d, tail_steps
from .conv_cycles import estimate
from .conv_plan import Conv2dShape, Conv2dTiling, PlanError, plan_conv2d
from .requant import Requant
from .window import WindowEmitter, WindowShape, WindowTiling, plan_window

__all__ = ["depthwise_conv2d", "build_depthwise_conv2d", "plan_depthwise_conv2d",
           "pack_depthwise_weights", "DepthwisePlan", "plan_depthwise", "estimate_alu",
           "gemm_shape", "build_depthwise_gemm", "PATHS"]

#: The two ways of running a depthwise layer (the module's docstring).
PATHS = ("gemm", "alu")


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


def gemm_shape(shape):
    """The depthwise :class:`~.conv_plan.Conv2dShape` of a :class:`~.window.WindowShape`."""
    return Conv2dShape(shape.n, shape.c, shape.h, shape.w, shape.c, shape.k, shape.k, shape.pad,
                       shape.stride, depthwise=True)


def build_depthwise_gemm(cfg, shape, bufs, *, requant=Requant(), threads=2, tiling=None):
    """The program of one depthwise layer on the GEMM core: INP elements at ``bufs.inp``,
    weights (:func:`~avta.runtime.packing.pack_diagonal`) at WGT element ``bufs.wgt``, OUT
    elements at ``bufs.out`` (:class:`~.conv2d.Conv2dBuffers`, no bias)."""
    return build_conv2d(cfg, gemm_shape(shape), bufs, requant=requant, threads=threads,
                        tiling=tiling)


def estimate_alu(cfg, shape, t, requant=Requant()):
    """Estimated cycles of the ALU path under tiling ``t`` (a :class:`~.window.WindowTiling`),
    from the instruction costs of :mod:`avta.isa.costs`: the LOAD ACC_8BITs and ALU
    instructions of every tile one after another in the compute stage, then the last tile's
    STOREs (the others overlap the next tiles). Windows are counted whole (the border's padding
    as loaded rows), so it errs a little high at the borders."""
    k, s, kk = shape.k, shape.stride, shape.k * shape.k
    two = two_operand_step(cfg)                       # a step reading two ACC operands
    tail = tail_steps(cfg, requant, False) - 1        # the requantization's passes
    cb = shape.c // cfg.block_out
    total = last_store = 0
    for _ in range(shape.n // cfg.batch):
        for cb0 in range(0, cb, t.tcb):
            ncb = min(t.tcb, cb - cb0)
            for oh0 in range(0, shape.oh, t.th):
                th = min(t.th, shape.oh - oh0)
                for ow0 in range(0, shape.ow, t.tw):
                    tw = min(t.tw, shape.ow - ow0)
                    rows = ncb * th * tw
                    loads = (ncb * load_cycles(cfg, (th - 1) * s + k, (tw - 1) * s + k,
                                               cfg.acc8_elem_bytes)
                             + load_cycles(cfg, 1, ncb * kk, cfg.acc8_elem_bytes))
                    alu = ((1 + two) * kk * rows + rows + two * (kk - 1) * rows + tail * rows
                           + (3 + (kk > 1) + tail) * ALU_FILL)
                    total += loads + alu
                    last_store = ncb * store_cycles(cfg, th, tw)
    return total + last_store


@dataclass(frozen=True)
class DepthwisePlan:
    """How one depthwise layer runs: ``path`` (``"gemm"`` or ``"alu"``, :data:`PATHS`) with its
    ``tiling`` (a :class:`~.conv_plan.Conv2dTiling` or a :class:`~.window.WindowTiling`), and
    each path's estimated cycles (``None``: it does not fit, ``why`` says why)."""
    path: str
    tiling: object
    gemm_cycles: int = None
    alu_cycles: int = None
    why: str = ""


def plan_depthwise(cfg, shape, *, requant=Requant(), threads=2, path=None):
    """The faster path of a depthwise :class:`~.window.WindowShape` on ``cfg`` by the cycle
    estimates (the GEMM path on a tie), or ``path`` itself when given; raises
    :class:`~.conv_plan.PlanError` when no path (or not the one asked for) fits."""
    if path is not None and path not in PATHS:
        raise ValueError(f"depthwise path {path!r} is not one of {PATHS}")
    shape.check(cfg)
    tilings, cycles, why = {}, {}, {}
    if path in (None, "gemm"):
        try:
            conv = gemm_shape(shape)
            steps = tail_steps(cfg, requant, False)
            tilings["gemm"] = plan_conv2d(cfg, conv, threads=threads, tail_steps=steps,
                                          start="zero")
            cycles["gemm"] = estimate(cfg, conv, tilings["gemm"], tail_steps=steps,
                                      start="zero")
        except PlanError as error:
            why["gemm"] = str(error)
    if path in (None, "alu"):
        try:
            tilings["alu"] = plan_depthwise_conv2d(cfg, shape, threads=threads)
            cycles["alu"] = estimate_alu(cfg, shape, tilings["alu"], requant)
        except PlanError as error:
            why["alu"] = str(error)
    if not cycles:
        raise PlanError(f"depthwise {shape} fits no path on {cfg.name!r}: "
                        + "; ".join(f"{p}: {w}" for p, w in why.items()))
    best = min(cycles, key=lambda p: (cycles[p], PATHS.index(p)))
    return DepthwisePlan(best, tilings[best], cycles.get("gemm"), cycles.get("alu"),
                         "; ".join(f"{p}: {w}" for p, w in why.items()))


def depthwise_conv2d(device, x, w, *, stride=1, pad=0, requant=Requant(), threads=2,
                     tiling=None, path=None):
    """int8 depthwise convolution of ``x[N, C, H, W]`` with ``w[C, 1, K, K]`` on ``device``, on
    the faster path (:func:`plan_depthwise`), or on ``path``, or as ``tiling`` says (a
    :class:`~.conv_plan.Conv2dTiling` runs on the GEMM core, a :class:`~.window.WindowTiling`
    with the ALU)."""
    cfg = device.cfg
    if w.shape[0] != x.shape[1] or w.shape[1] != 1 or w.shape[2] != w.shape[3]:
        raise ValueError(f"depthwise weights must be [C, 1, K, K] with C = {x.shape[1]}; got "
                         f"{list(w.shape)}")
    shape = WindowShape(*x.shape, w.shape[2], pad, stride)
    shape.check(cfg)
    if isinstance(tiling, Conv2dTiling):
        path = "gemm"
    elif isinstance(tiling, WindowTiling):
        path = "alu"
    else:
        plan = plan_depthwise(cfg, shape, requant=requant, threads=threads, path=path)
        path, tiling = plan.path, plan.tiling
    if path == "gemm":
        return _depthwise_gemm(device, x, w, shape, requant, threads, tiling)
    with device.scratch() as s:
        src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out),
                       mem=MemType.ACC_8BIT)
        wgt = s.upload(pack_depthwise_weights(cfg, w), mem=MemType.ACC_8BIT)
        out = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        device.run(build_depthwise_conv2d(
            cfg, shape, src.elem(cfg, MemType.ACC_8BIT), wgt.elem(cfg, MemType.ACC_8BIT),
            out.elem(cfg, MemType.OUT), requant=requant, threads=threads, tiling=tiling))
        return device.read_nchw(out, shape.n, shape.c, shape.oh, shape.ow)


def _depthwise_gemm(device, x, w, shape, requant, threads, tiling):
    cfg = device.cfg
    with device.scratch() as s:
        inp = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_in),
                       mem=MemType.INP)
        wgt = s.upload(pack_diagonal(w, cfg.block_out), mem=MemType.WGT)
        out = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        bufs = Conv2dBuffers(inp.elem(cfg, MemType.INP), wgt.elem(cfg, MemType.WGT),
                             out.elem(cfg, MemType.OUT))
        device.run(build_depthwise_gemm(cfg, shape, bufs, requant=requant, threads=threads,
                                        tiling=tiling))
        return device.read_nchw(out, shape.n, shape.c, shape.oh, shape.ow)
