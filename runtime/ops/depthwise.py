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

**What an imported model needs** (docs/onnx.md): a bias added before the shift (the zero-point
terms, ``requant.bias_first``), a per-channel requantization's rows after it
(:func:`~.conv2d.pack_bias`), and padding that holds −128 (an input whose zero point is −128).
The GEMM path has them as conv2d does (rows resident per layer, the LOAD's INP pad value MIN).
The ALU path loads the rows per tile beside its weight rows, and pads its ACC_8BIT windows with
MIN, which is −2^31 there: a MAX with −128 over a padded window makes it the int8 −128 that MUL
reads (docs/isa.md §3.1, §3.4).

**The choice** (:func:`plan_depthwise`): the fastest of both by their cycle estimates, the
GEMM path's the conv2d planner's (:mod:`.conv_cycles`), the ALU path's
:func:`estimate_alu`.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.costs import ALU_FILL, fetch_ring_wait, load_cycles, store_cycles, two_operand_step
from avta.isa.enums import AluOp, MemType, PadValue

from ..packing import pack_diagonal, pack_nchw
from ..stream import StreamBuilder
from ..uop_kernel import Loop, UopKernel
from .conv2d import Conv2dBuffers, bias_bound, build_conv2d, pack_bias
from .conv_tail import plan_options, row_blocks, tail_steps
from .conv_cycles import estimate
from .conv_plan import Conv2dShape, Conv2dTiling, PlanError, plan_conv2d
from .requant import Requant
from .window import WindowEmitter, WindowShape, WindowTiling, plan_window

__all__ = ["depthwise_conv2d", "build_depthwise_conv2d", "plan_depthwise_conv2d",
           "pack_depthwise_weights", "DepthwisePlan", "plan_depthwise", "estimate_alu",
           "gemm_shape", "build_depthwise_gemm", "PATHS"]

#: The two ways of running a depthwise layer (the module's docstring).
PATHS = ("gemm", "alu")


def plan_depthwise_conv2d(cfg, shape, *, threads=2, extra_rows=0):
    """The ALU path's tiling; ``extra_rows`` ACC rows per channel block for the bias and a
    per-channel requantization's rows (:func:`~.conv2d.row_blocks`), loaded per tile."""
    kk = shape.k * shape.k
    return plan_window(cfg, shape,
                       rows_per_block=lambda inp, out: inp + (kk + 1) * out + kk + extra_rows,
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
                           tiling=None, pad_value=0, bias=None):
    """The program of one depthwise layer: ACC_8BIT input at ``inp`` (its padding holding
    ``pad_value``, 0 or −128), weights at ``wgt`` (:func:`pack_depthwise_weights`), OUT elements
    at ``out``; ``bias``: the ACC element address of the bias rows (:func:`~.conv2d.pack_bias`,
    a per-channel requantization's rows after them), added before the requantization's shift
    (``requant.bias_first``), or ``None``."""
    blocks = row_blocks(requant) if bias is not None else 0
    if requant.per_channel and bias is None:
        raise ValueError("a per-channel requantization reads its rows after the bias rows "
                         "(pack_bias(cfg, bias, requant))")
    if bias is not None and not requant.bias_first:
        raise ValueError("a depthwise layer adds its bias before the shift (bias_first)")
    if tiling is None:
        tiling = plan_depthwise_conv2d(cfg, shape, threads=threads, extra_rows=blocks)
    b = StreamBuilder(cfg)
    em = WindowEmitter(b, shape, tiling, inp, out)
    t, k = tiling, shape.k
    kk = k * k
    cb = shape.c // cfg.block_out
    per_block = t.inp_pitch + (kk + 1) * t.out_pitch + kk + blocks
    tiles = list(em.tiles())
    for i, tile in enumerate(tiles):
        base = em.pipe.begin_tile() * t.tcb * per_block
        prod = base + t.tcb * t.inp_pitch                  # [c][kh·k + kw] product regions
        acc = prod + t.tcb * kk * t.out_pitch               # [c] output rows
        wrow = acc + t.tcb * t.out_pitch                    # [c][kh·k + kw] weight rows
        rows = wrow + t.tcb * kk                            # [block][c] bias, channel rows
        em.load_window(tile, base, PadValue.MIN if pad_value else PadValue.ZERO)
        if pad_value and _padded(shape, tile):
            # An ACC_8BIT LOAD pads with −2^31 for MIN (docs/isa.md §3.1), whose low 8 bits
            # MUL would read as 0: MAX with −128 makes it −128 and leaves every int8 as it is.
            th_in, tw_in = (tile.th - 1) * shape.stride + k, em.tw_in(tile)
            b.alu(UopKernel([(base + c * t.inp_pitch,) * 2 for c in range(tile.ncb)],
                            (Loop(th_in, tw_in, tw_in), Loop(tw_in, 1, 1))), AluOp.MAX,
                  imm=-128)
        b.load(MemType.ACC_8BIT, sram=wrow, dram=wgt + tile.cb0 * kk, x_size=tile.ncb * kk)
        if blocks:
            b.load(MemType.ACC, sram=rows, dram=bias + tile.cb0, y_size=blocks,
                   x_size=tile.ncb, x_stride=cb)
        tw_in = em.tw_in(tile)
        chans = range(tile.ncb)

        def region(c, p):
            return prod + (c * kk + p) * t.out_pitch

        def row_block(block):
            return UopKernel([(acc + c * t.out_pitch, rows + block * tile.ncb + c)
                              for c in chans], em.out_loops(tile, src_moves=False))

        b.alu(UopKernel([(region(c, kh * k + kw), base + c * t.inp_pitch + kh * tw_in + kw)
                         for kh in range(k) for kw in range(k) for c in chans],
                        em.window_loops(tile)), AluOp.MOV)
        b.alu(UopKernel([(region(c, p), wrow + c * kk + p) for p in range(kk) for c in chans],
                        em.out_loops(tile, src_moves=False)), AluOp.MUL)
        b.alu(UopKernel([(acc + c * t.out_pitch, region(c, 0)) for c in chans],
                        em.out_loops(tile)), AluOp.MOV)
        if kk > 1:
            b.alu(UopKernel([(acc + c * t.out_pitch, region(c, p)) for p in range(1, kk)
                             for c in chans], em.out_loops(tile)), AluOp.ADD)
        same = UopKernel([(acc + c * t.out_pitch,) * 2 for c in chans], em.out_loops(tile))
        requant.emit(b, same, row_block(0) if blocks else None,
                     lambda block: row_block(1 + block))
        em.finish_tile(tile, acc, last=i == len(tiles) - 1)
    return b.finish()


def _padded(shape, tile):
    """Whether ``tile``'s input window reaches into the padding."""
    s = shape.stride
    ih0, iw0 = tile.oh0 * s - shape.pad, tile.ow0 * s - shape.pad
    return (ih0 < 0 or iw0 < 0 or ih0 + (tile.th - 1) * s + shape.k > shape.h
            or iw0 + (tile.tw - 1) * s + shape.k > shape.w)


def gemm_shape(shape, pad_value=0):
    """The depthwise :class:`~.conv_plan.Conv2dShape` of a :class:`~.window.WindowShape` whose
    padding holds ``pad_value``."""
    return Conv2dShape(shape.n, shape.c, shape.h, shape.w, shape.c, shape.k, shape.k, shape.pad,
                       shape.stride, pad_value, depthwise=True)


def build_depthwise_gemm(cfg, shape, bufs, *, requant=Requant(), threads=2, tiling=None,
                         pad_value=0, bias_bound=None):
    """The program of one depthwise layer on the GEMM core: INP elements at ``bufs.inp`` (the
    padding holding ``pad_value``), weights (:func:`~avta.runtime.packing.pack_diagonal`) at
    WGT element ``bufs.wgt``, OUT elements at ``bufs.out``, the bias rows (if any) at
    ``bufs.bias`` (:class:`~.conv2d.Conv2dBuffers`), of magnitude at most ``bias_bound``."""
    return build_conv2d(cfg, gemm_shape(shape, pad_value), bufs, requant=requant,
                        threads=threads, tiling=tiling, bias_bound=bias_bound)


def estimate_alu(cfg, shape, t, requant=Requant(), has_bias=False, pad_value=0):
    """Estimated cycles of the ALU path under tiling ``t`` (a :class:`~.window.WindowTiling`),
    from the instruction costs of :mod:`avta.isa.costs`: the LOAD ACC_8BITs and ALU
    instructions of every tile one after another in the compute stage, then the last tile's
    STOREs (the others overlap the next tiles), after fetch's first ring on the read engine
    (:func:`avta.isa.costs.fetch_ring_wait`, as the GEMM path's estimate counts it). Windows
    are counted whole (the border's padding as loaded rows), so it errs a little high at the
    borders."""
    k, s, kk = shape.k, shape.stride, shape.k * shape.k
    two = two_operand_step(cfg)                       # a step reading two ACC operands
    # the requantization's passes (bias ADD): a micro-op per channel block, so a two-operand
    # pass reads its row at every step
    tail = tail_steps(cfg, requant, has_bias, held_rows=False) - 1
    blocks = row_blocks(requant) if has_bias else 0
    cb = shape.c // cfg.block_out
    total, last_store = fetch_ring_wait(cfg), 0
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
                             + load_cycles(cfg, 1, ncb * kk, cfg.acc8_elem_bytes)
                             + (load_cycles(cfg, blocks, ncb, cfg.acc_elem_bytes)
                                if blocks else 0))
                    alu = ((1 + two) * kk * rows + rows + two * (kk - 1) * rows + tail * rows
                           + (3 + (kk > 1) + tail) * ALU_FILL)
                    if pad_value and shape.pad:       # MAX −128 over the padded windows
                        alu += ncb * ((th - 1) * s + k) * ((tw - 1) * s + k) + ALU_FILL
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


def plan_depthwise(cfg, shape, *, requant=Requant(), threads=2, path=None, pad_value=0,
                   has_bias=False, bias_bound=None):
    """The faster path of a depthwise :class:`~.window.WindowShape` on ``cfg`` by the cycle
    estimates (the GEMM path on a tie), or ``path`` itself when given; raises
    :class:`~.conv_plan.PlanError` when no path (or not the one asked for) fits. ``has_bias``:
    the layer has bias rows (and a per-channel requantization's rows after them), of magnitude
    at most ``bias_bound``; ``pad_value``: what its padding holds."""
    if path is not None and path not in PATHS:
        raise ValueError(f"depthwise path {path!r} is not one of {PATHS}")
    shape.check(cfg)
    has_bias = has_bias or requant.per_channel
    tilings, cycles, why = {}, {}, {}
    if path in (None, "gemm"):
        try:
            conv = gemm_shape(shape, pad_value)
            options = plan_options(cfg, conv, requant, has_bias, bias_bound)
            tilings["gemm"] = plan_conv2d(cfg, conv, threads=threads, **options)
            del options["bias"]
            cycles["gemm"] = estimate(cfg, conv, tilings["gemm"], **options)
        except PlanError as error:
            why["gemm"] = str(error)
    if path in (None, "alu"):
        try:
            tilings["alu"] = plan_depthwise_conv2d(
                cfg, shape, threads=threads,
                extra_rows=row_blocks(requant) if has_bias else 0)
            cycles["alu"] = estimate_alu(cfg, shape, tilings["alu"], requant, has_bias,
                                         pad_value)
        except PlanError as error:
            why["alu"] = str(error)
    if not cycles:
        raise PlanError(f"depthwise {shape} fits no path on {cfg.name!r}: "
                        + "; ".join(f"{p}: {w}" for p, w in why.items()))
    best = min(cycles, key=lambda p: (cycles[p], PATHS.index(p)))
    return DepthwisePlan(best, tilings[best], cycles.get("gemm"), cycles.get("alu"),
                         "; ".join(f"{p}: {w}" for p, w in why.items()))


def depthwise_conv2d(device, x, w, bias=None, *, stride=1, pad=0, pad_value=0,
                     requant=Requant(), threads=2, tiling=None, path=None):
    """int8 depthwise convolution of ``x[N, C, H, W]`` with ``w[C, 1, K, K]`` on ``device`` (the
    padding holding ``pad_value``, 0 or −128; an int32 ``bias[C]`` added before the shift), on
    the faster path (:func:`plan_depthwise`), or on ``path``, or as ``tiling`` says (a
    :class:`~.conv_plan.Conv2dTiling` runs on the GEMM core, a :class:`~.window.WindowTiling`
    with the ALU)."""
    cfg = device.cfg
    if w.shape[0] != x.shape[1] or w.shape[1] != 1 or w.shape[2] != w.shape[3]:
        raise ValueError(f"depthwise weights must be [C, 1, K, K] with C = {x.shape[1]}; got "
                         f"{list(w.shape)}")
    if pad_value not in (0, -128):
        raise ValueError(f"the padding holds 0 or -128 (the LOAD's pad values), not "
                         f"{pad_value}")
    shape = WindowShape(*x.shape, w.shape[2], pad, stride)
    shape.check(cfg)
    if bias is None and requant.per_channel:
        bias = np.zeros(shape.c, np.int32)
    if isinstance(tiling, Conv2dTiling):
        path = "gemm"
    elif isinstance(tiling, WindowTiling):
        path = "alu"
    else:
        plan = plan_depthwise(cfg, shape, requant=requant, threads=threads, path=path,
                              pad_value=pad_value, has_bias=bias is not None,
                              bias_bound=bias_bound(bias))
        path, tiling = plan.path, plan.tiling
    with device.scratch() as s:
        rows = None if bias is None else s.upload(pack_bias(cfg, bias, requant),
                                                  mem=MemType.ACC)
        rows = None if rows is None else rows.elem(cfg, MemType.ACC)
        out = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        if path == "gemm":
            inp = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_in),
                           mem=MemType.INP)
            wgt = s.upload(pack_diagonal(w, cfg.block_out), mem=MemType.WGT)
            bufs = Conv2dBuffers(inp.elem(cfg, MemType.INP), wgt.elem(cfg, MemType.WGT),
                                 out.elem(cfg, MemType.OUT), rows)
            device.run(build_depthwise_gemm(cfg, shape, bufs, requant=requant,
                                            threads=threads, tiling=tiling,
                                            pad_value=pad_value, bias_bound=bias_bound(bias)))
        else:
            src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out),
                           mem=MemType.ACC_8BIT)
            wgt = s.upload(pack_depthwise_weights(cfg, w), mem=MemType.ACC_8BIT)
            device.run(build_depthwise_conv2d(
                cfg, shape, src.elem(cfg, MemType.ACC_8BIT), wgt.elem(cfg, MemType.ACC_8BIT),
                out.elem(cfg, MemType.OUT), requant=requant, threads=threads, tiling=tiling,
                pad_value=pad_value, bias=rows))
        return device.read_nchw(out, shape.n, shape.c, shape.oh, shape.ow)
