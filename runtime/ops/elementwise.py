"""Element-wise ALU programs on int32 tensors, with all 32 bits of the result read back.

STORE writes only the low 8 bits of each ACC lane (docs/isa.md §3.2, OUT mirrors ACC). To see a whole
32-bit result the program also computes ``r >> 8``, ``r >> 16`` and ``r >> 24`` into scratch rows
(SHR with an immediate reads ACC[src] and writes ACC[dst], docs/isa.md §3.4) and stores the four byte
planes; the host reassembles them (:func:`combine_planes`).

:func:`elementwise` runs a chain of ALU steps over tensors in tiles, double buffered between the
compute and store stages; :func:`emit_readback` is the readback alone, for tests that fill ACC
another way (padded loads, GEMM).
"""

import numpy as np

from avta.isa.enums import AluOp, MemType

from ..pipeline import Pipeline
from ..stream import StreamBuilder
from ..uop_kernel import Loop, UopKernel

__all__ = ["elementwise", "emit_readback", "combine_planes", "lane_bytes"]


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


def elementwise(device, a, steps, b=None, *, a_8bit=False, threads=2, tile_rows=None):
    """Run ALU ``steps`` on int32 tensor ``a`` (and ``b``) on ``device``; the int32 result.

    ``steps`` is a list of ``(AluOp, operand)``: an ``int`` operand is an immediate
    (``r = op(r, imm)``), the string ``"b"`` means the tensor ``b`` (``r = op(r, b)``).
    With ``a_8bit`` ``a`` is int8 and is loaded as ACC_8BIT (sign-extended, docs/isa.md §2).
    """
    cfg = device.cfg
    a_rows = _pack_rows(cfg, a, np.int8 if a_8bit else np.int32)
    n = a_rows.shape[0]
    uses_b = any(operand == "b" for _, operand in steps)
    b_rows = _pack_rows(cfg, b, np.int32) if uses_b else None
    nbytes = lane_bytes(cfg)
    per_tile = 1 + uses_b + nbytes                      # a (result), b, the byte planes
    if tile_rows is None:
        tile_rows = min(n, cfg.acc_depth // (threads * per_tile))
    if tile_rows < 1 or threads * per_tile * tile_rows > cfg.acc_depth:
        raise ValueError(f"tile of {tile_rows} rows does not fit the {cfg.acc_depth}-row ACC "
                         f"scratchpad {threads * per_tile} times")
    a_mem = MemType.ACC_8BIT if a_8bit else MemType.ACC
    with device.scratch() as bufs:
        a_elem = bufs.upload(a_rows, mem=a_mem).elem(cfg, a_mem)
        b_elem = bufs.upload(b_rows, mem=MemType.ACC).elem(cfg, MemType.ACC) \
            if uses_b else None
        planes = bufs.alloc(nbytes * n * cfg.out_elem_bytes, mem=MemType.OUT)
        out_elem = planes.elem(cfg, MemType.OUT)
        builder = StreamBuilder(cfg)
        pipe = Pipeline(builder, threads=threads)
        pending = []
        for start in range(0, n, tile_rows):
            rows = min(tile_rows, n - start)
            base = pipe.begin_tile() * per_tile * tile_rows
            r_row, b_row = base, base + tile_rows
            scratch = base + (1 + uses_b) * tile_rows
            builder.load(a_mem, sram=r_row, dram=a_elem + start, x_size=rows)
            if uses_b:
                builder.load(MemType.ACC, sram=b_row, dram=b_elem + start, x_size=rows)
            for op, operand in steps:
                if operand == "b":
                    builder.alu(_rows_kernel(r_row, b_row, rows), op)
                else:
                    builder.alu(_rows_kernel(r_row, r_row, rows), op, imm=operand)
            stores = emit_readback(builder, src=r_row, rows=rows, scratch=scratch,
                                   planes=[out_elem + k * n + start for k in range(nbytes)])
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
        program = builder.finish()
        device.run(program)
        raw = device.read(planes, np.int8).reshape(nbytes, n, -1)
    return combine_planes(list(raw)).reshape(np.shape(a))
