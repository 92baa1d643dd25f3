"""The instruction stream builder: 2-D loads and stores, micro-op kernels, tokens, FINISH.

It follows upstream VTA's runtime: ``load``/``store`` are ``VTALoadBuffer2D`` and
``VTAStoreBuffer2D`` (with the pad value of docs/isa.md §3.1), ``gemm``/``alu`` run a
:class:`~avta.runtime.uop_kernel.UopKernel` (``VTAPushGEMMOp``/``VTAPushALUOp``), and
``dep_push``/``dep_pop`` are ``VTADepPush``/``VTADepPop``:

* ``dep_pop(frm, to)`` makes the next instruction of stage ``to`` pop a token of ``frm → to``
  (a pending pop of the same queue is first committed on a no-op);
* ``dep_push(frm, to)`` makes the latest instruction of stage ``frm`` push ``frm → to`` when it
  completes, or adds a no-op that does (when that instruction already pushes, or a pop is
  pending on ``frm`` and must come first).

:meth:`StreamBuilder.finish` appends upstream's closing sequence: the last load-stage and
store-stage instructions push to compute, a compute no-op pops every outstanding token, then
FINISH. The builder refuses anything that would make a program ill-formed (docs/isa.md §3 rules
(b)-(d) and the field widths of §2); rule (a), the ordering of every cross-stage hazard, is the
caller's job, and :mod:`avta.runtime.wellformed` checks it.
"""


from avta.isa.encoding import EncodeError, codec, finish as finish_insn
from avta.isa.enums import AluOp, MemType, Opcode, PadValue, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.legality import LOADABLE_MEMORY_TYPES, alu_ops
from avta.isa.memories import memory

from .program import Program
from .tokens import TokenError, TokenLedger, pop_flag, push_flag, token_queue
from .uop_kernel import KernelError, UopCache, UopKernel

__all__ = ["StreamBuilder", "StreamError", "noop_insn", "alu_insn"]

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


class StreamError(ValueError):
    """A request the builder refuses: it would make an ill-formed or unencodable program."""


def noop_insn(stage):
    """A token-only instruction of ``stage`` (x_size 0), encoded as upstream's ``PushNoop``."""
    if stage == L:
        return MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP)
    if stage == C:
        return MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP)
    return MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.UOP)


def alu_insn(kernel, op, *, imm=None, uop_bgn=0, uop_end=None):
    """The ALU instruction running ``kernel`` (a :class:`UopKernel`) from micro-op rows
    ``uop_bgn`` to ``uop_end`` (default: one per micro-op): ``op`` of ACC[src] and ``imm`` when
    given, else of ACC[dst] and ACC[src] (docs/isa.md §3.4). An ALU kernel's single loop is the
    inner one, as upstream's."""
    outer, inner = kernel.padded_loops(single_inner=True)
    return AluInsn(
        uop_bgn=uop_bgn, uop_end=uop_bgn + len(kernel.uops) if uop_end is None else uop_end, iter_out=outer.extent,
        iter_in=inner.extent, dst_factor_out=outer.dst_factor, dst_factor_in=inner.dst_factor,
        src_factor_out=outer.src_factor, src_factor_in=inner.src_factor, alu_opcode=AluOp(op),
        use_imm=int(imm is not None), imm=0 if imm is None else int(imm))


class StreamBuilder:
    """Builds one well-formed program for configuration ``cfg``.

    Parameters
    ----------
    cfg : Config
    merge_uop_loads : bool
        Extend the previous micro-op LOAD instead of adding one when a new kernel lands right
        after it in both the scratchpad and DRAM (the Intel Labs runtime's greedy micro-op loads).
    uop_start : int
        The micro-op scratchpad row where the first kernel goes (kernels fill upwards from there
        and wrap to row 0); the fuzzer uses it to reach the high rows.
    """

    def __init__(self, cfg, *, merge_uop_loads=True, uop_start=0):
        self._cfg = cfg
        self._codec = codec(cfg)
        self._insns = []
        self._ledger = TokenLedger(cfg.token_bits)
        self._pending = {L: set(), C: set(), S: set()}
        self._cache = UopCache(cfg.uop_depth, start=uop_start)
        self._merge = merge_uop_loads
        self._uops = []                 # the micro-op words in DRAM, relative to the uop buffer
        self._uop_dram = {}             # uops tuple -> offset in self._uops
        self._uop_loads = []            # ids of LOAD UOP instructions (dram_base is relative)
        self._last_uop_load = None      # (insn id, sram end, dram end)
        self._used_since_load = []      # uop rows read by GEMM/ALU since that LOAD
        self._finished = False
        self._widths = {cls: self._codec.field_widths(cls) for cls in (MemoryInsn, GemmInsn,
                                                                       AluInsn)}

    @property
    def cfg(self):
        return self._cfg

    @property
    def ledger(self):
        """The :class:`~avta.runtime.tokens.TokenLedger` of the instructions so far."""
        return self._ledger

    def __len__(self):
        return len(self._insns)

    # -- emitting ---------------------------------------------------------------------------

    def _emit(self, insn):
        if self._finished:
            raise StreamError("the program is finished; start a new StreamBuilder")
        stage = insn.stage
        pops = self._pending[stage]
        if pops:
            insn = insn.replace(**{pop_flag(*q): 1 for q in pops})
        self._encode_check(insn)
        i = self._ledger.add(stage, sorted(pops))
        pops.clear()
        self._insns.append(insn)
        return i

    def nop(self, stage):
        """Emit a token-only no-op of ``stage`` (pending pops attach to it); its index."""
        return self._emit(noop_insn(Stage(stage)))

    def raw(self, insn):
        """Emit ``insn`` exactly as given (pending pops still attach to it); its index.

        For forms the other methods refuse on purpose: zero-trip GEMM/ALU instructions and
        LOADs or kernels whose scratchpad indices wrap past the end (legal, docs/isa.md §3, but
        never what an operator means). The caller keeps the program well-formed; micro-ops a raw
        GEMM/ALU names must already be resident."""
        return self._emit(insn)

    def _encode_check(self, insn):
        try:
            self._codec.encode(insn)
        except EncodeError as error:
            raise StreamError(f"{error}; the instruction was {insn}") from None

    def _set_flag(self, i, name):
        self._insns[i] = self._insns[i].replace(**{name: 1})

    # -- tokens -------------------------------------------------------------------------------

    def dep_pop(self, frm, to):
        """The next instruction of stage ``to`` waits for (and takes) a token of ``frm → to``."""
        frm, to = token_queue(frm, to)       # refuses a pair that is not a token queue
        if (frm, to) in self._pending[to]:
            self._emit(noop_insn(to))
        if self._ledger.outstanding(frm, to) <= 0:
            raise StreamError(
                f"dep_pop({frm.name}, {to.name}) has no token to take: every "
                f"{frm.name}→{to.name} push is already popped, so the {to.name} stage would wait "
                f"forever; call dep_push({frm.name}, {to.name}) first")
        self._pending[to].add((frm, to))

    def pending_pop(self, frm, to):
        """Whether the next instruction of ``to`` will pop a token of ``frm → to``."""
        return token_queue(frm, to) in self._pending[to]

    def dep_push(self, frm, to):
        """Stage ``frm`` sends a token to ``to`` once everything it has been given so far is
        complete."""
        frm, to = token_queue(frm, to)
        flag = push_flag(frm, to)
        if self._pending[frm]:
            self._emit(noop_insn(frm))       # the pending pop must come before the push
        last = self._ledger.last(frm)
        if last is None or getattr(self._insns[last], flag):
            last = self._emit(noop_insn(frm))
        try:
            self._ledger.push(last, frm, to, keep_overflow=False)
        except TokenError as error:
            raise StreamError(str(error)) from None
        self._set_flag(last, flag)

    # -- data movement --------------------------------------------------------------------------

    def load(self, mem, *, sram, dram, x_size, y_size=1, x_stride=None, y_pad=(0, 0),
             x_pad=(0, 0), pad_value=PadValue.ZERO, wrap=False):
        """A 2-D LOAD (docs/isa.md §3.1) of ``y_size`` rows of ``x_size`` elements, ``x_stride``
        apart in DRAM (default ``x_size``), from element ``dram`` into rows from ``sram``, with
        ``y_pad = (top, bottom)`` and ``x_pad = (left, right)`` rows/elements of ``pad_value``.
        ``wrap`` lets the rows run past the scratchpad's end and wrap to row 0 (docs/isa.md §3).
        """
        if not isinstance(mem, MemType):
            mem = MemType(mem)
        if mem not in LOADABLE_MEMORY_TYPES:
            raise StreamError(f"cannot LOAD memory type {mem.name}; loadable: "
                              f"{', '.join(m.name for m in sorted(LOADABLE_MEMORY_TYPES))}")
        if x_stride is None:
            x_stride = x_size
        if pad_value not in PadValue._value2member_map_:
            raise StreamError(f"pad_value {pad_value!r} is not one of "
                              f"{', '.join(f'{p.name} {p.value}' for p in PadValue)}")
        if x_size < 1 or y_size < 1:
            raise StreamError(f"a LOAD moves at least one element (x_size {x_size}, y_size "
                              f"{y_size}); x_size 0 is reserved for token-only no-ops")
        pad_bits = self._widths[MemoryInsn]["y_pad_0"]
        for name, value in (("y_pad", y_pad), ("x_pad", x_pad)):
            if len(value) != 2 or not all(0 <= p < (1 << pad_bits) for p in value):
                raise StreamError(f"{name} = {value!r}: two pad counts in 0..{(1 << pad_bits) - 1}"
                                  f" (the {pad_bits}-bit pad fields)")
        rows = (x_pad[0] + x_size + x_pad[1]) * (y_pad[0] + y_size + y_pad[1])
        self._check_rows(mem, sram, rows, "LOAD", wrap=wrap)
        insn = MemoryInsn(opcode=Opcode.LOAD, memory_type=mem, sram_base=sram, dram_base=dram,
                          pad_value=pad_value, y_size=y_size, x_size=x_size,
                          x_stride=x_stride, y_pad_0=y_pad[0], y_pad_1=y_pad[1], x_pad_0=x_pad[0],
                          x_pad_1=x_pad[1])
        return self._emit(insn)

    def store(self, *, sram, dram, x_size, y_size=1, x_stride=None):
        """A 2-D STORE (docs/isa.md §3.2): OUT rows ``sram + y·x_size + x`` to DRAM elements
        ``dram + y·x_stride + x``."""
        if x_stride is None:
            x_stride = x_size
        if x_size < 1 or y_size < 1:
            raise StreamError(f"a STORE moves at least one element (x_size {x_size}, y_size "
                              f"{y_size})")
        if y_size > 1 and x_stride < x_size:
            raise StreamError(f"STORE rows overlap in DRAM (x_stride {x_stride} < x_size "
                              f"{x_size}): an element would be written twice (docs/isa.md §3 rule (d))")
        self._check_rows(MemType.OUT, sram, x_size * y_size, "STORE")
        return self._emit(MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT,
                                     sram_base=sram, dram_base=dram, y_size=y_size,
                                     x_size=x_size, x_stride=x_stride))

    def _check_rows(self, mem, sram, rows, what, *, wrap=False):
        pad = self._pad(mem)
        if wrap and 0 <= sram < pad.depth and rows <= pad.depth:
            return
        if sram < 0 or sram + rows > pad.depth:
            raise StreamError(f"{what} of {rows} {mem.name} rows from row {sram} runs past the "
                              f"{pad.depth}-row {pad.name} scratchpad (docs/isa.md §3 rule (d)); "
                              f"use a smaller tile")

    def _pad(self, mem):
        return memory(self._cfg, mem).scratchpad

    # -- compute --------------------------------------------------------------------------------

    def preload(self, kernel):
        """Make ``kernel`` resident now (a micro-op LOAD if it is not), so that a GEMM or ALU
        instruction running it later needs no LOAD of its own: a LOAD between an ALU and a GEMM
        instruction would keep them from running side by side (docs/architecture.md, compute
        stage)."""
        self._place(kernel)

    def gemm(self, kernel, *, reset=False, wrap=False, part=None):
        """A GEMM running ``kernel`` (docs/isa.md §3.3); ``reset`` zeroes the destination rows;
        ``wrap`` lets indices pass the scratchpads' ends and wrap (docs/isa.md §3). ``part`` =
        ``(start, stop)`` runs only those of the kernel's micro-ops (through every loop
        iteration): the parts of a kernel accumulate, in any order, what the whole kernel
        does."""
        dst, src, wgt = kernel.max_indices()
        self._check_index("GEMM", "dst (ACC)", dst, self._cfg.acc_depth, wrap)
        if not reset and not wrap:
            self._check_index("GEMM", "src (INP)", src, self._cfg.inp_depth)
            self._check_index("GEMM", "wgt (WGT)", wgt, self._cfg.wgt_depth)
        outer, inner = kernel.padded_loops(single_inner=False)
        begin, end = self._place(kernel)
        if part is not None:
            start, stop = part
            if not 0 <= start < stop <= end - begin:
                raise StreamError(f"GEMM part {part} is not a range of the kernel's "
                                  f"{end - begin} micro-ops")
            begin, end = begin + start, begin + stop
        return self._emit(GemmInsn(
            reset=int(bool(reset)), uop_bgn=begin, uop_end=end, iter_out=outer.extent,
            iter_in=inner.extent, dst_factor_out=outer.dst_factor,
            dst_factor_in=inner.dst_factor, src_factor_out=outer.src_factor,
            src_factor_in=inner.src_factor, wgt_factor_out=outer.wgt_factor,
            wgt_factor_in=inner.wgt_factor))

    def alu(self, kernel, op, *, imm=None, wrap=False):
        """An ALU instruction running ``kernel`` (docs/isa.md §3.4): ``op`` of ACC[src] and ``imm``
        when given, else of ACC[dst] and ACC[src]; ``wrap`` as for :meth:`gemm`."""
        op = AluOp(op)
        if op not in alu_ops(self._cfg):
            raise StreamError(f"ALU {op.name} needs the configuration key ALU_SCALE: 1 or 2 "
                              f"({self._cfg.name} has 0; docs/isa.md §3.4)")
        dst, src, _ = kernel.max_indices()
        self._check_index("ALU", "dst (ACC)", dst, self._cfg.acc_depth, wrap)
        self._check_index("ALU", "src (ACC)", src, self._cfg.acc_depth, wrap)
        if any(u.wgt_idx for u in kernel.uops) or any(lp.wgt_factor for lp in kernel.loops):
            raise StreamError("an ALU kernel has no weights: wgt indices and factors must be 0")
        begin, end = self._place(kernel)
        return self._emit(alu_insn(kernel, op, imm=imm, uop_bgn=begin, uop_end=end))

    def _check_index(self, what, name, value, depth, wrap=False):
        if value >= depth and not wrap:
            raise StreamError(f"{what} {name} index reaches {value} but the scratchpad has "
                              f"{depth} rows (strict mode would stop with error 10); check the "
                              f"kernel's micro-ops and loop factors")

    def _place(self, kernel):
        """Make ``kernel`` resident; its scratchpad rows ``(begin, end)``."""
        if not isinstance(kernel, UopKernel):
            raise StreamError(f"expected a UopKernel, got {type(kernel).__name__}")
        if kernel.uops not in self._uop_dram:   # a kernel seen before was checked then
            for u in kernel.uops:
                try:
                    self._codec.encode_uop(u)
                except EncodeError as error:
                    raise StreamError(f"micro-op {u}: {error}") from None
        try:
            where = self._cache.place(kernel.uops)
        except KernelError as error:
            raise StreamError(str(error)) from None
        if where.load:
            self._load_uops(kernel.uops, where.begin, where.end)
        self._used_since_load.append((where.begin, where.end))
        return where.begin, where.end

    def _load_uops(self, uops, begin, end):
        offset = self._uop_dram.get(uops)
        if offset is None:
            offset = len(self._uops)
            self._uop_dram[uops] = offset
            self._uops.extend(uops)
        n = end - begin
        last = self._last_uop_load
        max_x = (1 << self._widths[MemoryInsn]["x_size"]) - 1
        if (self._merge and last is not None and last[1] == begin and last[2] == offset
                and not any(b < end and begin < e for b, e in self._used_since_load)
                and self._insns[last[0]].x_size + n <= max_x):
            # Greedy micro-op loads: the earlier LOAD covers these rows too; no instruction
            # since then reads them, so loading them earlier changes nothing (§3, in order).
            i = last[0]
            size = self._insns[i].x_size + n
            self._insns[i] = self._insns[i].replace(x_size=size, x_stride=size)
            self._last_uop_load = (i, end, offset + n)
            return
        i = self._emit(MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=begin,
                                  dram_base=offset, y_size=1, x_size=n, x_stride=n))
        self._uop_loads.append(i)
        self._last_uop_load = (i, end, offset + n)
        self._used_since_load = []

    # -- the end --------------------------------------------------------------------------------

    def finish(self):
        """Append the closing token sequence and FINISH; the :class:`Program`.

        Upstream's ``Synchronize``: the last store-stage and load-stage
        instructions push a token to compute, and compute no-ops pop every outstanding token
        of L→C and S→C. Because the k-th pop waits for the k-th push, the last pop waits for the
        last instruction of each stage, so FINISH is ordered after everything (docs/isa.md §3 (c)).
        """
        for frm in (S, L):
            last = self._ledger.last(frm)
            if last is not None and not self._pending[frm] and getattr(
                    self._insns[last], push_flag(frm, C)):
                continue        # the last instruction already signals compute
            if last is not None or self._pending[frm]:
                self.dep_push(frm, C)
        queues = [(L, C), (S, C)]
        while any(self._ledger.outstanding(*q) - (q in self._pending[C]) > 0 for q in queues):
            for q in queues:
                if self._ledger.outstanding(*q) - (q in self._pending[C]) > 0:
                    self.dep_pop(*q)
            self._emit(noop_insn(C))
        if self._pending[C]:
            self._emit(noop_insn(C))
        self._emit(finish_insn())
        self._finished = True
        return Program(self._cfg, tuple(self._insns), tuple(self._uops),
                       tuple(self._uop_loads), self._ledger)
