"""conv2d in VTA's packed layout: LOAD INP/WGT tiles, GEMM, requantize, STORE (upstream §6.2).

Layouts in DRAM (:mod:`avta.runtime.packing`): input ``(N/B, CIN/BI, H, W, B, BI)`` int8 as INP
elements, weights ``(COUT/BO, CIN/BI, KH, KW, BO, BI)`` as WGT elements, output ``(N/B, COUT/BO,
OH, OW, B, BO)`` int8 as OUT elements, bias ``(COUT/BO, B, BO)`` int32 as ACC elements.

One GEMM per load task runs a kernel whose micro-ops enumerate (input block, kh, kw, output
block) and whose two loops walk the output rows and columns of the tile; the zero padding of
the convolution is the LOAD's padding (docs/isa.md §3.1), so every tile, border or not, uses the same
scratchpad layout. Tiles are described in :mod:`avta.runtime.ops.conv_plan`.

With a bias whose bound is known and small enough (:meth:`Requant.bias_starts_acc`), the resident
bias rows are shifted left once per layer and each tile's accumulators start as a copy of them
(ALU MOV, II = 1) instead of a reset GEMM and an ADD after the shift (II = 2 on one ACC read port).
Without a bias they start as an ALU MOV of the immediate 0 (once an earlier tile has written the
buffer's rows: the MOV reads them). Either MOV of the next tile runs beside the last GEMM part
of this one, which a reset GEMM could not.

Where one GEMM step holds the start value (:mod:`.bias_digits`) and the caller gives the bias
step's operands (:func:`pack_bias_step`), the GEMM core may start them instead: a reset GEMM and
one GEMM step of the constant INP row against the digit WGT blocks, each beside a pass of the
tile before, one ALU pass a row fewer; :func:`~.conv_tail.plan_layer` takes it where the
planner's estimate says it is faster (the tiling's ``bias_step``).

With a residual add fused into the layer (``fused``, :mod:`avta.runtime.ops.conv_residual`)
each tile's shortcut rows are LOADed (ACC_8BIT, compute stage) after its last GEMM, and its
tail goes on to ADD them and requantize as the add does.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.enums import MemType

from ..build_cache import cached_program
from ..packing import pack_nchw, pack_oihw, pad_channels
from ..stream import StreamBuilder
from .bias_digits import bias_digits, constant_row, one_step_bound
from .conv_emit import PAD_VALUES, Conv2dEmitter
from .conv_plan import Conv2dShape
from .conv_tail import (accumulator_start, pass_cycles, plan_layer, plan_options, row_blocks,
                        tail_steps, tail_weights)
from .requant import Requant

__all__ = ["Conv2dBuffers", "accumulator_start", "bias_bound", "build_conv2d", "conv2d",
           "pack_bias", "pack_bias_step", "upload_bias_step", "pass_cycles", "plan_layer", "plan_options", "row_blocks", "tail_steps",
           "tail_weights"]


@dataclass(frozen=True)
class Conv2dBuffers:
    """DRAM element addresses (``dram_base`` units of each memory type) of the operands;
    ``shortcut``: a fused residual add's other operand (ACC_8BIT elements, the output's
    layout); ``step_inp`` and ``step_wgt``: the bias step's constant INP row and digit WGT
    blocks (:func:`pack_bias_step`), which let the GEMM core start the accumulators."""
    inp: int
    wgt: int
    out: int
    bias: int = None
    shortcut: int = None
    step_inp: int = None
    step_wgt: int = None


def build_conv2d(cfg, shape, bufs, *, requant=Requant(), threads=2, tiling=None,
                 bias_bound=None, fused=None):
    """The :class:`~avta.runtime.program.Program` of one conv2d layer. ``bias_bound``, the
    largest magnitude of the bias values, lets the accumulators start at the shifted bias when
    that is exact (:meth:`Requant.bias_starts_acc`); ``None`` adds the bias after the shift.
    ``fused``: a residual add fused into the layer (:class:`~.conv_residual.FusedAdd`; its
    other operand at ``bufs.shortcut``). Built once across processes
    (:mod:`avta.runtime.build_cache`): the program of the same layer at other DRAM addresses
    is read back and placed at ``bufs``."""
    args = {"shape": shape, "requant": requant, "threads": threads, "tiling": tiling,
            "bias_bound": bias_bound, "fused": fused}
    return cached_program(
        "conv2d", lambda: _build_conv2d(cfg, shape, bufs, requant=requant, threads=threads,
                                        tiling=tiling, bias_bound=bias_bound, fused=fused),
        cfg, args, _OPERANDS, vars(bufs))


#: Which operand of :class:`Conv2dBuffers` each memory type's LOADs (OUT: STOREs) address.
_OPERANDS = {MemType.INP: ("inp", "step_inp"), MemType.WGT: ("wgt", "step_wgt"),
             MemType.ACC: "bias", MemType.OUT: "out", MemType.ACC_8BIT: "shortcut"}


def _build_conv2d(cfg, shape, bufs, *, requant, threads, tiling, bias_bound, fused):
    if shape.pad_value not in PAD_VALUES:
        raise ValueError(f"conv2d pads with {sorted(PAD_VALUES)}, not {shape.pad_value}")
    if requant.per_channel and bufs.bias is None:
        raise ValueError("a per-channel requantization needs the bias rows, with its channel "
                         "rows after them (pack_bias(cfg, bias, requant))")
    if (fused is None) != (bufs.shortcut is None):
        raise ValueError("a fused residual add needs its shortcut operand (Conv2dBuffers."
                         "shortcut), and a shortcut its add (fused)")
    if (bufs.step_inp is None) != (bufs.step_wgt is None):
        raise ValueError("the bias step needs both its INP row and its WGT blocks "
                         "(pack_bias_step)")
    if tiling is None:
        tiling = plan_layer(cfg, shape, requant=requant, has_bias=bufs.bias is not None,
                            bias_bound=bias_bound, threads=threads, fused=fused,
                            bias_step=bufs.step_inp is not None)
    if tiling.bias_step and bufs.step_inp is None:
        raise ValueError("the tiling starts the accumulators by the GEMM core: the layer needs "
                         "the bias step's operands (Conv2dBuffers.step_inp, step_wgt; "
                         "pack_bias_step)")
    if tiling.shortcut != (fused is not None):
        raise ValueError(f"the tiling {'has' if tiling.shortcut else 'lacks'} shortcut rows, "
                         f"the layer {'lacks' if fused is None else 'has'} a fused add")
    builder = StreamBuilder(cfg)
    Conv2dEmitter(builder, shape, tiling, bufs, requant, bias_bound, fused).emit()
    return builder.finish()


def pack_bias(cfg, bias, requant=None):
    """``bias[COUT]`` int32 as ACC elements ``(COUT/BO, BATCH, BO)``, the same for every batch
    row; with a per-channel ``requant``, its multipliers, offsets and shifts follow as three
    more blocks of rows (:meth:`Requant.channel_rows`), loaded with the bias in one LOAD."""
    rows = [np.asarray(bias, dtype=np.int32)]
    if requant is not None and requant.per_channel:
        rows += list(requant.channel_rows(rows[0].size, cfg.scale_bits or None))
    blocks = [np.asarray(r, np.int32).reshape(-1, 1, cfg.block_out) for r in rows]
    return np.ascontiguousarray(np.concatenate(
        [np.broadcast_to(b, (b.shape[0], cfg.batch, cfg.block_out)) for b in blocks]))


def pack_bias_step(cfg, bias, requant):
    """The bias step's operands (:mod:`.bias_digits`) of ``bias[COUT]`` int32, or ``None`` when
    one GEMM step cannot hold the start value (the bias shifted left by
    :attr:`Requant.bias_shift`): ``(row, blocks)``, the constant INP row as one INP element
    ``(1, BATCH, BLOCK_IN)`` int8 (every batch row alike) and the digits as WGT elements
    ``(COUT/BO, BO, BLOCK_IN)`` int8."""
    start = np.asarray(bias, np.int64) << requant.bias_shift
    if requant.on_host or int(np.abs(start).max(initial=0)) > one_step_bound(cfg.block_in):
        return None
    row = np.broadcast_to(constant_row(cfg.block_in), (1, cfg.batch, cfg.block_in))
    blocks = bias_digits(start, cfg.block_in).reshape(-1, cfg.block_out, cfg.block_in)
    return np.ascontiguousarray(row), blocks


def upload_bias_step(upload, cfg, bias, requant):
    """The bias step's operands (:func:`pack_bias_step`) uploaded by ``upload(array, mem=…)``
    (a device's or a scratch's), as :class:`Conv2dBuffers` keywords; none (``{}``) when one
    GEMM step cannot hold the bias."""
    step = pack_bias_step(cfg, bias, requant)
    if step is None:
        return {}
    return {"step_inp": upload(step[0], mem=MemType.INP).elem(cfg, MemType.INP),
            "step_wgt": upload(step[1], mem=MemType.WGT).elem(cfg, MemType.WGT)}


def bias_bound(bias):
    """The largest magnitude of ``bias`` values (``None`` for no bias), for
    :func:`build_conv2d`."""
    return None if bias is None else int(np.abs(np.asarray(bias, dtype=np.int64)).max(initial=0))


def conv2d(device, x, w, bias=None, *, stride=1, pad=0, requant=Requant(), threads=2,
           tiling=None, pad_cin=False):
    """Run ``x[N, CIN, H, W] ⊛ w[COUT, CIN, KH, KW]`` (int8) on ``device``; the int8 output
    ``[N, COUT, OH, OW]`` after :class:`Requant` (with int32 ``bias[COUT]`` added after the
    shift). The program and RunResult are in ``device.last_program``/``last_result``.

    With ``pad_cin`` an input whose CIN is not a multiple of BLOCK_IN — a network's stem, 3
    RGB channels — gets zero channels, and the weights zero input channels, up to one
    (:func:`~avta.runtime.packing.pad_channels`); the outputs are the same. Without it such a
    layer raises :class:`~avta.runtime.ops.conv_plan.PlanError`."""
    cfg = device.cfg
    if pad_cin and w.shape[1] == x.shape[1]:
        x, w = pad_channels(x, cfg.block_in), pad_channels(w, cfg.block_in)
    shape = Conv2dShape(x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2],
                        w.shape[3], pad, stride)
    if w.shape[1] != shape.cin:
        raise ValueError(f"weights have {w.shape[1]} input channels, the input has {shape.cin}")
    shape.check(cfg)
    with device.scratch() as s:
        inp = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_in),
                       mem=MemType.INP)
        wgt = s.upload(pack_oihw(np.asarray(w, np.int8), cfg.block_out, cfg.block_in),
                       mem=MemType.WGT)
        out = s.alloc(shape.n * shape.cout * shape.oh * shape.ow, mem=MemType.OUT)
        if bias is None and requant.per_channel:
            bias = np.zeros(w.shape[0], np.int32)
        acc = None if bias is None else s.upload(pack_bias(cfg, bias, requant),
                                                 mem=MemType.ACC)
        step = {} if bias is None else upload_bias_step(s.upload, cfg, bias, requant)
        bufs = Conv2dBuffers(inp.elem(cfg, MemType.INP), wgt.elem(cfg, MemType.WGT),
                             out.elem(cfg, MemType.OUT),
                             None if acc is None else acc.elem(cfg, MemType.ACC), **step)
        device.run(build_conv2d(cfg, shape, bufs, requant=requant, threads=threads,
                                tiling=tiling, bias_bound=bias_bound(bias)))
        return device.read_nchw(out, shape.n, shape.cout, shape.oh, shape.ow)
