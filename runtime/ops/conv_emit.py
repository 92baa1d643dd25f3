"""How one conv2d layer becomes instructions: :class:`Conv2dEmitter` walks the tiles of a
:class:`~avta.runtime.ops.conv_plan.Conv2dTiling` and emits each one's loads, GEMMs, requantizing
tail and store onto a :class:`~avta.runtime.stream.StreamBuilder`, through the threads of a
:class:`~avta.runtime.pipeline.Pipeline`.

The layouts, the bias start and the fused residual add it implements are described in
:mod:`avta.runtime.ops.conv2d`, which builds and runs the layer; this module only emits it.
"""

from dataclasses import dataclass, replace

from avta.isa.costs import gemm_fill
from avta.isa.enums import AluOp, MemType, PadValue

from ..pipeline import Pipeline
from ..uop_kernel import ITER_BITS, Loop, UopKernel
from .conv_cycles import last_split, task_pieces, tiling_load_window
from .conv_passes import passes_beside, split_parts
from .conv_residual import emit_fused_tail, load_shortcut
from .conv_tail import AluRecorder, kernel_cycles, pass_cycles, plan_options, row_blocks

__all__ = ["PAD_VALUES", "Conv2dEmitter"]


#: What the padding of a convolution may hold, and the LOAD pad value that makes it.
PAD_VALUES = {0: PadValue.ZERO, -128: PadValue.MIN}


@dataclass(frozen=True)
class _Tile:
    nb: int
    cot: int          # output-block tile index
    oh0: int
    th: int
    ow0: int
    tw: int
    #: A part of a split last tile whose input window is resident (conv_cycles.split_axis):
    #: its first output row within the whole tile, and the whole tile's rows (0: the tile is
    #: whole), whose window both parts read from the one resident slot.
    row0: int = 0
    whole_th: int = 0

    @property
    def window_oh0(self):
        """The first output row of the tile whose input window this one reads."""
        return self.oh0 - self.row0

    @property
    def window_th(self):
        """The output rows of the tile whose input window this one reads."""
        return self.whole_th or self.th


def _tiles(cfg, shape, t):
    cob = shape.cout // cfg.block_out
    for nb in range(shape.n // cfg.batch):
        for cot in range(-(-cob // t.tco)):
            for oh0 in range(0, shape.oh, t.th):
                for ow0 in range(0, shape.ow, t.tw):
                    yield _Tile(nb, cot, oh0, min(t.th, shape.oh - oh0), ow0,
                                min(t.tw, shape.ow - ow0))


class Conv2dEmitter:
    """Emits one conv2d onto a :class:`StreamBuilder`."""

    def __init__(self, builder, shape, tiling, bufs, requant, bias_bound=None, fused=None):
        self.b = builder
        self.cfg = builder.cfg
        self.shape = shape
        self.t = tiling
        self.bufs = bufs
        self.requant = requant
        self.bias_bound = bias_bound
        #: The residual add fused into the layer (:mod:`.conv_residual`), or None.
        self.fused = fused
        self.cob = shape.cout // self.cfg.block_out
        self.cib = shape.cin // self.cfg.block_in
        self.kk = shape.kh * shape.kw
        self.pipe = Pipeline(builder, threads=tiling.threads, slots=tiling.slots,
                             load_window=tiling_load_window(self.cfg, tiling))
        self.inp_held = [None] * tiling.threads      # what each INP buffer holds
        self.inp_loaded = set()                        # resident INP slots loaded
        self.wgt_held = [None] * tiling.threads
        self.n_cit = shape.input_chunks(self.cfg, tiling.tci)
        self.resident_loaded = set()                    # (cot, cit) chunks in their WGT slots
        #: The accumulators start at the shifted bias (no reset GEMM, no ADD in the tail).
        self.bias_start = bufs.bias is not None and requant.bias_starts_acc(
            bias_bound, shape.products)
        #: The GEMM core starts the accumulators at the bias (a reset GEMM, then one GEMM step
        #: of the bias's digits, :mod:`.bias_digits`), where the tiling left it room.
        self.gemm_start = tiling.bias_step
        if self.gemm_start and bufs.step_inp is None:
            raise ValueError("a tiling with the bias step needs its operands (Conv2dBuffers."
                             "step_inp, step_wgt)")
        #: The bias step of the first tile waits for the first task's LOADs, which bring its
        #: operands: it follows that task's token (:meth:`emit_gemm`).
        self.step_deferred = False
        #: The accumulators start by an ALU MOV — of the shifted bias, or of the immediate 0
        #: without a bias — which can run beside the previous tile's last GEMM (a reset GEMM
        #: cannot): only a bias added after the shift needs the reset.
        self.alu_start = (self.bias_start or bufs.bias is None) and not self.gemm_start
        #: Per accumulator buffer, the output blocks and pixels (a prefix of each block's rows)
        #: some tile has written: a MOV of 0 reads its rows first, and reading a row nothing
        #: wrote is not well-formed (docs/isa.md §3 rule (e)), so a buffer's first tiles reset.
        self.written = [(0, 0)] * tiling.slots
        self.pad_value = PAD_VALUES[shape.pad_value]
        #: The requantization of the last tile ended, waiting to run beside the next GEMMs:
        #: ``(tile, [(kernel, op, imm), ...])`` (see :meth:`emit`).
        self.tail = None
        self.options = plan_options(self.cfg, shape, requant, bufs.bias is not None, bias_bound,
                                    fused, gemm=self.gemm_start)
        #: Weight blocks of the first piece of the task loaded next (conv_first.first_piece),
        #: 0 for one piece; and of each task the load stage loaded in two, by index, for its
        #: GEMM.
        self.load_piece = 0
        self.split_tasks = {}

    # -- geometry of one task -------------------------------------------------------------------

    def _co_range(self, tile):
        co0 = tile.cot * self.t.tco
        return co0, min(self.t.tco, self.cob - co0)

    def _ci_range(self, tile, cit):
        """First input block and count of task ``(tile, cit)``; a depthwise tile's are its
        output blocks."""
        if self.shape.depthwise:
            return self._co_range(tile)
        ci0 = cit * self.t.tci
        return ci0, min(self.t.tci, self.cib - ci0)

    def _chunk_rows(self, nco, nci):
        """WGT rows of a weight chunk, ``[co][ci][kh][kw]`` (depthwise: ``[co][kh][kw]``)."""
        return self.shape.kernel_blocks(nco, nci) * self.kk

    def _window(self, tile):
        """Input rows and columns of the tile: (ih0, th_in, iw0, tw_in), before clipping (of a
        subsampled shape, its rows and columns in INP); of a part of a split tile whose window
        is resident, the whole tile's window."""
        s, sh = self.shape.window_stride, self.shape
        return (tile.window_oh0 * s - sh.pad, (tile.window_th - 1) * s + sh.kh,
                tile.ow0 * s - sh.pad, (tile.tw - 1) * s + sh.kw)

    # -- load stage -----------------------------------------------------------------------------

    def emit_load(self, tile, cit):
        v = self.pipe.begin_load()
        if self.gemm_start and self.pipe.loads_begun == 1:
            self._load_bias_step()
        ci0, nci = self._ci_range(tile, cit)
        co0, nco = self._co_range(tile)
        chunk = (tile.cot, cit)
        if self.t.wgt_resident:
            load_wgt = chunk not in self.resident_loaded
            self.resident_loaded.add(chunk)
        else:
            load_wgt = self.t.reload_weights or self.wgt_held[v] != (co0, ci0)
            self.wgt_held[v] = (co0, ci0)
        # The first or the last task in two pieces (conv_first), when it loads its weights:
        # the first weight blocks and the input window, a token, then the other blocks.
        blocks = self._chunk_rows(nco, nci)
        piece = self.load_piece if load_wgt else 0
        if piece:
            self.split_tasks[self.pipe.loads_begun - 1] = piece
        if load_wgt:
            self._load_weights(v, chunk, co0, ci0, nco, nci, 0, piece or blocks)
        self._load_input(tile, cit, v, ci0, nci)
        if piece:
            self.pipe.end_load_piece()
            self._load_weights(v, chunk, co0, ci0, nco, nci, piece, blocks)
        self.pipe.end_load()

    def _load_bias_step(self):
        """LOAD the bias step's operands into the rows the tiling left them: the constant INP
        row last in INP, the digit blocks (one per output block) last in WGT."""
        self.b.load(MemType.INP, sram=self._step_inp_row(), dram=self.bufs.step_inp, x_size=1)
        self.b.load(MemType.WGT, sram=self._step_wgt_row(0), dram=self.bufs.step_wgt,
                    x_size=self.cob)

    def _step_inp_row(self):
        return self.cfg.inp_depth - 1

    def _step_wgt_row(self, co):
        """The WGT row of output block ``co``'s bias digits."""
        return self.cfg.wgt_depth - self.cob + co

    def _bias_step(self, tile, va):
        """The GEMM that adds each row's bias to ``tile``'s reset accumulators: one step per
        ACC row, the constant INP row against the row's output block of digits."""
        co0, nco = self._co_range(tile)
        acc = self.t.acc_base(va)
        kernel = UopKernel([(acc + co * self.t.acc_pitch, self._step_inp_row(),
                             self._step_wgt_row(co0 + co)) for co in range(nco)],
                           self._tile_loops(tile))
        self.b.gemm(kernel)

    def _load_weights(self, v, chunk, co0, ci0, nco, nci, lo, hi):
        """LOAD the task's weight chunk, or (one output block: one DRAM row) its blocks
        ``[lo, hi)``."""
        b = self.b
        if self.shape.depthwise:
            # Rows [co][kh][kw] (pack_diagonal): the chunk's diagonal blocks are contiguous.
            rows = self._chunk_rows(nco, nci)
            b.load(MemType.WGT, sram=self._wgt_base(v, *chunk),
                   dram=self.bufs.wgt + co0 * self.kk, y_size=1, x_size=rows, x_stride=rows)
        elif (lo, hi) != (0, self._chunk_rows(nco, nci)):
            if nco != 1:
                raise ValueError(f"weight blocks [{lo}, {hi}) of a chunk of {nco} output "
                                 f"blocks: only one output block's chunk is one DRAM row")
            b.load(MemType.WGT, sram=self._wgt_base(v, *chunk) + lo,
                   dram=self.bufs.wgt + (co0 * self.cib + ci0) * self.kk + lo, y_size=1,
                   x_size=hi - lo, x_stride=self.cib * self.kk)
        else:
            # Rows [co][ci][kh][kw]: one DRAM row per output block, its input blocks contiguous.
            b.load(MemType.WGT, sram=self._wgt_base(v, *chunk),
                   dram=self.bufs.wgt + (co0 * self.cib + ci0) * self.kk, y_size=nco,
                   x_size=nci * self.kk, x_stride=self.cib * self.kk)

    def _load_input(self, tile, cit, v, ci0, nci):
        """LOAD the task's input window, unless its buffer or resident slot holds it."""
        sh, b = self.shape, self.b
        if self.t.inp_resident:
            slot = self._inp_slot(tile, cit)
            load_inp = slot not in self.inp_loaded
            self.inp_loaded.add(slot)
            base = self.t.inp_base(slot)
        else:
            key = (tile.nb, tile.oh0, tile.th, tile.ow0, tile.tw, ci0)
            load_inp = self.inp_held[v] != key
            self.inp_held[v] = key
            base = self.t.inp_base(v)
        if load_inp and sh.subsampled:
            # Only the pixels the outputs read: per output row, ``tw`` one-element DRAM rows
            # ``stride`` apart (no padding: the shape has none), laid out as a stride-1 window.
            s = sh.stride
            for ci in range(nci):
                plane = (tile.nb * self.cib + ci0 + ci) * sh.h
                for r in range(tile.window_th):
                    b.load(MemType.INP, sram=base + ci * self.t.inp_pitch + r * tile.tw,
                           dram=self.bufs.inp + (plane + (tile.window_oh0 + r) * s) * sh.w
                           + tile.ow0 * s, y_size=tile.tw, x_size=1, x_stride=s)
        elif load_inp:
            ih0, th_in, iw0, tw_in = self._window(tile)
            y0, y1 = max(0, -ih0), max(0, ih0 + th_in - sh.h)
            x0, x1 = max(0, -iw0), max(0, iw0 + tw_in - sh.w)
            for ci in range(nci):
                plane = (tile.nb * self.cib + ci0 + ci) * sh.h
                b.load(MemType.INP, sram=base + ci * self.t.inp_pitch,
                       dram=self.bufs.inp + (plane + ih0 + y0) * sh.w + iw0 + x0,
                       y_size=th_in - y0 - y1, x_size=tw_in - x0 - x1, x_stride=sh.w,
                       y_pad=(y0, y1), x_pad=(x0, x1), pad_value=self.pad_value)

    def _inp_slot(self, tile, cit):
        """The resident INP slot of the tile's input window, input chunk ``cit``."""
        n_h, n_w = -(-self.shape.oh // self.t.th), -(-self.shape.ow // self.t.tw)
        spatial = (tile.nb * n_h + tile.window_oh0 // self.t.th) * n_w + tile.ow0 // self.t.tw
        return spatial * self.n_cit + cit

    def _wgt_base(self, v, cot, cit):
        """First WGT row of chunk ``(cot, cit)``: its resident slot, or buffer ``v``'s."""
        rows = self._chunk_rows(self.t.tco, self.t.tci)
        if self.t.wgt_resident:
            return (cot * self.n_cit + cit) * rows
        return self.t.wgt_base(v, rows)

    # -- compute stage --------------------------------------------------------------------------

    def _tile_loops(self, tile, src_row=0, src_col=0):
        return (Loop(tile.th, tile.tw, src_row), Loop(tile.tw, 1, src_col))

    def _tile_rows(self, tile, va, *, bias, block=0, shortcut=False):
        """An ALU kernel over every ACC row of ``tile``: src = dst, or (``bias``) src = the
        row's bias row, or its row of resident row block ``block`` (1.., a per-channel
        requantization's rows after the bias), or (``shortcut``) its shortcut row. One
        micro-op, output blocks outer and pixels inner, when the loop extents allow: the compute
        stage bounds such an instruction's rows and runs the next GEMM beside it
        (docs/architecture.md, compute stage)."""
        co0, nco = self._co_range(tile)
        acc, pitch, pixels = self.t.acc_base(va), self.t.acc_pitch, tile.th * tile.tw
        # the bias copy in the buffer's own ACC bank, or the row block after it
        bias0 = self.t.bias_base(va) + block * self.cob
        # the shortcut rows lie as the accumulators do, after them
        src = self.t.shortcut_base(va) if shortcut else acc
        if max(nco, pixels) < 1 << ITER_BITS:
            if bias:
                return UopKernel([(acc, bias0 + co0)], (Loop(nco, pitch, 1), Loop(pixels, 1, 0)))
            return UopKernel([(acc, src)], (Loop(nco, pitch, pitch), Loop(pixels, 1, 1)))
        rows = [acc + co * pitch for co in range(nco)]
        if bias:
            return UopKernel([(r, bias0 + co0 + co) for co, r in enumerate(rows)],
                             self._tile_loops(tile))
        return UopKernel([(r, r - acc + src) for r in rows], self._tile_loops(tile, tile.tw, 1))

    def begin_tile(self, tile):
        if self.pipe.threads == 1:
            self._flush_tail()              # one accumulator buffer: the tail goes first
        va = self.pipe.begin_tile()
        _, nco = self._co_range(tile)
        acc = self.t.acc_base(va)
        if self.bias_start and not self.gemm_start:
            self.b.alu(self._tile_rows(tile, va, bias=True), AluOp.MOV)
            return va
        blocks, pixels = self.written[va]
        if self.alu_start and nco <= blocks and tile.th * tile.tw <= pixels:
            self.b.alu(self._tile_rows(tile, va, bias=False), AluOp.MOV, imm=0)
            return va
        self.written[va] = (max(blocks, nco), max(pixels, tile.th * tile.tw))
        reset = UopKernel([(acc + co * self.t.acc_pitch, 0, 0) for co in range(nco)],
                          self._tile_loops(tile))
        # A GEMM start runs each of its two GEMMs beside the next pass of the tile before (the
        # compute stage runs a GEMM beside the ALU instruction before it; the planner's walk
        # counts the same, conv_walk).
        if self.gemm_start:
            self._tail_pass()
        self.b.gemm(reset, reset=True)
        if self.gemm_start:
            if self.pipe.computes_begun == 0:
                self.step_deferred = (tile, va)     # its operands are not loaded yet
            else:
                self._tail_pass()
                self._bias_step(tile, va)
        return va

    def emit_gemm(self, tile, cit, va, ahead=None):
        """The GEMM of task ``(tile, cit)``, in parts, with the pending requantization's passes
        beside them; with ``ahead``, the next tile, whose accumulator start (a bias MOV) runs
        beside the last part: then returns that tile's accumulator buffer."""
        vi = self.pipe.compute_buffer()
        sh, t = self.shape, self.t
        _, nci = self._ci_range(tile, cit)
        _, nco = self._co_range(tile)
        _, th_in, _, tw_in = self._window(tile)
        acc = t.acc_base(va)
        inp = t.inp_base(self._inp_slot(tile, cit) if t.inp_resident else vi) + \
            tile.row0 * sh.window_stride * tw_in      # a part's rows of the whole window
        wgt0 = self._wgt_base(vi, tile.cot, cit)
        uops = []
        for ci in range(nci):
            for kh in range(sh.kh):
                for kw in range(sh.kw):
                    for co in range(nco):           # innermost: successive uops differ in dst
                        if sh.depthwise and co != ci:
                            continue                # off the diagonal: zero weights
                        block = co if sh.depthwise else co * nci + ci
                        wgt = wgt0 + block * self.kk
                        uops.append((acc + co * t.acc_pitch, inp + ci * t.inp_pitch +
                                     kh * tw_in + kw, wgt + kh * sh.kw + kw))
        s = sh.window_stride
        kernel = UopKernel(uops, self._tile_loops(tile, s * tw_in, s))
        # The previous tile's requantization runs beside this tile's GEMMs: this task takes its
        # share of the passes left (conv_passes.passes_beside: the planner's estimate assumes
        # the same), and the GEMM is split into as many parts (micro-op ranges, whose sums add
        # up to the whole), one pass before each, each part about as long as its pass
        # (split_parts). The kernels are made resident first: a micro-op LOAD after an ALU pass
        # would wait for it.
        n = len(uops)
        # A task's first piece (conv_first) runs before everything else of the task, on its
        # own token.
        piece = self.split_tasks.pop(self.pipe.computes_begun, 0)
        if piece:
            self.pipe.begin_compute()
            self._deferred_step()
            self.b.gemm(kernel, part=(0, piece))
        costs = self._pass_cycles()
        rest = n - piece
        taken = passes_beside(costs, tile.th * tile.tw * rest + gemm_fill(self.cfg),
                              self.n_cit - cit)
        side = min(taken, rest - 1 if ahead is not None else rest)
        beside = [alu_kernel for alu_kernel, _, _ in self.tail[1][:side]] if self.tail else []
        costs = costs[:side]
        if ahead is not None:
            beside.append(self._tile_rows(ahead, self.pipe.tile_buffer(), bias=self.bias_start))
            _, nco_ahead = self._co_range(ahead)
            costs.append(pass_cycles(self.cfg, AluOp.MOV, 0, ahead.th * ahead.tw * nco_ahead))
        if beside:
            self.b.preload(kernel)
            for alu_kernel in beside:
                self.b.preload(alu_kernel)
        parts = [(piece + lo, piece + hi)
                 for lo, hi in (split_parts(rest, costs) if costs else [(0, rest)])]
        begun = None
        for k, part in enumerate(parts):
            if ahead is not None and k == len(parts) - 1:
                self._flush_tail()          # the next tile's buffer is the one stored last
                begun = self.begin_tile(ahead)
            elif k < side:
                self._tail_pass()
            if k == 0:
                if piece:
                    self.pipe.begin_compute_piece()
                else:
                    self.pipe.begin_compute()
                    self._deferred_step()
            self.b.gemm(kernel, part=None if parts == [(0, n)] else part)
        self.pipe.end_compute()
        return begun

    def _deferred_step(self):
        """The first tile's bias step, after the first task's token (:meth:`begin_tile`)."""
        if self.step_deferred:
            tile, va = self.step_deferred
            self.step_deferred = False
            self._bias_step(tile, va)

    def _pass_cycles(self):
        """Cycles of each pending requantization pass (:func:`kernel_cycles`)."""
        if not self.tail:
            return []
        return [kernel_cycles(self.cfg, kernel, op, imm) for kernel, op, imm in self.tail[1]]

    def end_tile(self, tile, va):
        """Requantize ``tile``: its passes wait in :attr:`tail` for the next tile's GEMMs."""
        self._flush_tail()
        bias = None
        if self.bufs.bias is not None and not self.bias_start:
            bias = self._tile_rows(tile, va, bias=True)
        passes = AluRecorder()
        same = self._tile_rows(tile, va, bias=False)

        def channel(k):
            return self._tile_rows(tile, va, bias=True, block=1 + k)
        if self.fused is None:
            self.requant.emit(passes, same, bias, channel)
        else:
            co0, nco = self._co_range(tile)
            load_shortcut(self.b, self.shape, self.t, tile, va, self.bufs.shortcut,
                          self.cob, co0, nco)
            emit_fused_tail(passes, self.requant, self.fused, same, bias, channel,
                            self._tile_rows(tile, va, bias=False, shortcut=True),
                            drop_lower=self.options["drop_lower"])
        self.tail = (tile, passes.insns)
        if not passes.insns:
            self._store_tail()

    def _tail_pass(self):
        """Emit the next pass of the pending requantization, and after its last, store."""
        if not self.tail:
            return
        kernel, op, imm = self.tail[1].pop(0)
        self.b.alu(kernel, op, imm=imm)
        if not self.tail[1]:
            self._store_tail()

    def _store_tail(self):
        """End the requantized tile (its last instruction pushes C→S) and store it."""
        tile, _ = self.tail
        self.tail = None
        self.pipe.end_tile()
        self.emit_store(tile)

    def _flush_tail(self):
        while self.tail:
            self._tail_pass()

    # -- store stage ----------------------------------------------------------------------------

    def emit_store(self, tile):
        va = self.pipe.begin_store()
        sh, t = self.shape, self.t
        co0, nco = self._co_range(tile)
        acc = t.acc_base(va)
        first = ((tile.nb * self.cob + co0) * sh.oh + tile.oh0) * sh.ow + tile.ow0
        if tile.tw == sh.ow and tile.th * tile.tw == t.acc_pitch:
            # Whole rows of a full tile: each output block is one contiguous run in both.
            self.b.store(sram=acc, dram=self.bufs.out + first, y_size=nco,
                         x_size=tile.th * sh.ow, x_stride=sh.oh * sh.ow)
        else:
            for co in range(nco):
                self.b.store(sram=acc + co * t.acc_pitch,
                             dram=self.bufs.out + first + co * sh.oh * sh.ow,
                             y_size=tile.th, x_size=tile.tw, x_stride=sh.ow)
        self.pipe.end_store()

    # -- the whole layer ------------------------------------------------------------------------

    def _tiles(self):
        """The output tiles in order; the last as two parts where the estimate says that its
        first part's passes beside the second part's GEMMs pay for a tile more, the parts as
        large as the estimate finds fastest (conv_cycles.last_split)."""
        tiles = list(_tiles(self.cfg, self.shape, self.t))
        options = self.options
        axis, first = last_split(self.cfg, self.shape, self.t,
                                 tail_steps=options["tail_steps"], start=options["start"])
        if axis < 0:
            return tiles
        last = tiles.pop()
        if axis == 0:
            second = last.th - first
            # Resident windows: both parts read the whole tile's (conv_cycles.split_axis).
            whole = last.th if self.t.inp_resident else 0
            return tiles + [replace(last, th=first, whole_th=whole),
                            replace(last, oh0=last.oh0 + first, th=second,
                                    row0=first if whole else 0, whole_th=whole)]
        second = last.tw - first
        return tiles + [replace(last, tw=first), replace(last, ow0=last.ow0 + first, tw=second)]


    def _load_resident_rows(self):
        """Bias rows stay resident at ACC [0, COB) of every bank the buffers use (conv_plan), a
        per-channel requantization's rows after them; only the compute stage touches them.

        Where the accumulators start at the bias (a stream that uses MOV already) the first
        bank's rows are LOADed, the bias shifted there, and the other banks' are an ALU MOV of
        them: a LOAD there would wait on the one read engine (hw/axi/vme.py) behind the load
        stage's first bursts while the first tile's bias MOV, and so the first GEMM, waits for
        it; the copy takes a cycle a row and reads no DRAM. Upstream's tail (the bias added
        after the shift) keeps a LOAD per bank: its stream stays upstream's instructions."""
        total = self.cob * row_blocks(self.requant)
        first = self.t.bias_base(0)
        for v in range(self.t.acc_banks):
            base = self.t.bias_base(v)
            if v and self.bias_start:
                self.b.alu(UopKernel([(base, first)], [Loop(total, 1, 1)]), AluOp.MOV)
                continue
            self.b.load(MemType.ACC, sram=base, dram=self.bufs.bias, x_size=total)
            if self.bias_start and self.requant.bias_shift and not self.gemm_start:
                rows = UopKernel([(base, base)], [Loop(self.cob, 1, 1)])
                self.b.alu(rows, AluOp.SHR, imm=-self.requant.bias_shift)    # bias << shift

    def emit(self):
        if self.bufs.bias is not None:
            self._load_resident_rows()
        tasks = [(tile, cit) for tile in self._tiles() for cit in range(self.n_cit)]
        options = plan_options(self.cfg, self.shape, self.requant, self.bufs.bias is not None,
                               self.bias_bound, gemm=self.gemm_start)
        first, last = task_pieces(self.cfg, self.shape, self.t,
                                  tail_steps=options["tail_steps"], start=options["start"])
        pieces = {len(tasks) - 1: last, 0: first}
        n_cit = self.n_cit
        loaded = 0
        va = early = None
        for j, (tile, cit) in enumerate(tasks):
            # Up to threads - 1 tasks ahead load while this one computes (their buffers were
            # released by computes already emitted, so their C→L pops have tokens to take).
            while loaded < min(len(tasks), j + self.t.threads):
                self.load_piece = pieces.get(loaded, 0)
                self.emit_load(*tasks[loaded])
                loaded += 1
            if cit == 0:
                va = early if early is not None else self.begin_tile(tile)
            # With two buffers and a MOV to start the accumulators, the next tile starts
            # beside this tile's last GEMM part (hw/core/compute.py runs GEMM beside ALU).
            last = cit == n_cit - 1
            ahead = (tasks[j + 1][0] if last and j + 1 < len(tasks) and self.alu_start
                     and self.t.threads > 1 else None)
            early = self.emit_gemm(tile, cit, va, ahead)
            if last:
                self.end_tile(tile, va)
        self._flush_tail()
