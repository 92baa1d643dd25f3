"""Element-wise ALU programs: int32 tensors with all 32 bits of the result read back, and the
int8 residual add.

STORE writes only the low 8 bits of each ACC lane (docs/isa.md §3.2, OUT mirrors ACC). To see a whole
32-bit result the program also computes ``r >> 8``, ``r >> 16`` and ``r >> 24`` into scratch rows
(SHR with an immediate reads ACC[src] and writes ACC[dst], docs/isa.md §3.4) and stores the four byte
planes; the host reassembles them (:func:`combine_planes`).

:func:`build_elementwise` runs a chain of ALU steps over tensors in tiles, double buffered between
the compute and store stages, and stores either the byte planes or the int8 result;
:func:`elementwise` runs it on int32 host tensors; :func:`emit_readback` is the readback alone,
for tests that fill ACC another way (padded loads, GEMM).

:func:`add` (:func:`build_add`) is the residual add of two int8 feature maps in the packed OUT
layout ``(N/B, C/BO, H, W, B, BO)`` that conv2d writes: both are loaded as ACC_8BIT (sign-extended
into int32 lanes), added with a two-operand ALU ADD, requantized (:class:`Requant`: SHR, then the
clip, e.g. ``(0, 127)`` for a ReLU) and stored as int8 in the same layout.
"""

import numpy as np

from avta.isa.enums import AluOp, MemType
from avta.isa.formats import ITER_BITS

from ..packing import pack_nchw
from ..pipeline import Pipeline
from ..stream import StreamBuilder
from ..uop_kernel import Loop, UopKernel
from .conv_plan import PlanError
from .requant import SCALE_FRACTION, Requant

__all__ = ["elementwise", "build_elementwise", "emit_readback", "combine_planes", "lane_bytes",
           "add", "build_add", "feature_rows"]


def lane_bytes(cfg):
    """Bytes of one ACC lane (docs/isa.md §1: 2^LOG_ACC_WIDTH bits): the byte planes read back."""
    return cfg.acc_width // 8


def _rows_kernel(dst, src, n):
    return UopKernel([(dst, src)], [Loop(n, 1, 1)])


def emit_readback(builder, *, src, rows, scratch, planes):
    """ALU copies of ACC rows ``[src, src + rows)`` shifted right by 0, 8, 16, … into one scratch
    region per lane byte from ACC row ``scratch``; the list of ``(OUT row, DRAM element)`` STOREs
    that write them to the OUT element addresses ``planes[k]`` (the caller emits them, with the
    compute → store tokens)."""
    n = lane_bytes(builder.cfg)
    for k in range(n):
        builder.alu(_rows_kernel(scratch + k * rows, src, rows), AluOp.SHR, imm=8 * k)
    return [(scratch + k * rows, planes[k]) for k in range(n)]


def combine_planes(planes):
    """int32 values from the int8 byte planes of :func:`emit_readback` (low byte first)."""
    value = np.zeros(np.shape(planes[0]), dtype=np.uint32)
    for k, plane in enumerate(planes):
        value |= np.asarray(plane).view(np.uint8).astype(np.uint32) << np.uint32(8 * k)
    return value.view(np.int32)


def _pack_rows(cfg, array, dtype):
    lanes = cfg.batch * cfg.block_out
    flat = np.asarray(array).astype(dtype).reshape(-1)
    if flat.size % lanes:
        raise ValueError(f"{flat.size} values do not fill whole ACC rows of {lanes} lanes "
                         f"(BATCH x BLOCK_OUT on {cfg.name!r})")
    return flat.reshape(-1, lanes)


def build_elementwise(cfg, n, steps, a, out, *, b=None, a_mem=MemType.ACC, b_mem=MemType.ACC,
                      readback=True, threads=2, tile_rows=None, b_steps=()):
    """The program running ALU ``steps`` on ``n`` ACC rows: operand ``a`` at element ``a`` of
    memory type ``a_mem`` (ACC or ACC_8BIT), ``b`` likewise.

    ``steps`` is a list of ``(AluOp, operand)``: an ``int`` operand is an immediate
    (``r = op(r, imm)``), the string ``"b"`` means the tensor ``b`` (``r = op(r, b)``); a
    :class:`Requant` in the list emits its tail (SHR, clip) on ``r``. With ``readback`` the
    result's lane bytes go to OUT elements ``out + k·n`` (:func:`emit_readback`), otherwise its
    low byte (the int8 result) to OUT elements ``out``. ``b_steps``, ``(AluOp, imm)`` pairs, run
    on the rows of ``b`` first (``b = op(b, imm)``).
    """
    uses_b = any(not isinstance(step, Requant) and step[1] == "b" for step in steps)
    if uses_b and b is None:
        raise ValueError("a step reads the tensor b, but no b was given")
    nbytes = lane_bytes(cfg) if readback else 0
    per_tile = 1 + uses_b + nbytes                      # a (result), b, the byte planes
    if tile_rows is None:
        tile_rows = min(n, cfg.acc_depth // (threads * per_tile), (1 << ITER_BITS) - 1)
    if tile_rows < 1 or threads * per_tile * tile_rows > cfg.acc_depth:
        raise PlanError(f"tile of {tile_rows} rows does not fit the {cfg.acc_depth}-row ACC "
                        f"scratchpad {threads * per_tile} times")
    if tile_rows >= 1 << ITER_BITS:
        raise PlanError(f"tile of {tile_rows} rows: an ALU loop runs at most "
                        f"{(1 << ITER_BITS) - 1} iterations (the {ITER_BITS}-bit iter fields)")
    builder = StreamBuilder(cfg)
    pipe = Pipeline(builder, threads=threads)
    pending = []
    for start in range(0, n, tile_rows):
        rows = min(tile_rows, n - start)
        base = pipe.begin_tile() * per_tile * tile_rows
        r_row, b_row = base, base + tile_rows
        scratch = base + (1 + uses_b) * tile_rows
        builder.load(a_mem, sram=r_row, dram=a + start, x_size=rows)
        if uses_b:
            builder.load(b_mem, sram=b_row, dram=b + start, x_size=rows)
            for op, imm in b_steps:
                builder.alu(_rows_kernel(b_row, b_row, rows), op, imm=imm)
        for step in steps:
            if isinstance(step, Requant):
                step.emit(builder, _rows_kernel(r_row, r_row, rows))
            elif step[1] == "b":
                builder.alu(_rows_kernel(r_row, b_row, rows), step[0])
            else:
                builder.alu(_rows_kernel(r_row, r_row, rows), step[0], imm=step[1])
        if readback:
            stores = emit_readback(builder, src=r_row, rows=rows, scratch=scratch,
                                   planes=[out + k * n + start for k in range(nbytes)])
        else:
            stores = [(r_row, out + start)]
        pipe.end_tile()
        pending.append((stores, rows))
        last = start + rows >= n
        # Store the oldest tile once ``threads`` tiles are computed, so that compute runs
        # ahead of store by one tile with two threads.
        while pending and (len(pending) == threads or last):
            done, count = pending.pop(0)
            pipe.begin_store()
            for sram, dram in done:
                builder.store(sram=sram, dram=dram, x_size=count)
            pipe.end_store()
    return builder.finish()


def elementwise(device, a, steps, b=None, *, a_8bit=False, threads=2, tile_rows=None):
    """Run ALU ``steps`` (:func:`build_elementwise`) on int32 tensor ``a`` (and ``b``) on
    ``device``; the int32 result.

    With ``a_8bit`` ``a`` is int8 and is loaded as ACC_8BIT (sign-extended, docs/isa.md §2).
    """
    cfg = device.cfg
    a_rows = _pack_rows(cfg, a, np.int8 if a_8bit else np.int32)
    n = a_rows.shape[0]
    uses_b = any(not isinstance(step, Requant) and step[1] == "b" for step in steps)
    b_rows = _pack_rows(cfg, b, np.int32) if uses_b else None
    nbytes = lane_bytes(cfg)
    a_mem = MemType.ACC_8BIT if a_8bit else MemType.ACC
    with device.scratch() as bufs:
        a_elem = bufs.upload(a_rows, mem=a_mem).elem(cfg, a_mem)
        b_elem = bufs.upload(b_rows, mem=MemType.ACC).elem(cfg, MemType.ACC) \
            if uses_b else None
        planes = bufs.alloc(nbytes * n * cfg.out_elem_bytes, mem=MemType.OUT)
        device.run(build_elementwise(cfg, n, steps, a_elem, planes.elem(cfg, MemType.OUT),
                                     b=b_elem, a_mem=a_mem, threads=threads,
                                     tile_rows=tile_rows))
        raw = device.read(planes, np.int8).reshape(nbytes, n, -1)
    return combine_planes(list(raw)).reshape(np.shape(a))


def feature_rows(cfg, shape):
    """ACC rows of an int8 ``[N, C, H, W]`` map in the packed OUT layout."""
    if len(shape) != 4:
        raise ValueError(f"expected an NCHW feature map, got shape {tuple(shape)}")
    n, c, h, w = shape
    if n % cfg.batch or c % cfg.block_out:
        raise PlanError(f"n = {n} and c = {c} must be multiples of BATCH = {cfg.batch} and "
                        f"BLOCK_OUT = {cfg.block_out} on {cfg.name!r}")
    return n * c * h * w // (cfg.batch * cfg.block_out)


def _exact_product(multiplier, second=0):
    """ALU steps that multiply an int8 lane by the integer ``multiplier`` exactly: a left shift
    by SCL's fraction bits, then SCL (⌊x · 2^15 · m / 2^15⌋ = x · m, docs/isa.md §3.4); with a
    ``second`` factor one more SCL, ⌊x · m · m2 / 2^15⌋."""
    steps = [(AluOp.SHR, -SCALE_FRACTION), (AluOp.SCL, multiplier)] if multiplier else []
    return steps + ([(AluOp.SCL, second)] if multiplier and second else [])


def build_add(cfg, shape, a, b, out, *, requant, shift_a=0, scale_a=0, scale_b=0, threads=2,
              tile_rows=None, scale_a2=0, scale_b2=0):
    """The program of one residual add of two int8 ``shape = (N, C, H, W)`` maps at ACC_8BIT
    elements ``a`` and ``b`` (``(N/B, C/BO, H, W, B, BO)``, conv2d's output layout): ``requant((a
    << shift_a) + b)`` (int32 sum) as int8 OUT elements at ``out``, in the same layout. The left
    shift is an SHR by ``−shift_a`` (inputs whose scales are 2^shift_a apart). With integer
    multipliers ``scale_a`` and ``scale_b`` (ALU SCL, ``ALU_SCALE`` 1 or 2) the sum is ``a · scale_a
    + b · scale_b`` instead, exactly; second factors ``scale_a2``, ``scale_b2`` make each term
    ``⌊x · scale · scale2 / 2^15⌋`` (docs/onnx.md)."""
    if (scale_a or scale_b) and (shift_a or not (scale_a and scale_b)):
        raise ValueError(f"an add scales its inputs by a shift or by two multipliers (shift_a "
                         f"{shift_a}, scale_a {scale_a}, scale_b {scale_b})")
    if (scale_a2 and not scale_a) or (scale_b2 and not scale_b):
        raise ValueError(f"a second factor follows a first one (scale_a {scale_a}, scale_a2 "
                         f"{scale_a2}, scale_b {scale_b}, scale_b2 {scale_b2})")
    rows = feature_rows(cfg, shape)
    steps = ([(AluOp.SHR, -shift_a)] if shift_a else []) + _exact_product(scale_a, scale_a2) \
        + [(AluOp.ADD, "b"), requant]
    return build_elementwise(cfg, rows, steps, a, out, b=b,
                             a_mem=MemType.ACC_8BIT, b_mem=MemType.ACC_8BIT, readback=False,
                             threads=threads, tile_rows=tile_rows,
                             b_steps=_exact_product(scale_b, scale_b2))


def add(device, a, b, *, requant, shift_a=0, scale_a=0, scale_b=0, threads=2, tile_rows=None,
        scale_a2=0, scale_b2=0):
    """int8 residual add of ``a[N, C, H, W]`` and ``b`` (same shape) on ``device``: ``requant``
    of the int32 sum ``(a << shift_a) + b`` (or ``a · scale_a + b · scale_b``); bit for bit
    :func:`~avta.runtime.ops.reference.add_ref`."""
    cfg = device.cfg
    a, b = np.asarray(a, np.int8), np.asarray(b, np.int8)
    if a.shape != b.shape:
        raise ValueError(f"add of tensors of shapes {a.shape} and {b.shape}; they must be equal")
    feature_rows(cfg, a.shape)
    with device.scratch() as s:
        a_buf = s.upload(pack_nchw(a, cfg.batch, cfg.block_out), mem=MemType.ACC_8BIT)
        b_buf = s.upload(pack_nchw(b, cfg.batch, cfg.block_out), mem=MemType.ACC_8BIT)
        out = s.alloc(a.size, mem=MemType.OUT)
        device.run(build_add(cfg, a.shape, a_buf.elem(cfg, MemType.ACC_8BIT),
                             b_buf.elem(cfg, MemType.ACC_8BIT), out.elem(cfg, MemType.OUT),
                             requant=requant, shift_a=shift_a, scale_a=scale_a,
                             scale_b=scale_b, threads=threads, tile_rows=tile_rows,
                             scale_a2=scale_a2, scale_b2=scale_b2))
        return device.read_nchw(out, *a.shape)
