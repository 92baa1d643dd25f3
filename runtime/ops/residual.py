"""The residual add on the GEMM core: ``requant((a << shift_a) + b)`` of two int8 maps as GEMM
steps with diagonal weight blocks, or on the ALU (:func:`~.elementwise.build_add`), whichever
the cycle estimates say is faster (:func:`plan_add`).

The ALU add loads both operands as ACC_8BIT — LOADs the compute stage runs — and adds them with
a two-operand ADD (two ACC reads a row on one read port). Here the load stage loads them as INP
rows (the OUT rows conv2d writes are INP rows when BLOCK_IN = BLOCK_OUT), overlapping the
compute stage, and the GEMM core sums them into a reset accumulator: per row one step with the
weight block ``2^shift_a · I`` for ``a`` and one with ``I`` for ``b`` (:func:`pack_add_weights`;
int8 weights, so ``shift_a`` ≤ :data:`MAX_SHIFT_A`). Products are exact and the int32 sum is the
reference's, so the requantization that follows is too.

Rows are the flattened packed layout ``(N/B, C/BO, H, W)`` (the add is element-wise on rows), in
tiles of ``rows`` ACC rows; the operands are double buffered in INP, the accumulators in
``slots`` buffers that alternate between the ACC banks. A tile's requantization passes run
beside the next tile's GEMMs (docs/architecture.md, compute stage: a GEMM runs beside the ALU
instruction before it on the other bank): pass 1 before the reset, pass 2 before the ``a``
steps, pass 3 before the ``b`` steps, any others after them. With two accumulator buffers a
tile's reset waits for the STORE of the tile two before, which could start only after that
tile's last pass, beside the previous tile's GEMMs: the STORE sits between them. With four (two
per bank, when the token counters hold four: the compute and store stages then pass up to four
tokens) it has three tiles' time.
"""

from dataclasses import asdict, dataclass

import numpy as np

from avta.isa.costs import (ALU_DISPATCH, ALU_FILL, GEMM_DETACH, gemm_drain, load_cycles,
                            store_cycles, two_operand_step)
from avta.isa.enums import MemType, Stage
from avta.isa.formats import ITER_BITS
from avta.isa.memories import scratchpad

from ..build_cache import cached_plan, cached_program
from ..packing import pack_nchw
from ..pipeline import Pipeline
from ..stream import StreamBuilder
from ..uop_kernel import Loop, UopKernel
from .conv_tail import AluRecorder, pass_cycles, tail_steps
from .conv_plan import PlanError
from .elementwise import feature_rows, build_add
from .requant import Requant

__all__ = ["MAX_SHIFT_A", "AddBuffers", "AddTiling", "AddPlan", "plan_add", "plan_add_gemm",
           "estimate_add_gemm", "estimate_add_alu", "pack_add_weights", "build_add_gemm",
           "add_on_device"]

#: The largest ``shift_a`` the GEMM path takes: ``2^shift_a`` must be an int8 weight.
MAX_SHIFT_A = 6

C, S = Stage.COMPUTE, Stage.STORE


@dataclass(frozen=True)
class AddBuffers:
    """DRAM element addresses: ``a`` and ``b`` as INP elements, the two weight blocks
    (:func:`pack_add_weights`) as WGT elements, the output as OUT elements."""
    a: int
    b: int
    wgt: int
    out: int


@dataclass(frozen=True)
class AddTiling:
    """``rows`` ACC rows per tile. Tile ``j``'s operands are in INP buffer ``v = j mod
    threads``, at INP rows ``2·v·rows`` (``a``) and after (``b``); its accumulators in slot
    ``u = j mod slots``, at ACC row ``(u mod banks) · bank_rows + (u div banks) · rows``."""
    rows: int
    threads: int
    banks: int
    bank_rows: int
    slots: int = 0

    def __post_init__(self):
        if not self.slots:
            object.__setattr__(self, "slots", self.threads)

    def acc_base(self, u):
        return (u % self.banks) * self.bank_rows + (u // self.banks) * self.rows


def pack_add_weights(cfg, shift_a):
    """The WGT elements ``[2^shift_a · I, I]`` (``(2, BLOCK_OUT, BLOCK_IN)`` int8)."""
    if not 0 <= shift_a <= MAX_SHIFT_A:
        raise PlanError(f"shift_a {shift_a} is outside 0..{MAX_SHIFT_A}: 2^shift_a must be an "
                        f"int8 weight for the add on the GEMM core")
    eye = np.eye(cfg.block_out, cfg.block_in, dtype=np.int8)
    return np.stack([eye * np.int8(1 << shift_a), eye])


def _why_not_gemm(cfg, shift_a, requant):
    if cfg.block_in != cfg.block_out:
        return (f"BLOCK_IN {cfg.block_in} differs from BLOCK_OUT {cfg.block_out}: the "
                f"operands' OUT rows are not INP rows")
    if not 0 <= shift_a <= MAX_SHIFT_A:
        return f"shift_a {shift_a} is outside 0..{MAX_SHIFT_A} (2^shift_a an int8 weight)"
    if requant.on_host:
        return "the requantization is the host's"
    return ""


def plan_add_gemm(cfg, n, *, threads=2, rows=None, requant=Requant()):
    """The :class:`AddTiling` of ``n`` rows: tiles whose operands fit ``threads`` times in INP
    and whose accumulators fit an ACC bank each, balanced, as many as the estimate likes best
    (small tiles shorten the first LOAD and the last passes no GEMM hides, large ones pay
    fewer fills), or tiles of ``rows`` rows when they fit."""
    pad = scratchpad(cfg, "acc")
    banks = min(threads, pad.banks)
    bank_rows = pad.bank_rows if banks > 1 else pad.depth
    slot_counts = [threads]
    if banks > 1 and (1 << cfg.token_bits) - 1 >= 2 * threads:
        slot_counts.append(2 * threads)
    tilings, limit = [], 0
    for slots in slot_counts:
        most = min(cfg.inp_depth // (2 * threads), bank_rows // -(-slots // banks),
                   (1 << ITER_BITS) - 1, n)
        limit = max(limit, most)
        if most < 1 or cfg.wgt_depth < 2:
            continue
        if rows is not None:
            if rows <= most:
                tilings.append(AddTiling(rows, threads, banks, bank_rows, slots))
            continue
        fewest = -(-n // most)
        tilings += [AddTiling(-(-n // min(n, fewest * k)), threads, banks, bank_rows, slots)
                    for k in (1, 2, 3, 4, 6, 8, 12, 16)]
    if not tilings or (rows is not None and rows < 1):
        raise PlanError(f"the add on the GEMM core does not fit {cfg.name!r} in tiles of "
                        f"{rows or 1} rows (at most {limit})")
    return min(tilings, key=lambda t: estimate_add_gemm(cfg, n, t, requant))


def _passes(cfg, requant):
    """The requantization's ALU instructions, ``[(op, imm)]``."""
    rec = AluRecorder()
    requant.emit(rec, None)
    return [(op, imm) for _, op, imm in rec.insns]


def estimate_add_gemm(cfg, n, t, requant):
    """Estimated cycles of the GEMM path: per tile two INP LOADs in the load stage; in the
    compute stage the reset and the two GEMMs, each beside one of the previous tile's passes
    as the emitter interleaves them (a GEMM and the pass beside it: the longer of the two, the
    pass's dispatch included), the passes left after them alone; the previous tile's STORE
    after both (its token is pushed by the last of them).

    A GEMM costs the stage its steps and ``GEMM_DETACH`` (what follows starts while it drains,
    :mod:`avta.sim.fsim.timing`); the last one completes, and pushes its tokens, its drain
    later."""
    passes = _passes(cfg, requant)
    drain = gemm_drain(cfg)
    load_free = compute_free = store_free = 0
    gemm_done, store_done = [], []
    tiles = [min(t.rows, n - s) for s in range(0, n, t.rows)]
    pending = None                                        # (pass cycles, store cycles)
    for j, rows in enumerate(tiles):
        start = load_free if j < t.threads else max(load_free, gemm_done[j - t.threads])
        load_free = start + 2 * load_cycles(cfg, 1, rows, cfg.inp_elem_bytes)
        if pending and t.slots == 1:          # one buffer: the previous tile ends first
            compute_free += sum(pending[0])
            store_free = max(store_free, compute_free) + pending[1]
            store_done.append(store_free)
            pending = None
        begin = max(compute_free, load_free)
        if j >= t.slots:
            begin = max(begin, store_done[j - t.slots])
        left = list(pending[0]) if pending else []
        now = begin
        for _ in range(3):                    # the reset, then the two GEMMs
            gemm = rows + GEMM_DETACH
            now += max(gemm + ALU_DISPATCH, left.pop(0)) if left else gemm
        done = now + drain                    # the last GEMM's last write: its tokens
        now += sum(left)
        compute_free = now
        gemm_done.append(done)
        if pending:
            # The previous tile's STORE pops the C→S token of the last instruction emitted
            # before it: this tile's last GEMM, or its last pass when passes are left after it.
            store_free = max(store_free, now if left else done) + pending[1]
            store_done.append(store_free)
        pending = ([pass_cycles(cfg, op, imm, rows) for op, imm in passes],
                   store_cycles(cfg, 1, rows))
    compute_free += sum(pending[0])
    return max(store_free, compute_free) + pending[1]


def estimate_add_alu(cfg, n, shift_a, requant, *, threads=2):
    """Estimated cycles of the ALU path (:func:`~.elementwise.build_add`): per tile two LOAD
    ACC_8BITs, the shift of ``a``, the two-operand ADD and the passes, one after another in the
    compute stage; the STOREs overlap but the last."""
    two = two_operand_step(cfg)
    step = (1 if shift_a else 0) + two + tail_steps(cfg, requant, False) - 1
    n_insn = (1 if shift_a else 0) + 1 + len(_passes(cfg, requant))
    rows = min(n, cfg.acc_depth // (threads * 2), (1 << ITER_BITS) - 1)
    total = last = 0
    for s in range(0, n, rows):
        r = min(rows, n - s)
        total += 2 * load_cycles(cfg, 1, r, cfg.acc8_elem_bytes) + step * r + n_insn * ALU_FILL
        last = store_cycles(cfg, 1, r)
    return total + last


@dataclass(frozen=True)
class AddPlan:
    """``path`` ``"gemm"`` (with its :class:`AddTiling`) or ``"alu"``, each path's estimate
    (``None``: it cannot run, ``why`` says why)."""
    path: str
    tiling: AddTiling = None
    gemm_cycles: int = None
    alu_cycles: int = None
    why: str = ""


def plan_add(cfg, shape, *, shift_a=0, requant=Requant(), threads=2, path=None):
    """The faster path of the add of two ``shape = (N, C, H, W)`` maps by the estimates, or
    ``path`` (``"gemm"`` or ``"alu"``) itself. Planned once across processes
    (:func:`avta.runtime.build_cache.cached_plan`)."""
    if path not in (None, "gemm", "alu"):
        raise ValueError(f"add path {path!r} is not one of ('gemm', 'alu')")
    args = {"shape": tuple(shape), "shift_a": shift_a, "requant": requant, "threads": threads,
            "path": path}
    return cached_plan("plan_add", cfg, args,
                       lambda: _plan_add(cfg, shape, shift_a, requant, threads, path),
                       _plan_record, _plan_from_record)


def _plan_record(plan):
    return asdict(plan)


def _plan_from_record(record):
    tiling = record["tiling"]
    return AddPlan(**(record | {"tiling": None if tiling is None else AddTiling(**tiling)}))


def _plan_add(cfg, shape, shift_a, requant, threads, path):
    n = feature_rows(cfg, shape)
    cycles, why, tiling = {}, _why_not_gemm(cfg, shift_a, requant), None
    if path in (None, "gemm") and not why:
        try:
            tiling = plan_add_gemm(cfg, n, threads=threads, requant=requant)
            cycles["gemm"] = estimate_add_gemm(cfg, n, tiling, requant)
        except PlanError as error:
            why = str(error)
    if path in (None, "alu"):
        cycles["alu"] = estimate_add_alu(cfg, n, shift_a, requant, threads=threads)
    if not cycles:
        raise PlanError(f"the add cannot run on the GEMM core of {cfg.name!r}: {why}")
    best = min(cycles, key=lambda p: (cycles[p], p != "gemm"))
    return AddPlan(best, tiling, cycles.get("gemm"), cycles.get("alu"), why)


def build_add_gemm(cfg, shape, bufs, *, requant, shift_a=0, threads=2, tiling=None):
    """The program of the add on the GEMM core (:class:`AddBuffers`; the weights are
    :func:`pack_add_weights` of ``shift_a``). Built once across processes
    (:mod:`avta.runtime.build_cache`), placed at ``bufs``."""
    args = {"shape": tuple(shape), "requant": requant, "shift_a": shift_a, "threads": threads,
            "tiling": tiling}
    return cached_program(
        "add_gemm", lambda: _build_add_gemm(cfg, shape, bufs, requant=requant, shift_a=shift_a,
                                            threads=threads, tiling=tiling),
        cfg, args, _OPERANDS, vars(bufs))


#: Which operands of :class:`AddBuffers` each memory type's LOADs (OUT: STOREs) address.
_OPERANDS = {MemType.INP: ("a", "b"), MemType.WGT: "wgt", MemType.OUT: "out"}


def _build_add_gemm(cfg, shape, bufs, *, requant, shift_a, threads, tiling):
    why = _why_not_gemm(cfg, shift_a, requant)
    if why:
        raise PlanError(f"the add cannot run on the GEMM core of {cfg.name!r}: {why}")
    n = feature_rows(cfg, shape)
    t = tiling or plan_add_gemm(cfg, n, threads=threads, requant=requant)
    b = StreamBuilder(cfg)
    pipe = Pipeline(b, threads=t.threads)
    tiles = [(s, min(t.rows, n - s)) for s in range(0, n, t.rows)]
    passes = _passes(cfg, requant)

    def load(j):
        start, rows = tiles[j]
        v = pipe.begin_load()
        if j == 0:
            b.load(MemType.WGT, sram=0, dram=bufs.wgt, x_size=2)
        b.load(MemType.INP, sram=2 * v * t.rows, dram=bufs.a + start, x_size=rows)
        b.load(MemType.INP, sram=(2 * v + 1) * t.rows, dram=bufs.b + start, x_size=rows)
        pipe.end_load()

    def tail_kernel(j):
        acc = t.acc_base(j % t.slots)
        return UopKernel([(acc, acc)], [Loop(tiles[j][1], 1, 1)])

    def end_tile(j):
        """Tile ``j``'s passes are emitted: push C→S, and its STORE (C→S in, S→C out: the
        slot's next tile, ``slots`` later, pops it before its reset)."""
        b.dep_push(C, S)
        start, rows = tiles[j]
        b.dep_pop(C, S)
        b.store(sram=t.acc_base(j % t.slots), dram=bufs.out + start, x_size=rows)
        b.dep_push(S, C)

    loaded = 0
    for j, (start, rows) in enumerate(tiles):
        while loaded < min(len(tiles), j + t.threads):
            load(loaded)
            loaded += 1
        acc, inp = t.acc_base(j % t.slots), 2 * (j % t.threads) * t.rows
        reset = UopKernel([(acc, 0, 0)], [Loop(rows, 1, 0)])
        gemm = UopKernel([(acc, inp, 0), (acc, inp + t.rows, 1)], [Loop(rows, 1, 1)])
        left = []
        if j and t.slots == 1:                # one buffer: the previous tile ends first
            for op, imm in passes:
                b.alu(tail_kernel(j - 1), op, imm=imm)
            end_tile(j - 1)
        elif j:                               # the previous tile's passes, beside these GEMMs
            kernel = tail_kernel(j - 1)
            left = [(kernel, op, imm) for op, imm in passes]
            for k in (reset, gemm, kernel):
                b.preload(k)                  # a micro-op LOAD would part ALU from GEMM

        def one_pass():
            if left:
                kernel, op, imm = left.pop(0)
                b.alu(kernel, op, imm=imm)

        one_pass()
        if j >= t.slots:
            b.dep_pop(S, C)                   # the slot's previous tile is stored
        b.gemm(reset, reset=True)
        one_pass()
        pipe.begin_compute()
        b.gemm(gemm, part=(0, 1))
        one_pass()
        b.gemm(gemm, part=(1, 2))
        pipe.end_compute()
        while left:
            one_pass()
        if j and t.slots > 1:
            end_tile(j - 1)
    last = len(tiles) - 1
    for op, imm in passes:
        b.alu(tail_kernel(last), op, imm=imm)
    end_tile(last)
    return b.finish()


def add_on_device(device, a, b, *, requant, shift_a=0, threads=2, path=None, tile_rows=None,
                  tiling=None):
    """int8 residual add of ``a[N, C, H, W]`` and ``b`` on ``device`` on the faster path (or
    ``path``, in tiles of ``tile_rows`` rows when given; an :class:`AddTiling` ``tiling`` runs
    on the GEMM core as it says); bit for bit :func:`~avta.runtime.ops.reference.add_ref`."""
    cfg = device.cfg
    a, b = np.asarray(a, np.int8), np.asarray(b, np.int8)
    if a.shape != b.shape:
        raise ValueError(f"add of tensors of shapes {a.shape} and {b.shape}; they must be equal")
    if tiling is not None:
        path = "gemm"
    plan = plan_add(cfg, a.shape, shift_a=shift_a, requant=requant, threads=threads, path=path)
    mem = MemType.INP if plan.path == "gemm" else MemType.ACC_8BIT
    with device.scratch() as s:
        a_buf = s.upload(pack_nchw(a, cfg.batch, cfg.block_out), mem=mem)
        b_buf = s.upload(pack_nchw(b, cfg.batch, cfg.block_out), mem=mem)
        out = s.alloc(a.size, mem=MemType.OUT)
        if plan.path == "gemm":
            wgt = s.upload(pack_add_weights(cfg, shift_a), mem=MemType.WGT)
            bufs = AddBuffers(a_buf.elem(cfg, mem), b_buf.elem(cfg, mem),
                              wgt.elem(cfg, MemType.WGT), out.elem(cfg, MemType.OUT))
            if tiling is None:
                tiling = plan.tiling if tile_rows is None else plan_add_gemm(
                    cfg, feature_rows(cfg, a.shape), threads=threads, rows=tile_rows,
                    requant=requant)
            program = build_add_gemm(cfg, a.shape, bufs, requant=requant, shift_a=shift_a,
                                     threads=threads, tiling=tiling)
        else:
            program = build_add(cfg, a.shape, a_buf.elem(cfg, mem), b_buf.elem(cfg, mem),
                                out.elem(cfg, MemType.OUT), requant=requant, shift_a=shift_a,
                                threads=threads, tile_rows=tile_rows)
        device.run(program)
        return device.read_nchw(out, *a.shape)
