"""Max pooling with its windows brought into ACC by the GEMM core, or by LOAD ACC_8BIT
(:func:`~.pool.build_max_pool2d`), whichever the cycle estimates say is faster
(:func:`plan_max_pool`).

The ALU path loads each tile's input windows with LOAD ACC_8BIT, which the compute stage runs:
on `default` (16-byte rows, an 8-byte bus) two cycles a row in which the compute stage does
nothing else, then the MAX passes (:func:`~.pool.fold_passes`), two cycles a step on one ACC
read port. Here the load stage loads the windows as INP rows (the OUT rows the layer before
wrote are INP rows when BLOCK_IN = BLOCK_OUT; the border is the LOAD's pad value MIN, −128,
which never exceeds a window's maximum), overlapping the compute stage, and the GEMM core
copies them into ACC: a reset, then one step a row with the identity weight block
(:func:`pack_identity`): int8 × 1 summed with zeros is the int8 value, exactly what LOAD
ACC_8BIT writes. The two GEMMs of tile ``t + 1`` run beside the MAX passes of tile ``t`` in the
other ACC bank (the compute stage runs a GEMM beside the ALU instruction before it on a bank the
ALU does not use, docs/architecture.md): the reset beside the first pass, the copy beside the
second, so the compute stage is busy with the passes alone.

Tiles are the window operators' (:class:`~.window.WindowTiling`, :class:`~.window.WindowEmitter`)
of one channel block, so that every pass has one micro-op (:func:`fold_passes`; the compute
stage bounds only such an ALU instruction's rows, and a GEMM waits for an ALU it cannot bound).
Tile ``j``'s window is in INP buffer ``j mod 2`` and at the start of ACC bank ``j mod 2``, its
output rows after it: the reset of tile ``j`` only waits for the passes of tile ``j − 2`` that
precede it, and its MOV into the output rows for the store of tile ``j − 2``, which a whole
tile's passes have hidden.
"""

from dataclasses import asdict, dataclass

import numpy as np

from avta.isa.costs import ALU_FILL, gemm_fill, load_cycles, store_cycles, two_operand_step
from avta.isa.enums import AluOp, MemType, PadValue
from avta.isa.formats import ITER_BITS
from avta.isa.memories import scratchpad

from ..build_cache import cached_plan, cached_program
from ..packing import pack_nchw
from ..stream import StreamBuilder
from ..uop_kernel import Loop, UopKernel
from .conv_plan import PlanError, tile_sizes
from .pool import build_max_pool2d, plan_max_pool2d
from .window import WindowEmitter, WindowShape, WindowTiling, window_tiling

__all__ = ["MaxPoolBuffers", "MaxPoolPlan", "plan_max_pool", "plan_max_pool_gemm", "fold_passes",
           "estimate_max_pool_gemm", "lower_bound_max_pool_gemm", "fits_gemm_path",
           "estimate_max_pool_alu", "pack_identity",
           "build_max_pool_gemm", "max_pool_on_device", "PATHS"]

#: The two ways of running a max pool (the module's docstring).
PATHS = ("gemm", "alu")


@dataclass(frozen=True)
class MaxPoolBuffers:
    """DRAM element addresses: the input as INP elements, the identity weight block
    (:func:`pack_identity`) as WGT elements, the output as OUT elements."""
    inp: int
    wgt: int
    out: int


def pack_identity(cfg):
    """The WGT element ``I`` (``(1, BLOCK_OUT, BLOCK_IN)`` int8): a GEMM step with it copies an
    INP row into a reset ACC row."""
    return np.eye(cfg.block_out, cfg.block_in, dtype=np.int8)[None]


def _why_not_gemm(cfg):
    if cfg.block_in != cfg.block_out:
        return (f"BLOCK_IN {cfg.block_in} differs from BLOCK_OUT {cfg.block_out}: the input's "
                f"OUT rows are not INP rows")
    if scratchpad(cfg, "acc").banks < 2:
        return "ACC has one bank: the copies could not run beside the MAX passes"
    return ""


def _tiles(cfg, shape, t):
    """``(ncb, th, tw)`` of every tile, in the emitter's order."""
    cb = shape.c // cfg.block_out
    return [(min(t.tcb, cb - cb0), min(t.th, shape.oh - oh0), min(t.tw, shape.ow - ow0))
            for _ in range(shape.n // cfg.batch) for cb0 in range(0, cb, t.tcb)
            for oh0 in range(0, shape.oh, t.th) for ow0 in range(0, shape.ow, t.tw)]


def _window_dims(shape, th, tw):
    s, k = shape.stride, shape.k
    return (th - 1) * s + k, (tw - 1) * s + k


def fold_passes(shape, th, tw):
    """The MAX passes of a tile of one channel block, ``[(op, dst, src, loops)]``: ``dst`` and
    ``src`` are ``(region, offset)``, the region ``"win"`` (the input window, ``th_in × tw_in``
    rows) or ``"out"`` (the ``th × tw`` output rows). Each has one micro-op, so the compute
    stage bounds its rows and runs a GEMM beside it (docs/architecture.md, compute stage).

    Rows first (as :func:`~.pool.build_max_pool2d` when the stride is smaller than the window)
    when at most one column offset ``j`` in 1..k−1 is a multiple of the stride (``k ≤ 2s``:
    ResNet's 3×3 stride 2): one pass per ``j`` folds, in place, column ``x·s + j`` of every input
    row into column ``x·s``, the largest ``j`` first — a column it reads that is itself an
    output column ``x'·s`` is read before any pass writes it, because only the first pass can
    read one; then a MOV and a pass per window row ``i`` fold the first columns into the output.
    Otherwise a MOV and one pass per other window position."""
    k, s = shape.k, shape.stride
    th_in, tw_in = _window_dims(shape, th, tw)
    out_loops = (Loop(th, tw, s * tw_in), Loop(tw, 1, s))
    MAX, MOV = AluOp.MAX, AluOp.MOV
    if 1 < k <= 2 * s and s < k:
        cols = (Loop(th_in, tw_in, tw_in), Loop(tw, s, s))
        return ([(MAX, ("win", 0), ("win", j), cols) for j in range(k - 1, 0, -1)]
                + [(MOV, ("out", 0), ("win", 0), out_loops)]
                + [(MAX, ("out", 0), ("win", i * tw_in), out_loops) for i in range(1, k)])
    return [(MOV, ("out", 0), ("win", 0), out_loops)] + [
        (MAX, ("out", 0), ("win", kh * tw_in + kw), out_loops)
        for kh in range(k) for kw in range(k) if (kh, kw) != (0, 0)]


def _passes(cfg, shape, ncb, th, tw):
    """Cycles of each ALU instruction of a tile: :func:`fold_passes` per channel block, a
    two-operand step two cycles on one ACC read port, a MOV one."""
    two = two_operand_step(cfg)
    cycles = []
    for op, _, _, loops in fold_passes(shape, th, tw):
        steps = loops[0].extent * loops[1].extent
        cycles.append((steps if op == AluOp.MOV else two * steps) + ALU_FILL)
    return cycles * ncb


def _alu_path_passes(cfg, shape, ncb, th, tw):
    """Cycles of the ALU path's instructions over a tile (:func:`~.pool.build_max_pool2d`: a
    pass's micro-ops cover every channel block)."""
    k, s = shape.k, shape.stride
    two = two_operand_step(cfg)
    th_in, _ = _window_dims(shape, th, tw)
    if 1 < k and s < k:
        steps = [two * ncb * (k - 1) * th_in * tw, ncb * th * tw, two * ncb * (k - 1) * th * tw]
    else:
        steps = [ncb * th * tw] + ([two * ncb * (k * k - 1) * th * tw] if k > 1 else [])
    return [n + ALU_FILL for n in steps]


def _store(cfg, ncb, th, tw):
    return ncb * store_cycles(cfg, th, tw)


def _slots(cfg):
    """Output row buffers: one per bank. A tile's MOV into its output rows comes a whole tile
    after its window's copy (it is the third pass, beside nothing), so the store of the tile two
    before, which frees them, has long ended; more buffers would only shrink the tiles."""
    return 2


def _first_out(shape):
    """Index of a tile's first pass that writes its output rows (its MOV)."""
    return next(i for i, (_, (region, _), _, _) in enumerate(fold_passes(shape, 1, 1))
                if region == "out")


def _tile_costs(cfg, shape):
    """``tile → (its passes' cycles, the cycles of its INP LOADs, of its STOREs)`` for a tile
    ``(ncb, th, tw)``, each worked out once: a layer's tiles have at most eight sizes (full or
    the border's on each axis), and the search asks for them over a hundred thousand times."""
    inp_bytes, table = cfg.inp_elem_bytes, {}

    def costs(tile):
        found = table.get(tile)
        if found is None:
            ncb, th, tw = tile
            th_in, tw_in = _window_dims(shape, th, tw)
            found = table[tile] = (_passes(cfg, shape, ncb, th, tw),
                                   ncb * load_cycles(cfg, th_in, tw_in, inp_bytes),
                                   _store(cfg, ncb, th, tw))
        return found
    return costs


def _axis_sizes(extent, tile):
    """``{size: how many tiles}`` of an axis of ``extent`` cut in tiles of ``tile``: the full
    ones and the border's."""
    sizes = {tile: extent // tile}
    if extent % tile:
        sizes[extent % tile] = 1
    return sizes


def lower_bound_max_pool_gemm(cfg, shape, t):
    """A bound :func:`estimate_max_pool_gemm` never goes below, in constant time: every pass of
    every tile (of each size, the count of its tiles), one after another in the compute stage,
    then the last tile's STORE."""
    costs = _tile_costs(cfg, shape)
    cb = shape.c // cfg.block_out
    axes = [_axis_sizes(cb, t.tcb), _axis_sizes(shape.oh, t.th), _axis_sizes(shape.ow, t.tw)]
    passes = (shape.n // cfg.batch) * sum(
        n_cb * n_h * n_w * sum(costs((ncb, th, tw))[0])
        for ncb, n_cb in axes[0].items() for th, n_h in axes[1].items()
        for tw, n_w in axes[2].items())
    last = tuple(list(sizes)[-1] for sizes in axes)     # the border's, when there is one
    return passes + costs(last)[2]


def estimate_max_pool_gemm(cfg, shape, t):
    """Estimated cycles of the GEMM path under tiling ``t``: per tile its INP LOADs in the load
    stage; in the compute stage its reset beside the previous tile's first pass and its copy
    (once loaded) beside the second, that tile's other passes alone, its MOV once the store of
    the tile ``slots`` before it has freed its output rows; its STORE after its last pass.
    Border padding and micro-op loads are left out, as in the conv2d estimate."""
    fill, slots, mov = gemm_fill(cfg), _slots(cfg), _first_out(shape)
    load_free = compute_free = store_free = 0
    copy_done, store_done = [], []
    tiles = _tiles(cfg, shape, t)
    costs = _tile_costs(cfg, shape)

    def run_passes(j, passes, begin, end):
        """Passes ``[begin, end)`` of tile ``j`` from ``compute_free`` on."""
        nonlocal compute_free
        for i in range(begin, min(end, len(passes))):
            if i == mov and j >= slots:
                compute_free = max(compute_free, store_done[j - slots])
            compute_free += passes[i]

    for j in range(len(tiles) + 1):
        previous = costs(tiles[j - 1])[0] if j else []
        if j < len(tiles):
            ncb, th, tw = tiles[j]
            th_in, tw_in = _window_dims(shape, th, tw)
            start = load_free if j < 2 else max(load_free, copy_done[j - 2])
            load_free = start + costs(tiles[j])[1]
            gemm = ncb * th_in * tw_in + fill
            for i in (0, 1):                 # the reset, then the copy, each beside a pass
                if i == 1:
                    compute_free = max(compute_free, load_free)
                begin = compute_free
                run_passes(j - 1, previous, i, i + 1)
                compute_free = max(compute_free, begin + gemm)
            copy_done.append(compute_free)
        run_passes(j - 1, previous, 2 if j < len(tiles) else 0, len(previous))
        if j:
            store_free = max(store_free, compute_free) + costs(tiles[j - 1])[2]
            store_done.append(store_free)
    return store_free


def estimate_max_pool_alu(cfg, shape, t):
    """Estimated cycles of the ALU path (:func:`~.pool.build_max_pool2d`) under tiling ``t``:
    per tile its LOAD ACC_8BITs and passes one after another in the compute stage; the STOREs
    overlap but the last."""
    total = last = 0
    for ncb, th, tw in _tiles(cfg, shape, t):
        th_in, tw_in = _window_dims(shape, th, tw)
        total += ncb * load_cycles(cfg, th_in, tw_in, cfg.acc8_elem_bytes) + \
            sum(_alu_path_passes(cfg, shape, ncb, th, tw))
        last = _store(cfg, ncb, th, tw)
    return total + last


def fits_gemm_path(cfg, shape, t):
    """Whether tiling ``t`` fits the GEMM path: one channel block a tile, double buffered; a
    tile's window and its bank's output buffers in one ACC bank, two windows in INP, its loops
    and factors in their fields."""
    th_in, tw_in = _window_dims(shape, t.th, t.tw)
    acc = scratchpad(cfg, "acc")
    return (t.tcb == 1 and t.threads == 2
            and t.inp_pitch + _slots(cfg) // 2 * t.out_pitch <= acc.bank_rows
            and 2 * t.inp_pitch <= cfg.inp_depth
            and t.inp_pitch < 1 << ITER_BITS
            and shape.stride * tw_in < 1 << cfg.acc_factor_bits
            and t.tw < 1 << cfg.acc_factor_bits
            and shape.k * shape.k + 2 <= cfg.uop_depth // 4)


def plan_max_pool_gemm(cfg, shape):
    """The :class:`~.window.WindowTiling` of the GEMM path its estimate likes best: one
    channel block a tile (each pass then has one micro-op, :func:`fold_passes`)."""
    shape.check(cfg)
    why = _why_not_gemm(cfg)
    if why:
        raise PlanError(f"max pooling cannot copy its windows with the GEMM core of "
                        f"{cfg.name!r}: {why}")
    # Estimated in the order of a bound no estimate goes below (lower_bound_max_pool_gemm),
    # until a bound passes the best so far: of equal estimates the first in the search's
    # order (tw, then th) wins, as in an exhaustive search.
    candidates = []
    for tcb in (1,):                          # one micro-op a pass: one channel block
        for tw in tile_sizes(shape.ow):
            for th in tile_sizes(shape.oh):
                t = window_tiling(shape, th, tw, tcb, 2)
                if fits_gemm_path(cfg, shape, t):
                    candidates.append((lower_bound_max_pool_gemm(cfg, shape, t),
                                       len(candidates), t))
    best = None
    for bound, order, t in sorted(candidates, key=lambda c: c[:2]):
        if best is not None and bound > best[0]:
            break
        cycles = estimate_max_pool_gemm(cfg, shape, t)
        if best is None or (cycles, order) < best[:2]:
            best = (cycles, order, t)
    if best is None:
        raise PlanError(f"no tile of {shape} fits the GEMM path's ACC bank and INP on "
                        f"{cfg.name!r}")
    return best[2]


@dataclass(frozen=True)
class MaxPoolPlan:
    """``path`` ``"gemm"`` or ``"alu"`` with its tiling, each path's estimate (``None``: it
    cannot run, ``why`` says why)."""
    path: str
    tiling: WindowTiling
    gemm_cycles: int = None
    alu_cycles: int = None
    why: str = ""


def plan_max_pool(cfg, shape, *, path=None):
    """The faster path of the max pool ``shape`` (a :class:`~.window.WindowShape`) by the
    estimates, or ``path`` itself. Planned once across processes
    (:func:`avta.runtime.build_cache.cached_plan`): the GEMM path's search estimates every tile
    size, a second or more of a network's run."""
    if path not in (None,) + PATHS:
        raise ValueError(f"max pool path {path!r} is not one of {PATHS}")
    shape.check(cfg)
    return cached_plan("plan_max_pool", cfg, {"shape": shape, "path": path},
                       lambda: _plan_max_pool(cfg, shape, path), asdict, _plan_from_record)


def _plan_from_record(record):
    return MaxPoolPlan(**(record | {"tiling": WindowTiling(**record["tiling"])}))


def _plan_max_pool(cfg, shape, path):
    tilings, cycles, why = {}, {}, ""
    if path in (None, "gemm"):
        try:
            tilings["gemm"] = plan_max_pool_gemm(cfg, shape)
            cycles["gemm"] = estimate_max_pool_gemm(cfg, shape, tilings["gemm"])
        except PlanError as error:
            why = str(error)
            if path == "gemm":
                raise
    if path in (None, "alu"):
        tilings["alu"] = plan_max_pool2d(cfg, shape)
        cycles["alu"] = estimate_max_pool_alu(cfg, shape, tilings["alu"])
    best = min(cycles, key=lambda p: (cycles[p], p != "gemm"))
    return MaxPoolPlan(best, tilings[best], cycles.get("gemm"), cycles.get("alu"), why)


def build_max_pool_gemm(cfg, shape, bufs, *, tiling=None):
    """The program of the max pool on the GEMM path (:class:`MaxPoolBuffers`)."""
    t = tiling or plan_max_pool_gemm(cfg, shape)
    why = _why_not_gemm(cfg) or ("" if fits_gemm_path(cfg, shape, t) else
                                 f"tiling {t} does not fit the GEMM path")
    if why:
        raise PlanError(f"max pooling cannot copy its windows with the GEMM core of "
                        f"{cfg.name!r}: {why}")
    # Built once across processes (avta.runtime.build_cache), like a conv2d: ResNet's pool
    # takes longer to emit than every other layer's program takes to be read back and placed.
    return cached_program("max_pool_gemm", lambda: _build_max_pool_gemm(cfg, shape, bufs, t),
                          cfg, {"shape": shape, "tiling": t}, _OPERANDS, vars(bufs))


#: Which operand of :class:`MaxPoolBuffers` each memory type's LOADs (OUT: STOREs) address.
_OPERANDS = {MemType.INP: "inp", MemType.WGT: "wgt", MemType.OUT: "out"}


def _build_max_pool_gemm(cfg, shape, bufs, t):
    b = StreamBuilder(cfg)
    slots, mov = _slots(cfg), _first_out(shape)
    em = WindowEmitter(b, shape, t, bufs.inp, bufs.out, slots=slots)
    bank_rows = scratchpad(cfg, "acc").bank_rows
    tiles = list(em.tiles())

    def bases(j):
        """ACC rows of tile ``j``'s window and output rows (in bank ``j mod 2``), INP rows of
        its window."""
        acc = (j % 2) * bank_rows
        out = acc + t.inp_pitch + (j // 2) % (slots // 2) * t.out_pitch
        return acc, out, (j % 2) * t.inp_pitch

    def load(j):
        em.pipe.begin_load()
        if j == 0:
            b.load(MemType.WGT, sram=0, dram=bufs.wgt, x_size=1)
        em.load_window(tiles[j], bases(j)[2], PadValue.MIN, mem=MemType.INP)
        em.pipe.end_load()

    def copies(j):
        """The reset and the copy of tile ``j``'s window, all of it loaded (padding too)."""
        acc, _, inp = bases(j)
        th_in, tw_in = _window_dims(shape, tiles[j].th, tiles[j].tw)
        rows = Loop(th_in * tw_in, 1, 1)
        return UopKernel([(acc, 0, 0)], [rows]), UopKernel([(acc, inp, 0)], [rows])

    def passes(j):
        acc, out, _ = bases(j)
        region = {"win": acc, "out": out}
        return [(UopKernel([(region[d] + d_off, region[r] + r_off)], loops), op)
                for op, (d, d_off), (r, r_off), loops in fold_passes(shape, tiles[j].th,
                                                                     tiles[j].tw)]

    def run_passes(previous, begin, end):
        for i in range(begin, min(end, len(previous))):
            if i == mov:
                em.pipe.begin_tile()          # the output rows: their last store is done
            b.alu(*previous[i])

    loaded = 0
    previous = []                             # the passes of tile j - 1
    for j in range(len(tiles) + 1):
        if j < len(tiles):
            while loaded < min(len(tiles), j + 2):
                load(loaded)
                loaded += 1
            reset, copy = copies(j)
            for kernel in [reset, copy] + [kernel for kernel, _ in previous]:
                b.preload(kernel)             # a micro-op LOAD would part ALU from GEMM
            run_passes(previous, 0, 1)
            b.gemm(reset, reset=True)
            run_passes(previous, 1, 2)
            em.pipe.begin_compute()
            b.gemm(copy)
            em.pipe.end_compute()
        run_passes(previous, 2 if j < len(tiles) else 0, len(previous))
        if j:
            em.pipe.end_tile()
            em.store_tile(tiles[j - 1], bases(j - 1)[1])
        previous = passes(j) if j < len(tiles) else []
    return b.finish()


def max_pool_on_device(device, x, *, k, stride, pad=0, path=None, tiling=None):
    """int8 max pooling of ``x[N, C, H, W]`` on ``device`` on the faster path (or ``path``;
    a ``tiling`` of that path): ``[N, C, OH, OW]``, bit for bit
    :func:`~avta.runtime.ops.reference.max_pool_ref`."""
    cfg = device.cfg
    shape = WindowShape(*np.shape(x), k, pad, stride)
    plan = plan_max_pool(cfg, shape, path=path)
    tiling = tiling or plan.tiling
    mem = MemType.INP if plan.path == "gemm" else MemType.ACC_8BIT
    with device.scratch() as s:
        src = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_out), mem=mem)
        dst = s.alloc(shape.n * shape.c * shape.oh * shape.ow, mem=MemType.OUT)
        if plan.path == "gemm":
            wgt = s.upload(pack_identity(cfg), mem=MemType.WGT)
            program = build_max_pool_gemm(cfg, shape, MaxPoolBuffers(
                src.elem(cfg, mem), wgt.elem(cfg, MemType.WGT), dst.elem(cfg, MemType.OUT)),
                tiling=tiling)
        else:
            program = build_max_pool2d(cfg, shape, src.elem(cfg, mem),
                                       dst.elem(cfg, MemType.OUT), tiling=tiling)
        device.run(program)
        return device.read_nchw(dst, shape.n, shape.c, shape.oh, shape.ow)
