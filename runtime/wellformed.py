"""Check that a program is well-formed (docs/isa.md §3 rules (a)-(e)), independently of any simulator.

The checker replays the tokens (:class:`~avta.runtime.tokens.TokenLedger`) along one legal
interleaving to learn which instruction surely happens before which, then walks the same
interleaving with every scratchpad row and DRAM byte each instruction reads or writes:

(a) every read-after-write, write-after-read and write-after-write between two stages, on a row of
    INP, WGT or OUT (ACC and UOP belong to the compute stage alone) or on a DRAM byte, must be
    ordered by tokens — it suffices to check the latest access of each other stage, since program
    order orders the earlier ones;
(b) no push may take a counter past 2^TOKEN_BITS − 1 under any interleaving (the ledger's bound);
(c) the stream ends with FINISH, ordered after every other instruction;
(d) no LOAD writes more rows than the scratchpad holds, no STORE writes a DRAM element twice;
(e) no instruction reads a row that nothing has written (optionally: since ``written``, the rows
    that earlier runs left behind).

Rows past a scratchpad's end are reported too (strict mode's error 10). Micro-op contents come
from the program's micro-op buffer, so GEMM and ALU index sets are exact.
"""

from dataclasses import dataclass

import numpy as np

from avta.isa.encoding import codec
from avta.isa.enums import AluOp, MemType, Opcode, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.memories import elem_bytes, memory, scratchpads

from .tokens import QUEUES, TokenError, TokenLedger, pop_flag, push_flag

__all__ = ["Violation", "check_wellformed", "check_stream", "WellFormedError"]

_SHARED = ("inp", "wgt", "out")      # scratchpads that two stages touch


@dataclass(frozen=True)
class Violation:
    """Rule (a)-(e) or ``index``/``deadlock`` broken at instruction ``insn``."""
    rule: str
    insn: int
    message: str

    def __str__(self):
        return f"rule ({self.rule}) at instruction {self.insn}: {self.message}"


class WellFormedError(AssertionError):
    """A program that is not well-formed; ``violations`` lists why."""

    def __init__(self, violations):
        self.violations = violations
        more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
        super().__init__("; ".join(map(str, violations[:5])) + more)


def check_wellformed(program, *, written=None, raise_error=False, wrap=False):
    """The :class:`Violation` list of a :class:`~avta.runtime.program.Program` (empty when it is
    well-formed). ``wrap`` takes scratchpad indices modulo the depth, as the RTL and fsim's
    non-strict mode do (docs/isa.md §3, index wrapping), instead of reporting them."""
    words = np.array([codec(program.cfg).encode_uop(u) for u in program.uops], dtype=np.uint64)
    found = check_stream(program.cfg, program.link(0), words, written=written, wrap=wrap)
    if found and raise_error:
        raise WellFormedError(found)
    return found


def _schedule(cfg, insns, found):
    """A legal interleaving (stage by stage, earliest stream index first) and its ledger."""
    ledger = TokenLedger(cfg.token_bits)
    queues = {s: [i for i, insn in enumerate(insns) if insn.stage == s] for s in Stage}
    heads = dict.fromkeys(Stage, 0)
    counters = dict.fromkeys(QUEUES, 0)
    order = []
    while True:
        ready = []
        for s in Stage:
            if heads[s] < len(queues[s]):
                i = queues[s][heads[s]]
                pops = [q for q in QUEUES if q[1] == s and getattr(insns[i], pop_flag(*q))]
                if all(counters[q] for q in pops):
                    ready.append((i, s, pops))
        if not ready:
            break
        i, s, pops = min(ready)
        heads[s] += 1
        for q in pops:
            counters[q] -= 1
        lid = ledger.add(s, pops)
        for q in QUEUES:
            if q[0] == s and getattr(insns[i], push_flag(*q)):
                counters[q] += 1
                try:
                    ledger.push(lid, *q)
                except TokenError as error:
                    found.append(Violation("b", i, str(error)))
        order.append(i)
    for s in Stage:
        if heads[s] < len(queues[s]):
            found.append(Violation("deadlock", queues[s][heads[s]],
                                   f"the {s.name} stage waits forever on a token"))
    return order, ledger


class _Rows:
    """Per-row bookkeeping of one scratchpad: the last writer and last reader of each stage."""

    def __init__(self, depth, written):
        self.depth = depth
        self.writer = np.full(depth, -1, dtype=np.int64)
        self.reader = np.full((3, depth), -1, dtype=np.int64)
        self.written = np.zeros(depth, dtype=bool)
        if written is not None:
            self.written[np.asarray(written, dtype=np.int64)] = True


class _Walker:
    def __init__(self, cfg, insns, words, ledger, order, written, found, *, wrap=False):
        self.cfg, self.insns, self.found = cfg, insns, found
        self.uop_fields = codec(cfg).decode_uop_array(words) if len(words) else None
        self.n_words = len(words)
        self.rows = {name: _Rows(pad.depth, (written or {}).get(name))
                     for name, pad in scratchpads(cfg).items()}
        self.uop_sram = np.zeros((3, cfg.uop_depth), dtype=np.int64)
        self.order = order
        self.lid = {i: k for k, i in enumerate(order)}
        self.start = np.array([ledger.start(k) for k in range(len(order))], dtype=np.int64) \
            .reshape(-1, 3)
        self.stage = np.array([ledger.stage(k) for k in range(len(order))], dtype=np.int64)
        self.pos = np.array([ledger.position(k) for k in range(len(order))], dtype=np.int64)
        self.dram = []          # (lid, stage, is_write, starts, ends)
        self.wrap = wrap        # scratchpad indices modulo the depth (check_wellformed)

    def report(self, rule, i, message):
        if len(self.found) < 1000:
            self.found.append(Violation(rule, i, message))

    def ordered(self, earlier, x):
        """Vectorized: is each ledger id in ``earlier`` (−1: none) ordered before ``x``?"""
        earlier = np.asarray(earlier)
        safe = np.where(earlier < 0, 0, earlier)
        ok = self.start[x][self.stage[safe]] > self.pos[safe]
        return ok | (earlier < 0)

    def access(self, i, name, rows, write, *, first_write=None, steps=None):
        """Instruction ``i`` reads or writes rows ``rows`` (an index array) of scratchpad
        ``name``; for a read inside the instruction that writes, ``first_write``/``steps``
        give the step at which each row is first written and at which it is read."""
        pad = self.rows[name]
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return
        if rows.max() >= pad.depth or rows.min() < 0:
            self.report("index", i, f"{name.upper()} row {int(rows.max())} is past the "
                                    f"{pad.depth}-row scratchpad (strict mode: error 10)")
            rows = rows[(rows >= 0) & (rows < pad.depth)]
        x, stage = self.lid[i], self.insns[i].stage
        if name in _SHARED:
            if not write:
                w = pad.writer[rows]
                cross = (w >= 0) & (self.stage[np.where(w < 0, 0, w)] != stage)
                bad = cross & ~self.ordered(w, x)
                if bad.any():
                    self._hazard(i, name, rows[bad][0], w[bad][0], "read-after-write")
                pad.reader[stage, rows] = x
            else:
                w = pad.writer[rows]
                cross = (w >= 0) & (self.stage[np.where(w < 0, 0, w)] != stage)
                bad = cross & ~self.ordered(w, x)
                if bad.any():
                    self._hazard(i, name, rows[bad][0], w[bad][0], "write-after-write")
                for s in Stage:
                    if s != stage:
                        r = pad.reader[s, rows]
                        bad = ~self.ordered(r, x)
                        if bad.any():
                            self._hazard(i, name, rows[bad][0], r[bad][0], "write-after-read")
        if write:
            pad.writer[rows] = x
        else:
            unwritten = ~pad.written[rows]
            if first_write is not None:
                unwritten &= ~(first_write[rows] < steps)
            if unwritten.any():
                self.report("e", i, f"reads {name.upper()} row {int(rows[unwritten][0])}, which "
                                    f"nothing has written")

    def mark_written(self, name, rows):
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[(rows >= 0) & (rows < self.rows[name].depth)]
        self.rows[name].written[rows] = True

    def _hazard(self, i, name, row, other_lid, kind):
        other = self.order[other_lid]
        self.report("a", i, f"{kind} on {name.upper()} row {int(row)} with instruction {other} "
                            f"({Stage(self.insns[other].stage).name}) is not ordered by tokens")


def _load_rows(insn):
    w = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    h = insn.y_pad_0 + insn.y_size + insn.y_pad_1
    return insn.sram_base + np.arange(w * h, dtype=np.int64), w, h


def _steps(walker, insn, i):
    """``(dst, src, wgt)`` of every step of a GEMM/ALU, from the resident micro-ops."""
    n_u = max(0, insn.uop_end - insn.uop_bgn)
    if insn.iter_out == 0 or insn.iter_in == 0 or n_u == 0:
        return None
    u = np.arange(insn.uop_bgn, insn.uop_end)
    walker.access(i, "uop", u, False)
    base = walker.uop_sram[:, u[u < walker.cfg.uop_depth]]
    o = np.arange(insn.iter_out)[:, None, None]
    n = np.arange(insn.iter_in)[None, :, None]
    dst = (base[0][None, None, :] + o * insn.dst_factor_out + n * insn.dst_factor_in).ravel()
    src = (base[1][None, None, :] + o * insn.src_factor_out + n * insn.src_factor_in).ravel()
    wgt = None
    if isinstance(insn, GemmInsn):
        wgt = (base[2][None, None, :] + o * insn.wgt_factor_out + n * insn.wgt_factor_in).ravel()
    if walker.wrap:
        cfg = walker.cfg
        dst = dst % cfg.acc_depth
        if isinstance(insn, GemmInsn):
            src, wgt = src % cfg.inp_depth, wgt % cfg.wgt_depth
        else:
            src = src % cfg.acc_depth
    return dst, src, wgt


def _first_write(depth, dst):
    first = np.full(depth, np.iinfo(np.int64).max, dtype=np.int64)
    ok = (dst >= 0) & (dst < depth)
    rows, idx = np.unique(dst[ok], return_index=True)
    first[rows] = np.nonzero(ok)[0][idx]
    return first


def check_stream(cfg, insns, uop_words, *, written=None, wrap=False):
    """The :class:`Violation` list of instruction list ``insns`` whose micro-op LOADs read
    ``uop_words`` (micro-op words indexed by DRAM element; base registers 0); ``wrap`` as in
    :func:`check_wellformed`."""
    found = []
    if not insns or insns[-1] != GemmInsn(opcode=Opcode.FINISH):
        found.append(Violation("c", len(insns) - 1, "the stream does not end with FINISH"))
    order, ledger = _schedule(cfg, insns, found)
    walk = _Walker(cfg, insns, np.asarray(uop_words), ledger, order, written, found, wrap=wrap)
    if found and any(v.rule == "deadlock" for v in found):
        return found
    last = len(insns) - 1
    if insns and insns[-1].opcode == Opcode.FINISH:
        x = walk.lid[last]
        for i in range(last):
            if not ledger.ordered(walk.lid[i], x):
                found.append(Violation("c", i, "not ordered before FINISH by tokens"))
                break
    for i in order:
        insn = insns[i]
        if isinstance(insn, MemoryInsn):
            _memory(walk, cfg, insn, i)
        elif isinstance(insn, (GemmInsn, AluInsn)) and insn.opcode != Opcode.FINISH:
            _compute(walk, cfg, insn, i)
    _dram_hazards(walk)
    return found


def _memory(walk, cfg, insn, i):
    if insn.x_size == 0:
        return
    if insn.opcode == Opcode.STORE:
        rows = insn.sram_base + np.arange(insn.x_size * insn.y_size, dtype=np.int64)
        if walk.wrap:
            rows = rows % walk.rows["out"].depth
        walk.access(i, "out", rows, False)
        if insn.y_size > 1 and insn.x_stride < insn.x_size:
            walk.report("d", i, "the STORE writes DRAM elements twice (x_stride < x_size)")
        _dram(walk, cfg, insn, i, MemType.OUT, True)
        return
    rows, w, h = _load_rows(insn)
    mem = MemType(insn.memory_type)
    name = memory(cfg, mem).scratchpad.name
    if walk.wrap:
        rows = rows % walk.rows[name].depth
    if w * h > walk.rows[name].depth:
        walk.report("d", i, f"the LOAD writes {w * h} rows, more than the "
                            f"{walk.rows[name].depth}-row scratchpad")
    _dram(walk, cfg, insn, i, mem, False)
    walk.access(i, name, rows, True)
    walk.mark_written(name, rows)
    if name == "acc":
        walk.access(i, "out", rows, True)
        walk.mark_written("out", rows)
    if mem == MemType.UOP:
        r = np.arange(h)[:, None] - insn.y_pad_0
        c = np.arange(w)[None, :] - insn.x_pad_0
        inside = (r >= 0) & (r < insn.y_size) & (c >= 0) & (c < insn.x_size)
        elem = (insn.dram_base + r * insn.x_stride + c).ravel()
        inside = inside.ravel() & (elem < walk.n_words)
        ok = rows < cfg.uop_depth
        for f in range(3):
            values = np.zeros(rows.size, dtype=np.int64)
            if walk.uop_fields is not None:
                values[inside] = walk.uop_fields[f][elem[inside]]
            walk.uop_sram[f, rows[ok]] = values[ok]


def _compute(walk, cfg, insn, i):
    steps = _steps(walk, insn, i)
    if steps is None:
        return
    dst, src, wgt = steps
    order = np.arange(dst.size)
    first = _first_write(cfg.acc_depth, dst)
    if isinstance(insn, GemmInsn):
        if not insn.reset:
            walk.access(i, "inp", src, False)
            walk.access(i, "wgt", wgt, False)
            walk.access(i, "acc", dst, False)       # accumulates: reads before writing
    else:
        walk.access(i, "acc", src, False, first_write=first, steps=order)
        reads_dst = not insn.use_imm and insn.alu_opcode != AluOp.MOV
        if reads_dst:
            walk.access(i, "acc", dst, False)
    walk.access(i, "acc", dst, True)
    walk.mark_written("acc", dst)
    walk.access(i, "out", dst, True)
    walk.mark_written("out", dst)


def _dram(walk, cfg, insn, i, mem, write):
    size = elem_bytes(cfg, mem)
    rows = np.arange(insn.y_size, dtype=np.int64)
    starts = (insn.dram_base + rows * insn.x_stride) * size
    walk.dram.append((walk.lid[i], i, write, starts, starts + insn.x_size * size))


def _dram_hazards(walk):
    """Rule (a) on DRAM bytes: STOREs (store stage) against LOADs of the other stages."""
    writes = [d for d in walk.dram if d[2]]
    if not writes:
        return
    w_lid = np.concatenate([np.full(d[3].size, d[0]) for d in writes])
    w_idx = np.concatenate([np.full(d[3].size, d[1]) for d in writes])
    w_start = np.concatenate([d[3] for d in writes])
    w_end = np.concatenate([d[4] for d in writes])
    for lid, i, _, starts, ends in (d for d in walk.dram if not d[2]):
        hit = (w_start[None, :] < ends[:, None]) & (starts[:, None] < w_end[None, :])
        if not hit.any():
            continue
        other = w_lid[hit.any(axis=0)]
        # Either order is a hazard unless tokens fix it one way.
        fwd = walk.ordered(other, lid)
        back = np.array([walk.start[o][walk.stage[lid]] > walk.pos[lid] for o in other])
        bad = ~(fwd | back)
        if bad.any():
            j = int(w_idx[hit.any(axis=0)][bad][0])
            walk.report("a", i, f"reads DRAM bytes that STORE {j} writes, in no order fixed "
                                f"by tokens")
