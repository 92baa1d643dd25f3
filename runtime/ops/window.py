"""Sliding-window operators that run on the accumulator alone (max pooling, depthwise conv2d).

Their inputs are int8 feature maps in the NCHWnc layout with BLOCK_OUT channels per block, which
is exactly an ACC_8BIT element ``[b][o]`` (docs/isa.md §2): a LOAD ACC_8BIT brings a padded window of
one channel block into ACC rows, sign-extended, and ALU micro-ops combine the rows. Channels are
the lanes, so nothing crosses lanes and no GEMM is needed.

Everything here runs in the compute stage except the STOREs; the only tokens are those of the
output tiles (:class:`~avta.runtime.pipeline.Pipeline`, compute ↔ store).
"""

from dataclasses import dataclass

from avta.isa.enums import MemType, PadValue

from ..pipeline import Pipeline
from ..uop_kernel import Loop
from .conv_plan import MAX_PAD, PlanError, output_extent, tile_sizes

__all__ = ["WindowShape", "WindowTiling", "window_tiling", "plan_window", "WindowEmitter",
           "PlanError"]

#: Cost of one instruction in the tiling score, in bytes moved (as for conv2d).
INSN_COST_BYTES = 256


@dataclass(frozen=True)
class WindowShape:
    """``n × c × h × w`` int8 input, ``k × k`` window, symmetric ``pad`` and ``stride``."""
    n: int
    c: int
    h: int
    w: int
    k: int
    pad: int = 0
    stride: int = 1

    @property
    def oh(self):
        return output_extent(self.h, self.k, self.pad, self.stride)

    @property
    def ow(self):
        return output_extent(self.w, self.k, self.pad, self.stride)

    def check(self, cfg):
        if self.n % cfg.batch or self.c % cfg.block_out:
            raise PlanError(f"n = {self.n} and c = {self.c} must be multiples of BATCH = "
                            f"{cfg.batch} and BLOCK_OUT = {cfg.block_out} on {cfg.name!r}")
        if not 0 <= self.pad < self.k or self.pad > MAX_PAD or self.stride < 1 or self.oh < 1 \
                or self.ow < 1:
            raise PlanError(f"unsupported window {self} (needs 0 <= pad < k, pad <= {MAX_PAD}, "
                            f"stride >= 1, a non-empty output)")


@dataclass(frozen=True)
class WindowTiling:
    """``th × tw`` output pixels of ``tcb`` channel blocks per tile; ``rows`` ACC rows per
    thread (the operator's regions), ``inp_pitch`` rows per channel block of input window."""
    th: int
    tw: int
    tcb: int
    threads: int
    inp_pitch: int
    out_pitch: int


def window_tiling(shape, th, tw, tcb, threads):
    """The :class:`WindowTiling` of these tile sizes (the builder refuses it if it does not
    fit)."""
    s, k = shape.stride, shape.k
    return WindowTiling(th, tw, tcb, threads, ((th - 1) * s + k) * ((tw - 1) * s + k), th * tw)


def plan_window(cfg, shape, *, rows_per_block, uops_per_tile, insns_per_tile, threads=2):
    """The cheapest tiling whose per-thread ACC rows ``rows_per_block(inp_pitch, out_pitch)``
    × tcb fit ``threads`` times in ACC, with loop factors and micro-ops that fit."""
    shape.check(cfg)
    s, k = shape.stride, shape.k
    cb = shape.c // cfg.block_out
    best = None
    for tcb in tile_sizes(cb):
        for tw in tile_sizes(shape.ow):
            for th in tile_sizes(shape.oh):
                th_in, tw_in = (th - 1) * s + k, (tw - 1) * s + k
                t = WindowTiling(th, tw, tcb, threads, th_in * tw_in, th * tw)
                if threads * tcb * rows_per_block(t.inp_pitch, t.out_pitch) > cfg.acc_depth:
                    continue
                # ALU src factors are ACC-wide fields (docs/isa.md §2): s·TW_in per output row.
                if s * tw_in >= 1 << cfg.acc_factor_bits or tw >= 1 << cfg.acc_factor_bits:
                    continue
                if uops_per_tile(tcb) > cfg.uop_depth // 4:
                    continue
                tiles = (shape.n // cfg.batch) * -(-cb // tcb) * -(-shape.oh // th) * \
                    -(-shape.ow // tw)
                cost = tiles * (tcb * t.inp_pitch * cfg.acc8_elem_bytes
                                + insns_per_tile(tcb) * INSN_COST_BYTES)
                if best is None or cost < best[0]:
                    best = (cost, t)
    if best is None:
        raise PlanError(f"no tile of {shape} fits configuration {cfg.name!r}")
    return best[1]


@dataclass(frozen=True)
class Tile:
    nb: int
    cb0: int
    ncb: int
    oh0: int
    th: int
    ow0: int
    tw: int


class WindowEmitter:
    """Tiles, padded window loads, loop kernels and stores shared by the window operators
    (``slots``: output buffers, :class:`~avta.runtime.pipeline.Pipeline`)."""

    def __init__(self, builder, shape, tiling, inp, out, slots=None):
        self.b = builder
        self.cfg = builder.cfg
        self.shape = shape
        self.t = tiling
        self.inp = inp                 # ACC_8BIT element address of the input
        self.out = out                 # OUT element address of the output
        self.cb = shape.c // self.cfg.block_out
        self.pipe = Pipeline(builder, threads=tiling.threads, slots=slots)
        self._pending = []

    def tiles(self):
        sh, t = self.shape, self.t
        for nb in range(sh.n // self.cfg.batch):
            for cb0 in range(0, self.cb, t.tcb):
                for oh0 in range(0, sh.oh, t.th):
                    for ow0 in range(0, sh.ow, t.tw):
                        yield Tile(nb, cb0, min(t.tcb, self.cb - cb0), oh0,
                                   min(t.th, sh.oh - oh0), ow0, min(t.tw, sh.ow - ow0))

    def tw_in(self, tile):
        return (tile.tw - 1) * self.shape.stride + self.shape.k

    def load_window(self, tile, base, pad_value, mem=MemType.ACC_8BIT):
        """LOAD ACC_8BIT (or ``mem``: INP, whose rows are the same int8 elements when
        BLOCK_IN = BLOCK_OUT) of each channel block's input window at ``base + cb·inp_pitch``,
        the convolution's padding done by the LOAD (docs/isa.md §3.1) with ``pad_value``."""
        sh, s = self.shape, self.shape.stride
        ih0, iw0 = tile.oh0 * s - sh.pad, tile.ow0 * s - sh.pad
        th_in, tw_in = (tile.th - 1) * s + sh.k, self.tw_in(tile)
        y0, y1 = max(0, -ih0), max(0, ih0 + th_in - sh.h)
        x0, x1 = max(0, -iw0), max(0, iw0 + tw_in - sh.w)
        for c in range(tile.ncb):
            plane = (tile.nb * self.cb + tile.cb0 + c) * sh.h
            self.b.load(mem, sram=base + c * self.t.inp_pitch,
                        dram=self.inp + (plane + ih0 + y0) * sh.w + iw0 + x0,
                        y_size=th_in - y0 - y1, x_size=tw_in - x0 - x1, x_stride=sh.w,
                        y_pad=(y0, y1), x_pad=(x0, x1), pad_value=PadValue(pad_value))

    def window_loops(self, tile):
        """Loops for micro-ops reading the input window (src) and writing output rows (dst)."""
        s = self.shape.stride
        return (Loop(tile.th, tile.tw, s * self.tw_in(tile)), Loop(tile.tw, 1, s))

    def out_loops(self, tile, src_moves=True):
        """Loops over output rows for dst, and for src too when ``src_moves``."""
        return (Loop(tile.th, tile.tw, tile.tw if src_moves else 0),
                Loop(tile.tw, 1, 1 if src_moves else 0))

    def finish_tile(self, tile, out_base, *, last):
        """End the tile (push C→S) and emit the STOREs of the oldest tiles waiting."""
        self.pipe.end_tile()
        self._pending.append((tile, out_base))
        while self._pending and (len(self._pending) == self.t.threads or last):
            self.store_tile(*self._pending.pop(0))

    def store_tile(self, tile, out_base):
        """STORE the tile's output rows (every ``out_pitch`` ACC rows from ``out_base``), taking
        and returning its accumulator buffer's tokens."""
        self.pipe.begin_store()
        sh = self.shape
        for c in range(tile.ncb):
            first = ((tile.nb * self.cb + tile.cb0 + c) * sh.oh + tile.oh0) * sh.ow + tile.ow0
            self.b.store(sram=out_base + c * self.t.out_pitch, dram=self.out + first,
                         y_size=tile.th, x_size=tile.tw, x_stride=sh.ow)
        self.pipe.end_store()
