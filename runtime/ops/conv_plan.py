"""Shapes and tilings of a conv2d on VTA, and the choice of a tiling that fits a configuration:
the fastest by the cycle estimate of :mod:`avta.runtime.ops.conv_cycles`.

A tile computes ``th × tw`` output pixels of ``tco`` output-channel blocks, summing over ``tci``
input-channel blocks per load task (a layer with more input blocks accumulates over several
tasks). With ``threads`` virtual threads the INP, WGT and ACC scratchpads are split into that many
buffers (:mod:`avta.runtime.pipeline`). When every weight of the layer fits the WGT scratchpad
the weights are loaded once and stay resident instead.

Scratchpad regions (rows):

* INP: per buffer, or — when a slot for every (spatial tile, input chunk) fits — resident in
  slot ``spatial · n_ci + cit`` (loaded once, reused by every output-block tile), ``tci``
  blocks × ``inp_pitch`` rows, ``inp_pitch`` = rows × columns of the
  largest input window ``((th−1)·s + KH) × ((tw−1)·s + KW)``;
* WGT: per buffer ``[co][ci][kh][kw]`` of one ``tco × tci`` chunk, or — when a slot for every
  chunk fits — resident: chunk ``(cot, cit)`` in its own slot ``cot · n_ci + cit`` (each loaded
  by the first task that needs it, so computing starts after one chunk, not all the weights);
* ACC: per buffer ``tco`` blocks × ``acc_pitch`` = ``th·tw`` rows. With several buffers they
  alternate between ACC's banks when they fit there (:data:`avta.isa.memories.BANKS`: the
  compute stage runs one buffer's GEMM beside the other's ALU instructions only on different
  banks), and each bank starts with its own copy of the bias rows ``[0, COB)`` when there is a
  bias, so a buffer's ALU instructions read no other bank; otherwise (and with one buffer) the
  bias rows, then the buffers one after the other. With two threads there may be four
  accumulator buffers (``slots``), two per bank, where the token counters hold four tokens:
  tile ``t + 2`` then starts without waiting for the store of tile ``t``, which can begin only
  after tile ``t``'s last requantization pass — the wait that binds a layer whose passes
  outlast its GEMMs (a 1×1 convolution with one input block). A layer with a residual add
  fused into it (:mod:`avta.runtime.ops.conv_residual`) has each buffer's shortcut rows,
  as many as its accumulators, right after them.
"""

import functools
import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from avta.isa.formats import PAD_BITS
from avta.isa.memories import scratchpad

from .conv_cycles import TAIL_STEPS, estimate, last_splits, lower_bounds, walk_tables
from .conv_fields import field_limits

__all__ = ["Conv2dShape", "Conv2dTiling", "plan_conv2d", "fallback_tiling", "tiling_for",
           "misfits", "slot_counts", "PlanError", "MAX_PAD", "output_extent", "tile_sizes"]

#: The largest padding a LOAD adds on one side (its PAD_BITS-bit pad fields, docs/isa.md §2).
MAX_PAD = (1 << PAD_BITS) - 1


class PlanError(ValueError):
    """No tiling of this layer fits the configuration, or the layer is not supported."""


def output_extent(size, k, pad, stride):
    """Rows (or columns) of a ``k``-wide window's output over ``size`` input rows with ``pad``
    rows of padding on each side, every ``stride``-th position."""
    return (size + 2 * pad - k) // stride + 1


@dataclass(frozen=True)
class Conv2dShape:
    """An NCHW convolution: batch ``n``, channels ``cin → cout``, ``h × w`` input, square
    ``kh × kw`` kernel, symmetric padding ``pad`` and ``stride``. The padding holds
    ``pad_value``: 0, or −128 (the LOAD's ``PadValue.MIN``), which an imported model whose input
    zero point is −128 needs (docs/onnx.md).

    ``depthwise``: each output channel sums its own input channel only (``cin = cout``, weights
    ``[C, 1, KH, KW]``). On the GEMM core a kernel position of one channel block is then a
    diagonal weight block (:func:`~avta.runtime.packing.pack_diagonal`): an output block reads
    the input block of the same channels and nothing else, so a task's input blocks are its
    tile's output blocks (``tci = tco``, one input chunk) and a chunk holds ``tco`` weight blocks
    per kernel position, not ``tco · tci``."""
    n: int
    cin: int
    h: int
    w: int
    cout: int
    kh: int
    kw: int
    pad: int = 0
    stride: int = 1
    pad_value: int = 0
    depthwise: bool = False

    @property
    def oh(self):
        return output_extent(self.h, self.kh, self.pad, self.stride)

    @property
    def ow(self):
        return output_extent(self.w, self.kw, self.pad, self.stride)

    @property
    def subsampled(self):
        """A 1×1 kernel with a stride and no padding (ResNet's downsample layers): its LOADs
        fetch only the pixels the outputs read, one LOAD an output row of one-element DRAM rows
        ``stride`` apart (:mod:`.conv2d`), so its INP window is laid out as a stride-1
        convolution's."""
        return (self.kh == self.kw == 1 and self.stride > 1 and self.pad == 0
                and not self.depthwise)

    @property
    def window_stride(self):
        """The stride between output pixels' windows in INP: 1 when :attr:`subsampled`."""
        return 1 if self.subsampled else self.stride

    @property
    def products(self):
        """int8 products summed into each output value."""
        return (1 if self.depthwise else self.cin) * self.kh * self.kw

    @property
    def macs(self):
        return self.n * self.cout * self.oh * self.ow * self.products

    def gemm_steps(self, cfg):
        """GEMM micro-op steps of the whole layer: one per output row, kernel position and
        weight block (:meth:`kernel_blocks`)."""
        per_step = cfg.batch * cfg.block_out * (1 if self.depthwise else cfg.block_in)
        return self.macs // per_step

    def kernel_blocks(self, nco, nci):
        """Weight blocks per kernel position of a task of ``nco`` output and ``nci`` input
        blocks: every pair, or only the diagonal of a depthwise convolution."""
        return nco if self.depthwise else nco * nci

    def input_chunks(self, cfg, tci):
        """Load tasks per output tile: the input blocks in chunks of ``tci``, or one for a
        depthwise convolution (a tile's input blocks are its output blocks)."""
        return 1 if self.depthwise else -(-(self.cin // cfg.block_in) // tci)

    def check(self, cfg, pad_limit=MAX_PAD):
        """Raise :class:`PlanError` unless the layer maps onto ``cfg``'s blocks."""
        for what, value, block, key, hint in (
                ("batch n", self.n, cfg.batch, "BATCH", "the batch"),
                ("cin", self.cin, cfg.block_in, "BLOCK_IN", "the input channels of the input "
                 "and the weights (conv2d(..., pad_cin=True))"),
                ("cout", self.cout, cfg.block_out, "BLOCK_OUT", "the output channels")):
            if value % block:
                raise PlanError(f"{what} = {value} is not a multiple of {key} = {block} on "
                                f"{cfg.name!r}; pad {hint} with zeros "
                                f"(avta.runtime.packing.pad_channels)")
        if self.depthwise and (self.cin != self.cout or cfg.block_in != cfg.block_out):
            raise PlanError(f"a depthwise convolution on the GEMM core needs cin = cout (got "
                            f"{self.cin}, {self.cout}) and BLOCK_IN = BLOCK_OUT (got "
                            f"{cfg.block_in}, {cfg.block_out} on {cfg.name!r}): its weight "
                            f"blocks are diagonal")
        if not 0 <= self.pad <= pad_limit:
            raise PlanError(f"pad {self.pad} is outside 0..{pad_limit} (the LOAD pad fields)")
        if self.pad >= max(self.kh, self.kw) or self.stride < 1 or self.oh < 1 or self.ow < 1:
            raise PlanError(f"unsupported geometry {self} (needs stride >= 1, pad < kernel, "
                            f"a non-empty output)")


@dataclass(frozen=True)
class Conv2dTiling:
    """Tile sizes (``tco``, ``tci`` in channel blocks) and the resulting scratchpad regions.
    ``inp_resident``: every input window has its own INP slot, loaded once. ``reload_weights``:
    every task loads its weights even when its buffer still holds them (the schedule of TVM's
    fallback, :func:`fallback_tiling`; the planner never chooses it)."""
    th: int
    tw: int
    tco: int
    tci: int
    threads: int
    wgt_resident: bool
    inp_pitch: int
    acc_pitch: int
    bias_rows: int
    reload_weights: bool = False
    inp_resident: bool = False
    acc_banks: int = 1          # ACC banks the buffers alternate between
    acc_bank_rows: int = 0      # rows of one of them
    slots: int = 0              # accumulator buffers (0: one per thread)
    shortcut: bool = False      # each buffer is followed by its tile's shortcut rows
    #: The bias step's operands (:mod:`.bias_digits`) hold the last INP row and the last
    #: COUT/BLOCK_OUT WGT rows, for an accumulator start by the GEMM core (start ``"gemm"``).
    bias_step: bool = False

    def __post_init__(self):
        if not self.slots:
            object.__setattr__(self, "slots", self.threads)

    def inp_base(self, v):
        """First INP row of buffer ``v`` (or, resident, of slot ``v``)."""
        return v * self.tci * self.inp_pitch

    def acc_base(self, v):
        """First ACC row of accumulator buffer ``v`` (0 ≤ v < ``slots``): in bank ``v mod
        acc_banks``, after its bias rows."""
        slot = v // self.acc_banks
        return self.bias_base(v) + self.bias_rows + \
            slot * (1 + self.shortcut) * self.tco * self.acc_pitch

    def shortcut_base(self, v):
        """First ACC row of buffer ``v``'s shortcut rows (a residual add fused into the
        layer, :mod:`avta.runtime.ops.conv_residual`): laid out as its accumulators, right
        after them."""
        return self.acc_base(v) + self.tco * self.acc_pitch

    def bias_base(self, v):
        """First ACC row of the bias copy that buffer ``v``'s ALU instructions read."""
        return (v % self.acc_banks) * self.acc_bank_rows

    def wgt_base(self, v, chunk_rows):
        """First WGT row of buffer ``v`` (weights per task), chunks of ``chunk_rows`` rows."""
        return 0 if self.wgt_resident else v * chunk_rows


def tile_sizes(n):
    """Candidate tile sizes for an axis of ``n``: every distinct ceil(n / k)."""
    return sorted({-(-n // k) for k in range(1, n + 1)})


def _window(t, stride, k):
    return (t - 1) * stride + k


def _resident_rows(cfg, shape, tco, tci):
    """WGT rows of resident weights: one slot of ``tco × tci`` blocks (depthwise: ``tco``)
    per chunk."""
    cob = shape.cout // cfg.block_out
    return (-(-cob // tco) * shape.input_chunks(cfg, tci) * shape.kernel_blocks(tco, tci)
            * shape.kh * shape.kw)


def _acc_banks(cfg, slots, bias_rows, tile_rows):
    """``(banks, rows of each)``: the ACC banks ``slots`` buffers of ``tile_rows`` rows
    alternate between, each bank with its ``bias_rows``. Two buffers go to different banks when
    they fit there (their GEMMs and ALU instructions may then overlap); otherwise all share one
    region, as with one buffer (the compute stage then runs them one after the other).
    Elementwise on arrays of tilings (:func:`_layout`)."""
    pad = scratchpad(cfg, "acc")
    banks = _where(slots < pad.banks, slots, pad.banks)
    split = (banks > 1) & (bias_rows + -(-slots // banks) * tile_rows <= pad.bank_rows)
    return _where(split, banks, 1), _where(split, pad.bank_rows, pad.depth)


def _where(condition, a, b):
    """``numpy.where`` on arrays of candidates; on one tiling's numbers a plain choice (numpy
    on numbers is many times slower, and tests lay out tilings one by one by the thousand)."""
    if isinstance(condition, np.ndarray):
        return np.where(condition, a, b)
    return a if condition else b


def slot_counts(cfg, threads, shortcut=False):
    """The accumulator buffer counts a tiling of ``threads`` threads may have: one per thread,
    and with two threads four (two per ACC bank) where the token counters hold four tokens.
    A layer with a fused residual add (``shortcut``) keeps one per thread: with four its
    shortcut LOADs ran up to 9 % slower on tsim than fsim and the planner's estimate say
    (ResNet-18's layer1 on ``huge``: 40,139 cycles on tsim, 36,584 on fsim; with two buffers
    38,408 and 38,293), which is not traced yet."""
    counts = [threads]
    if shortcut:
        return counts
    if threads > 1 and scratchpad(cfg, "acc").banks > 1 and (1 << cfg.token_bits) - 1 >= \
            2 * threads:
        counts.append(2 * threads)
    return counts


class _Layout(NamedTuple):
    """What a tiling of these tile sizes is on ``cfg``: its scratchpad regions, and the limits
    it breaks as ``(broken, why)`` pairs (``why()``: the sentence :func:`misfits` gives). Each
    value is a number, or an array of one per tiling when the tile sizes are arrays."""
    inp_pitch: object
    acc_pitch: object
    bias_rows: object
    wgt_resident: object
    inp_resident: object
    acc_banks: object
    acc_bank_rows: object
    limits: list


def _layout(cfg, shape, th, tw, tco, tci, threads, bias, slots, shortcut=False,
            bias_step=False):
    """The :class:`_Layout` of tilings of these tile sizes (numbers, or equal-length arrays:
    the planner lays out every candidate at once, elementwise). With ``shortcut`` each
    accumulator buffer has as many shortcut rows after it (a fused residual add); with
    ``bias_step`` the last INP row and the last COUT/BLOCK_OUT WGT rows hold the bias step's
    operands (:attr:`Conv2dTiling.bias_step`)."""
    sizes = (th, tw, tco, tci, slots)
    many = any(isinstance(v, np.ndarray) for v in sizes)
    if many:
        th, tw, tco, tci, slots = (np.asarray(v, dtype=np.int64) for v in sizes)
    s, kk = shape.window_stride, shape.kh * shape.kw
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    th_in, tw_in = _window(th, s, shape.kh), _window(tw, s, shape.kw)
    inp_pitch, acc_pitch = th_in * tw_in, th * tw
    inp_depth = cfg.inp_depth - int(bias_step)
    wgt_depth = cfg.wgt_depth - cob * int(bias_step)
    bias_rows = cob * int(bias)          # bias: row blocks per output block (True: 1)
    chunk_rows = shape.kernel_blocks(tco, tci) * kk
    resident_rows = _resident_rows(cfg, shape, tco, tci)
    resident = resident_rows <= wgt_depth
    wgt_rows = _where(resident, resident_rows, threads * chunk_rows)
    buffer_rows = (1 + int(shortcut)) * tco * acc_pitch
    acc_rows = bias_rows + slots * buffer_rows
    banks, bank_rows = _acc_banks(cfg, slots, bias_rows, buffer_rows)
    counts = slot_counts(cfg, threads, shortcut)
    other_slots = slots != threads
    allowed = np.isin(slots, counts) if many else slots in counts
    uop_share = cfg.uop_depth // (2 * threads + 1)
    windows = (shape.n // cfg.batch) * -(-shape.oh // th) * -(-shape.ow // tw) * -(-cib // tci)
    limits = [
        (shape.depthwise & (tci != tco),
         lambda: f"a depthwise task reads its {tco} output blocks' inputs, not {tci} blocks"),
        (threads * tci * inp_pitch > inp_depth,
         lambda: f"{threads} x {tci} input window(s) of {th_in}x{tw_in} pixels need "
                 f"{threads * tci * inp_pitch} INP rows, the INP scratchpad has "
                 f"{inp_depth}{' beside the bias step' if bias_step else ''}"),
        (wgt_rows > wgt_depth,
         lambda: f"{threads} x {tco * tci} block(s) of a {shape.kh}x{shape.kw} kernel need "
                 f"{wgt_rows} WGT rows, the WGT scratchpad has {wgt_depth}"
                 f"{' beside the bias step' if bias_step else ''}"),
        (acc_rows > cfg.acc_depth,
         lambda: f"{bias_rows} bias rows and {slots} x {tco} output tile(s) of {th}x{tw} "
                 f"pixels{' with their shortcut rows' if shortcut else ''} need {acc_rows} "
                 f"ACC rows, the ACC scratchpad has {cfg.acc_depth}"),
        (other_slots & (~allowed if many else not allowed),
         lambda: f"{slots} accumulator buffers with {threads} thread(s): a tiling has one "
                 f"per thread, or four with two threads where ACC has two banks and the "
                 f"{cfg.token_bits}-bit token counters hold four tokens"
                 f"{' (a layer with a fused add: one per thread)' if shortcut else ''}"),
        (other_slots & allowed & (banks == 1),
         lambda: f"{slots} accumulator buffers of {tco} x {th}x{tw} pixels and {bias_rows} "
                 f"bias rows do not fit two ACC banks: more buffers in one bank gain nothing"),
        # The GEMM kernel (tco·tci·KK micro-ops, depthwise tco·KK) leaves room for the small
        # ALU kernels.
        (chunk_rows > uop_share,
         lambda: f"a GEMM kernel of {chunk_rows} micro-ops exceeds {uop_share}, its share of "
                 f"the {cfg.uop_depth}-row micro-op scratchpad"),
        # Every value the program writes must fit its instruction field (conv_fields).
        *field_limits(cfg, shape, th, tw, tco, tci, th_in, tw_in, bias_rows),
    ]
    # A depthwise tile's window is its own output blocks' (no other tile reads it): no slots.
    inp_resident = (not shape.depthwise) & (windows * tci * inp_pitch <= inp_depth)
    return _Layout(inp_pitch, acc_pitch, bias_rows, resident, inp_resident, banks, bank_rows,
                   limits)


def _misfits(cfg, shape, th, tw, tco, tci, threads, bias, slots=None, shortcut=False):
    """The sentences of :func:`misfits`."""
    slots = threads if slots is None else slots
    for broken, why in _layout(cfg, shape, th, tw, tco, tci, threads, bias, slots,
                               shortcut).limits:
        if broken:
            yield why()


def misfits(cfg, shape, th, tw, tco, tci, threads, *, bias, slots=None, shortcut=False):
    """Why the tiling of these tile sizes does not fit ``cfg``: one sentence per limit it
    breaks (an empty list when it fits)."""
    return list(_misfits(cfg, shape, th, tw, tco, tci, threads, bias, slots, shortcut))


def tiling_for(cfg, shape, th, tw, tco, tci, threads, *, bias, slots=None, shortcut=False,
               bias_step=False):
    """The :class:`Conv2dTiling` of these tile sizes with ``slots`` accumulator buffers
    (default: one per thread), or ``None`` if it does not fit ``cfg`` (:func:`misfits` says
    why)."""
    slots = threads if slots is None else slots
    layout = _layout(cfg, shape, th, tw, tco, tci, threads, bias, slots, shortcut, bias_step)
    if any(broken for broken, _ in layout.limits):
        return None
    return _tiling(layout, None, th, tw, tco, tci, threads, slots, shortcut, bias_step)


def _tiling(layout, k, th, tw, tco, tci, threads, slots, shortcut=False, bias_step=False):
    """The :class:`Conv2dTiling` of a :class:`_Layout` (``k``: the candidate's index in its
    arrays; ``None``: a layout of numbers)."""
    def at(value):
        return int(value if k is None else value[k])
    return Conv2dTiling(int(th), int(tw), int(tco), int(tci), threads,
                        bool(at(layout.wgt_resident)), at(layout.inp_pitch),
                        at(layout.acc_pitch), at(layout.bias_rows),
                        inp_resident=bool(at(layout.inp_resident)),
                        acc_banks=at(layout.acc_banks), acc_bank_rows=at(layout.acc_bank_rows),
                        slots=int(slots), shortcut=bool(shortcut), bias_step=bool(bias_step))


#: Cost of one instruction in the tiling score, in bytes moved: fetching and starting an
#: instruction costs about as much as moving a few hundred bytes.
INSN_COST_BYTES = 256


def _cost(cfg, shape, th, tw, tco, tci, threads, wgt_resident, inp_resident):
    """The tiling score's bytes moved (each instruction :data:`INSN_COST_BYTES`) of tilings of
    these sizes (numbers, or arrays of candidates, elementwise)."""
    s, kk = shape.window_stride, shape.kh * shape.kw
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    nb = shape.n // cfg.batch
    n_h, n_w = -(-shape.oh // th), -(-shape.ow // tw)
    n_co, n_ci = -(-cob // tco), shape.input_chunks(cfg, tci)
    tiles = nb * n_co * n_h * n_w
    tasks = tiles * n_ci
    loads = np.where(inp_resident, tasks // n_co, tasks)        # input windows loaded
    inp_rows = loads * tci * _window(th, s, shape.kh) * _window(tw, s, shape.kw)
    if shape.depthwise:
        wgt_rows = np.where(wgt_resident, cob * kk, tiles * tco * kk)
    else:
        wgt_rows = np.where(wgt_resident, cob * cib * kk,
                            np.where(n_ci == 1, n_co * threads * tco * cib * kk,
                                     tasks * tco * tci * kk))
    inp_loads = tci * (th if shape.subsampled else 1)      # LOADs of a task's window
    insns = tasks * (inp_loads + 3) + tiles * (tco + 6)
    return (inp_rows * cfg.inp_elem_bytes + wgt_rows * cfg.wgt_elem_bytes
            + insns * INSN_COST_BYTES)


def _fitting(cfg, shape, threads, bias, shortcut=False):
    """Every tiling of ``shape`` that fits ``cfg``, in the order of the planner's search."""
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    for slots in slot_counts(cfg, threads, shortcut):
        for tci in tile_sizes(cib):
            for tco in [tci] if shape.depthwise else tile_sizes(cob):
                for tw in tile_sizes(shape.ow):
                    for th in tile_sizes(shape.oh):
                        t = tiling_for(cfg, shape, th, tw, tco, tci, threads, bias=bias,
                                       slots=slots, shortcut=shortcut)
                        if t is not None:
                            yield t


def _fitting_arrays(cfg, shape, threads, bias, shortcut=False, bias_step=False):
    """What :func:`_fitting` lists, at once: ``(th, tw, tco, tci, slots, layout)``, arrays in
    its order and their :class:`_Layout` (one value per tiling in each field)."""
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    grids = []
    for slots in slot_counts(cfg, threads, shortcut):
        for tci in tile_sizes(cib):
            tcos = [tci] if shape.depthwise else tile_sizes(cob)
            tco, tw, th = np.meshgrid(tcos, tile_sizes(shape.ow), tile_sizes(shape.oh),
                                      indexing="ij")
            grids.append(np.stack([th.ravel(), tw.ravel(), tco.ravel(),
                                   np.full(th.size, tci), np.full(th.size, slots)]))
    th, tw, tco, tci, slots = np.concatenate(grids, axis=1)
    layout = _layout(cfg, shape, th, tw, tco, tci, threads, bias, slots, shortcut, bias_step)
    fit = ~np.logical_or.reduce([np.broadcast_to(broken, th.shape)
                                 for broken, _ in layout.limits])
    fields = [np.broadcast_to(value, th.shape)[fit] for value in layout[:-1]]
    return th[fit], tw[fit], tco[fit], tci[fit], slots[fit], _Layout(*fields, limits=None)


def plan_conv2d(cfg, shape, *, threads=2, bias=False, pad_limit=MAX_PAD, tail_steps=TAIL_STEPS,
                start="bias", shortcut=False):
    """The fastest :class:`Conv2dTiling` of ``shape`` on ``cfg`` by the planner's cycle
    estimate (:func:`avta.runtime.ops.conv_cycles.estimate`; ``tail_steps`` the ALU passes per
    output tile, :func:`~avta.runtime.ops.conv_passes.tail_weights`; ``start``: how the
    accumulators start, :data:`~avta.runtime.ops.conv_cycles.STARTS`; with ``"gemm"`` the
    tiling leaves the bias step's rows free, :attr:`Conv2dTiling.bias_step`),
    fewer bytes moved breaking ties; raises :class:`PlanError` when none fits.
    ``bias`` is how many blocks of COUT/BLOCK_OUT rows stay resident in ACC: False (0), True
    (1: the bias) or :data:`~avta.runtime.ops.requant.CHANNEL_ROW_BLOCKS` (the bias and a
    per-channel requantization's rows). ``shortcut``: a residual add is fused into the layer
    (:mod:`avta.runtime.ops.conv_residual`): each accumulator buffer has its shortcut rows
    after it, which the compute stage LOADs once per tile.

    Tilings are estimated in the order of a bound their estimate cannot beat
    (:func:`~avta.runtime.ops.conv_cycles.lower_bound`): the search ends at the first bound
    above the best estimate so far, and an estimate gives up once it passes that best.

    The plan is a pure function of its arguments (the configuration, the shape and the options,
    all immutable), so it is made once per process and remembered: a network's repeated layers
    and a second run on the same device plan nothing again (a :class:`PlanError` is not kept)."""
    shape.check(cfg, pad_limit)
    return _plan(cfg, shape, threads, bias, pad_limit, tail_steps, start, bool(shortcut))


#: Candidates whose walk tables the planner makes at once (in the order it estimates them: the
#: search usually stops within the first few hundred).
_TABLES_AT_ONCE = 256

#: Plans remembered per process: far more than a network has distinct layers.
PLANS_KEPT = 1024


@functools.lru_cache(maxsize=PLANS_KEPT)
def _plan(cfg, shape, threads, bias, pad_limit, tail_steps, start, shortcut):
    # Every candidate's bound and score at once (numpy); a tiling is made only for those
    # estimated, in the order (bound, score, the search's order).
    bias_step = start == "gemm"
    th, tw, tco, tci, slots, layout = _fitting_arrays(cfg, shape, threads, bias, shortcut,
                                                      bias_step)
    bounds = lower_bounds(cfg, shape, th, tw, tco, tci, threads, layout.acc_banks,
                          layout.inp_resident, layout.bias_rows, tail_steps=tail_steps,
                          start=start)
    splits = last_splits(cfg, shape, th, tw, threads, layout.acc_banks,
                         layout.inp_resident, tail_steps)
    scores = _cost(cfg, shape, th, tw, tco, tci, threads, layout.wgt_resident,
                   layout.inp_resident)
    order = np.lexsort((np.arange(th.size), scores, bounds))
    best = None
    for chunk in range(0, order.size, _TABLES_AT_ONCE):
        ks = order[chunk:chunk + _TABLES_AT_ONCE]
        tables = walk_tables(cfg, shape, th[ks], tw[ks], tco[ks], tci[ks],
                             np.broadcast_to(layout.acc_pitch, th.shape)[ks], splits[ks],
                             shortcut=shortcut)
        for row, k in enumerate(ks.tolist()):
            bound, cost = int(bounds[k]), int(scores[k])
            if best is not None and bound > best[0]:
                break
            t = _tiling(layout, k, th[k], tw[k], tco[k], tci[k], threads, slots[k], shortcut,
                        bias_step)
            cycles = estimate(cfg, shape, t, tail_steps=tail_steps, start=start,
                              give_up=None if best is None else best[0],
                              tables=[column[row] for column in tables])
            if cycles is not None and (best is None or (cycles, cost) < best[:2]):
                best = (cycles, cost, t)
        else:
            continue
        break
    if best is None:
        why = "; ".join(misfits(cfg, shape, 1, 1, 1, 1, threads, bias=bias, shortcut=shortcut))
        hint = ""
        if threads > 1 and not misfits(cfg, shape, 1, 1, 1, 1, 1, bias=bias, shortcut=shortcut):
            hint = " (with threads=1 it would fit)"
        raise PlanError(f"no tiling of {shape} fits configuration {cfg.name!r} with {threads} "
                        f"thread(s): even a 1x1 tile of one channel block is too large — {why}"
                        f"{hint}; run this layer on the host")
    return best[2]


def fallback_tiling(cfg, shape, *, threads=2, bias=False):
    """The schedule TVM's fallback configuration gives a conv2d on VTA, for comparisons with
    the planner (``avta bench tps``): every axis split to 1 — 1×1-pixel tiles of one output and
    one input channel block — and the weights of every task loaded for that task (TVM's
    schedule keeps no weights across output tiles). ``None`` if even that does not fit."""
    t = tiling_for(cfg, shape, 1, 1, 1, 1, threads, bias=bias)
    return None if t is None else replace(t, wgt_resident=False, reload_weights=True,
                                          inp_resident=False)


def describe(cfg, shape, t):
    """One line for reports."""
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    return (f"tile {t.th}x{t.tw} px, {t.tco}/{cob} out blocks, {t.tci}/{cib} in blocks, "
            f"{t.threads} thread(s), {t.slots} accumulator buffer(s), weights {'resident' if t.wgt_resident else 'per task'}"
            f"{', inputs resident' if t.inp_resident else ''}; "
            f"{math.ceil(shape.oh / t.th) * math.ceil(shape.ow / t.tw)} spatial tiles")
