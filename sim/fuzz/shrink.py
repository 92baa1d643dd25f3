"""Shrink a failing random program to a small reproducer (``avta fuzz`` does it before saving).

A random program has 20 to 600 instructions; the bug behind a mismatch usually needs a handful.
:func:`shrink` takes instructions away while the failure stays, in the manner of delta
debugging: first halves of the stream, then quarters, down to single instructions; then it
shortens what is left (loop counts, transfer sizes, pads).

An instruction is taken away by dropping it when it carries no token flag, and otherwise by
putting in its place a no-op of its stage with the same flags. The tokens, and so the order of
everything that remains, do not change (docs/isa.md §3): taking accesses away cannot make a race
(rule (a)) or an overflow (rule (b)). It can leave a read of a row that nothing writes any more
(rule (e)), which is why every candidate runs on a freshly reset tsim, whose scratchpads are zero
like a fresh fsim's. FINISH and instructions with an illegal opcode stay.
"""

import dataclasses
import time

from avta.isa.encoding import INSN_BYTES, codec
from avta.isa.enums import MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.runtime.stream import noop_insn

__all__ = ["Shrunk", "shrink", "with_insns"]

_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


@dataclasses.dataclass
class Shrunk:
    """What :func:`shrink` found: the smallest failing program, its reasons, the runs it took."""
    program: object
    reasons: list
    runs: int
    seconds: float


def with_insns(prog, insns):
    """``prog`` (a :class:`~.program.RandomProgram`) with its instruction stream replaced by
    ``insns``: same data, DRAM size and layout; nothing expected of its end."""
    image = bytearray(prog.image)
    start, old_end = prog.insn_addr, prog.insn_addr + len(prog.insns) * INSN_BYTES
    image[start:old_end] = bytes(old_end - start)
    blob = codec(prog.cfg).encode_program(insns)
    image[start:start + len(blob)] = blob
    extra = prog.insn_count - len(prog.insns)       # fetch past the end of DRAM, if planted
    return dataclasses.replace(prog, image=bytes(image), insns=tuple(insns),
                               insn_count=len(insns) + extra, expect=None)


def shrink(prog, fails, *, max_runs=300, max_seconds=120.0):
    """The smallest variant of ``prog`` found on which ``fails(candidate)`` (a list of reasons,
    empty when the targets agree) stays non-empty; None when ``prog`` itself does not fail
    under ``fails`` (its failure needed what ran before it)."""
    start = time.perf_counter()
    runs = 0

    def check(insns):
        nonlocal runs
        runs += 1
        return fails(with_insns(prog, insns))

    def budget_left():
        return runs < max_runs and time.perf_counter() - start < max_seconds

    insns = list(prog.insns)
    reasons = check(insns)
    if not reasons:
        return None
    chunk = max(1, len(insns) // 2)
    while budget_left():
        k = 0
        while k < len(insns) - 1 and budget_left():
            candidate = _take_away(insns, k, k + chunk)
            found = check(candidate) if candidate != insns else []
            if found:
                insns, reasons = candidate, found       # the rest moved up to position k
            else:
                k += chunk
        if chunk == 1:
            break
        chunk //= 2
    merged = _merge_noops(insns)
    if len(merged) < len(insns) and budget_left():
        found = check(merged)
        if found:
            insns, reasons = merged, found
    for k in range(len(insns)):
        for smaller in _smaller(insns[k]):
            if not budget_left():
                break
            candidate = insns[:k] + [smaller] + insns[k + 1:]
            found = check(candidate)
            if found:
                insns, reasons = candidate, found
                break
    return Shrunk(with_insns(prog, insns), reasons, runs, time.perf_counter() - start)


def _take_away(insns, lo, hi):
    """``insns`` with those in ``[lo, hi)`` dropped, or no-ops with their token flags."""
    out = []
    for k, insn in enumerate(insns):
        if not lo <= k < hi or _stays(insn):
            out.append(insn)
            continue
        flags = {f: getattr(insn, f) for f in _FLAGS}
        if any(flags.values()):
            out.append(noop_insn(insn.stage).replace(**flags))
    return out


def _is_noop(insn):
    return isinstance(insn, MemoryInsn) and not insn.x_size and not _stays(insn)


def _merge_noops(insns):
    """Each no-op folded into the next instruction of its stage when that one is a no-op too
    and their flags are disjoint. Pops act at the start and pushes at the end, so a pop of the
    second may not move before a push of the first (that could deadlock); anything else is
    the same two steps in one."""
    out = list(insns)
    k = 0
    while k < len(out):
        a = out[k]
        nxt = next((j for j in range(k + 1, len(out)) if not _stays(out[j])
                    and out[j].stage == a.stage), None) if _is_noop(a) else None
        if nxt is not None and _is_noop(out[nxt]):
            b = out[nxt]
            pushes_a = a.push_prev or a.push_next
            pops_b = b.pop_prev or b.pop_next
            if not (pushes_a and pops_b) and not any(getattr(a, f) and getattr(b, f)
                                                     for f in _FLAGS):
                out[nxt] = b.replace(**{f: getattr(a, f) | getattr(b, f) for f in _FLAGS})
                del out[k]
                continue
        k += 1
    return out


def _stays(insn):
    """FINISH, and instructions made illegal on purpose (they may have no stage)."""
    if insn.opcode not in (Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.ALU):
        return True
    return isinstance(insn, MemoryInsn) and insn.memory_type not in MemType._value2member_map_


def _smaller(insn):
    """Smaller forms of one instruction, the smallest first."""
    if isinstance(insn, (GemmInsn, AluInsn)) and insn.opcode != Opcode.FINISH:
        one = dict(iter_out=min(insn.iter_out, 1), iter_in=min(insn.iter_in, 1),
                   uop_end=min(insn.uop_end, insn.uop_bgn + 1))
        forms = [insn.replace(**one)] + [insn.replace(**{k: v}) for k, v in one.items()]
    elif isinstance(insn, MemoryInsn) and insn.x_size:
        one = dict(y_size=1, x_size=1, y_pad_0=0, y_pad_1=0, x_pad_0=0, x_pad_1=0)
        forms = [insn.replace(**one), insn.replace(y_size=1), insn.replace(x_size=1),
                 insn.replace(y_pad_0=0, y_pad_1=0, x_pad_0=0, x_pad_1=0)]
    else:
        return []
    return [f for f in dict.fromkeys(forms) if f != insn]
