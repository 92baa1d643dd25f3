"""The instructions of a random program (a part of :class:`.program._Generator`).

Each method emits one kind of instruction through the generator's
:class:`~avta.runtime.stream.StreamBuilder` ``b`` with random but legal content, and marks the
scratchpad rows it writes in ``valid``, so later instructions read only rows this program wrote
(docs/isa.md §3 rule (e)): LOADs (:meth:`~InstructionGenerators.load`), GEMMs, ALU ops and their
kernels (:meth:`~InstructionGenerators.kernel`), STOREs, and zero-trip GEMM/ALUs.
"""

import numpy as np

from avta.isa.encoding import codec
from avta.isa.enums import AluOp, MemType, PadValue
from avta.isa.formats import IMM_BITS, PAD_BITS
from avta.isa.insn import AluInsn, GemmInsn
from avta.isa.legality import alu_ops
from avta.isa.memories import elem_bytes, memory
from avta.runtime.uop_kernel import Loop, UopKernel

__all__ = ["InstructionGenerators"]

#: Caps that keep one program well under a second on the RTL (the corners raise them).
_MAX_LOAD_ROWS, _MAX_STEPS, _LONG_STEPS = 128, 256, 4096
_IMM_MIN, _IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1


class InstructionGenerators:
    """Instruction generators of :class:`.program._Generator`.

    Uses the generator's ``cfg``, ``rng``, ``corners``, ``lean``, ``threads``, builder ``b``,
    written-rows masks ``valid``, buffers ``parts``, ``factor_max``, the input tensors ``src``
    and the output region (``out_*``, :class:`.layout.ImageLayout`).
    """

    def zero_trip(self):
        """A GEMM or ALU that runs no step: iter_out, iter_in or its micro-op range is 0, and
        every other field random (none of them may matter, docs/isa.md §3.3)."""
        rng, cfg = self.rng, self.cfg
        cls = rng.choice((GemmInsn, AluInsn))
        widths = codec(cfg).field_widths(cls)
        fields = {name: rng.randrange(1 << widths[name])
                  for name in ("iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
                               "src_factor_out", "src_factor_in")}
        fields["iter_out"] %= 64
        fields["iter_in"] %= 64
        which = rng.choice(("iter_out", "iter_in", "uops"))
        begin = rng.randrange(cfg.uop_depth)
        end = begin if which == "uops" else min(cfg.uop_depth, begin + rng.randint(1, 8))
        if which != "uops":
            fields[which] = 0
        if cls is GemmInsn:
            fields |= {name: rng.randrange(1 << widths[name])
                       for name in ("wgt_factor_out", "wgt_factor_in")}
            insn = GemmInsn(reset=rng.randint(0, 1), uop_bgn=begin, uop_end=end, **fields)
        else:
            op = rng.choice(alu_ops(cfg))
            insn = AluInsn(uop_bgn=begin, uop_end=end, alu_opcode=op, use_imm=rng.randint(0, 1),
                           imm=self.imm(op), **fields)
        self.b.raw(insn)

    # -- instructions ------------------------------------------------------------------------------

    def load(self, mem, part, source):
        """A random 2-D LOAD of ``mem`` into rows of ``part`` from ``source`` (dram element,
        count); marks the rows written."""
        rng, (lo, hi), (base, n) = self.rng, part, source
        big = "big tensors" in self.corners and rng.random() < 0.5
        cap = hi - lo if big else min(hi - lo, _MAX_LOAD_ROWS)
        pad_max = (1 << PAD_BITS) - 1
        for _ in range(50):
            if big:     # many rows, long rows, strides far beyond the row
                y = rng.choice((1, 2, rng.randint(3, 16), rng.randint(17, 64)))
                x = rng.choice((rng.randint(1, 16), rng.randint(17, 128), rng.randint(129, 512)))
                stride = x if y == 1 or rng.random() < 0.3 else x + rng.choice(
                    (rng.randint(1, 32), rng.randint(86, 2048)))
            else:
                y = rng.choice((1, 1, 1, 2, 3, 4, rng.randint(5, 8)))
                x = rng.choice((1, 2, 3, 4, rng.randint(5, 16), rng.randint(17, 64)))
                stride = x if y == 1 or rng.random() < 0.4 else x + rng.choice(
                    (1, 2, 3, rng.randint(4, 32)))
            if (y - 1) * stride + x > n:
                continue
            pads = [0] * 4
            if rng.random() < 0.5:
                pads = [rng.choice((0, 0, 1, 2, rng.randint(0, pad_max))) for _ in range(4)]
            rows = (pads[2] + x + pads[3]) * (pads[0] + y + pads[1])
            if rows <= cap:
                break
        else:
            y = x = stride = 1
            pads, rows = [0] * 4, 1
        name = memory(self.cfg, mem).scratchpad.name
        depth = len(self.valid[name])
        wrap = "wrap" in self.corners and hi - lo == depth and rows > 1 and rng.random() < 0.3
        if wrap:        # the rows run past the end and go on from row 0 (docs/isa.md §3)
            sram = rng.randint(depth - rows + 1, depth - 1)
        else:
            sram = hi - rows if rng.random() < 0.25 else rng.randint(lo, hi - rows)
        dram = base + rng.randint(0, n - ((y - 1) * stride + x))
        self.b.load(mem, sram=sram, dram=dram, x_size=x, y_size=y, x_stride=stride,
                    y_pad=tuple(pads[:2]), x_pad=tuple(pads[2:]),
                    pad_value=rng.choice(list(PadValue)), wrap=wrap)
        self.valid[name][(sram + np.arange(rows)) % depth] = True

    def init_acc(self, acc_part):
        """Write some ACC rows of the buffer without reading any: a LOAD or a GEMM reset."""
        r = self.rng.random()
        if r < 0.6:
            mem = MemType.ACC if r < 0.35 else MemType.ACC_8BIT
            self.load(mem, self.parts["acc"][acc_part], self.src[mem])
        else:
            self.gemm(None, acc_part, reset=True)

    def readback(self, tile, acc_part):
        """LOAD ACC or ACC_8BIT of output that STOREs already wrote: those of the tiles at least
        ``threads`` back, which this tile's S→C pop waits for (docs/isa.md §3 rule (a) on DRAM)."""
        if tile < self.threads or not self.out_after_tile[tile - self.threads]:
            return False
        ready = self.out_after_tile[tile - self.threads] * self.cfg.out_elem_bytes
        mem = MemType.ACC_8BIT if self.rng.random() < 0.7 else MemType.ACC
        size = elem_bytes(self.cfg, mem)
        if ready < size:
            return False
        self.load(mem, self.parts["acc"][acc_part],
                  (self.out_buf.addr // size, ready // size))
        return True

    def gemm(self, part, acc_part, *, reset):
        """A GEMM into buffer ``acc_part``, reading INP/WGT buffer ``part`` (any rows when it
        resets, since then it reads none)."""
        acc, cfg = self.valid["acc"], self.cfg
        whole = {name: (0, len(self.valid[name])) for name in ("inp", "wgt")}
        dims = [(self.parts["acc"][acc_part], None if reset else acc, self.factor_max["acc"],
                 cfg.acc_depth)]
        for name in ("inp", "wgt"):
            rows = whole[name] if part is None else self.parts[name][part]
            dims.append((rows, None if reset else self.valid[name], self.factor_max[name],
                         len(self.valid[name])))
        kernel = self.kernel(dims)
        if kernel is None:
            return False
        dst, src, wgt = kernel.max_indices()
        wrap = dst >= cfg.acc_depth or src >= cfg.inp_depth or wgt >= cfg.wgt_depth
        self.b.gemm(kernel, reset=reset, wrap=wrap)
        acc[kernel.indices()[0] % cfg.acc_depth] = True
        return True

    def alu(self, acc_part):
        """An ALU op into buffer ``acc_part``, reading written ACC rows anywhere."""
        rng, acc, depth = self.rng, self.valid["acc"], self.cfg.acc_depth
        op = rng.choice(alu_ops(self.cfg))
        use_imm = rng.random() < 0.5
        reads_dst = not use_imm and op != AluOp.MOV
        fmax = self.factor_max["acc"]
        dims = [(self.parts["acc"][acc_part], acc if reads_dst else None, fmax, depth),
                ((0, depth), acc, fmax, depth)]
        kernel = self.kernel(dims, near=True)
        if kernel is None:
            return False
        wrap = max(kernel.max_indices()[:2]) >= depth
        self.b.alu(kernel, op, imm=self.imm(op) if use_imm else None, wrap=wrap)
        acc[kernel.indices()[0] % depth] = True
        return True

    def imm(self, op):
        """An immediate: small mostly, also the extremes of the signed field; for SHR shifts
        both ways, some beyond ±32 (only the low 6 bits count, docs/isa.md §3.4)."""
        rng, r = self.rng, self.rng.random()
        if op == AluOp.SHR and r < 0.8:
            return rng.randint(-31, 31) if r < 0.6 else rng.randint(-64, 64)
        if r < 0.5:
            return rng.randint(-128, 127)
        if r < 0.7:
            return rng.randint(-2048, 2047)
        if r < 0.85:
            return rng.randint(_IMM_MIN, _IMM_MAX)
        return rng.choice((_IMM_MIN, _IMM_MAX, -1, 0, 1))

    def store(self, acc_part):
        """A random 2-D STORE of written OUT rows of buffer ``acc_part`` to fresh DRAM."""
        rng, (lo, hi), out = self.rng, self.parts["acc"][acc_part], self.valid["acc"]
        room = self.out_cap - self.out_next
        tall = "tall stores" in self.corners and rng.random() < 0.5
        for attempt in range(30):
            y = rng.choice((1, 1, 2, 3, 4)) if attempt < 25 else 1
            if tall and attempt < 25:
                y = rng.randint(5, 16)
            x = rng.choice((1, 2, 3, 4, rng.randint(5, 32))) if attempt < 25 else 1
            stride = x if y == 1 or rng.random() < 0.4 else x + rng.randint(1, 4)
            rows, span = x * y, (y - 1) * stride + x
            if rows > hi - lo or span > room:
                continue
            sram = self._base(lo, hi - rows + 1, out)
            if sram is not None and out[sram:sram + rows].all():
                break
        else:
            return
        dram = self.out_base + self.out_next
        self.b.store(sram=sram, dram=dram, x_size=x, y_size=y, x_stride=stride)
        self.out_next += span + rng.choice((0, 0, 1, 2))
    # -- kernels ---------------------------------------------------------------------------------

    def kernel(self, dims, *, near=False):
        """A random :class:`UopKernel` whose index ``k`` stays in row range ``dims[k][0]`` and,
        where ``dims[k][1]`` (a written-rows mask) is given, reads only written rows; factor
        ``k`` at most ``dims[k][2]``; ``dims[k][3]`` is the scratchpad's depth. ``near`` puts
        the source rows close to the destination rows, so steps read results of earlier steps.
        With the "long kernels" corner the loops run up to 255 times; with "wrap", an index
        whose range is the whole scratchpad may run past its end and wrap. None when nothing
        fits after some tries."""
        rng = self.rng
        long = "long kernels" in self.corners and rng.random() < 0.4
        wrap = "wrap" in self.corners and rng.random() < 0.3
        for _ in range(30):
            n = rng.choice((1, 1, 1, 2, 3, 4, rng.randint(5, 8)))
            if long:
                extents = [rng.randint(17, 255)] + [rng.randint(1, 16)] * (rng.random() < 0.5)
                rng.shuffle(extents)
            else:
                extents = [rng.choice((1, 2, 3, 3, rng.randint(4, 8), rng.randint(9, 16)))
                           for _ in range(rng.choice((0, 1, 2)))]
            if n * int(np.prod(extents)) > (_LONG_STEPS if long else _MAX_STEPS):
                continue
            cols = []
            for k, ((lo, hi), valid, fmax, depth) in enumerate(dims):
                spread = min(hi - lo, rng.choice((1, 2, 4, 8)))
                offsets = [rng.randrange(spread) for _ in range(n)]
                if wrap and hi - lo == depth:
                    factors = [rng.choice((0, 1, rng.randint(0, fmax))) for _ in extents]
                    cols.append((rng.randrange(depth), offsets, factors))
                    continue
                factors = [self._factor(e, hi - lo, fmax) for e in extents]
                span = max(offsets) + sum((e - 1) * f for e, f in zip(extents, factors))
                if span >= hi - lo:
                    break
                base = None
                if near and k == 1 and rng.random() < 0.6:
                    base = min(max(cols[0][0] + rng.randint(-3, 3), lo), hi - span - 1)
                    if valid is not None and not valid[base]:
                        base = None
                if base is None:
                    base = self._base(lo, hi - span, valid)
                if base is None:
                    break
                cols.append((base, offsets, factors))
            else:
                depths = [d[3] for d in dims] + [1] * (3 - len(dims))
                cols += [(0, [0] * n, [0] * len(extents))] * (3 - len(cols))
                uops = [tuple((c[0] + c[1][i]) % d for c, d in zip(cols, depths))
                        for i in range(n)]
                loops = [Loop(e, *(c[2][j] for c in cols)) for j, e in enumerate(extents)]
                kernel = UopKernel(uops, loops)
                rows = kernel.indices()
                if all(valid is None or valid[rows[k] % depth].all()
                       for k, (_, valid, _, depth) in enumerate(dims)):
                    return kernel
        return None

    def _factor(self, extent, size, fmax):
        """A loop factor: zero, small, or big enough to stride across the buffer; with extent 1
        it moves no index but still fills its field, at its maximum with the "factor max"
        corner (or at any extent whose rows still fit)."""
        rng, r = self.rng, self.rng.random()
        if "factor max" in self.corners and r < 0.3 and (extent - 1) * fmax < size:
            return fmax
        if r < 0.25:
            f = 0
        elif r < 0.55:
            f = 1
        elif r < 0.85 or extent == 1:
            f = rng.randint(2, 4)
        else:
            f = rng.randint(5, max(5, size // (2 * (extent - 1))))
        return min(f, fmax, (size - 1) // max(1, extent - 1))

    def _base(self, lo, top, valid):
        """A first row in ``[lo, top)``: flush with the end a quarter of the time; a written
        row when ``valid`` (a mask) is given; None when there is none."""
        if top <= lo:
            return None
        rng = self.rng
        if valid is None:
            return top - 1 if rng.random() < 0.25 else rng.randrange(lo, top)
        rows = np.flatnonzero(valid[lo:top])
        if not rows.size:
            return None
        return lo + int(rows[-1] if rng.random() < 0.25 else rows[rng.randrange(rows.size)])

