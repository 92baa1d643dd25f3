"""ISA coverage of random programs: which instruction forms, pads, ops and hazards they use.

:func:`coverage` works from the instructions alone (a :class:`RandomProgram` or a runtime
:class:`Program`), so ``avta fuzz`` can report what a campaign exercised.
"""

from collections import Counter

import numpy as np

from avta.isa.enums import AluOp, MemType, Opcode, PadValue, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.memories import elem_bytes, memory
from avta.runtime.program import Program

from .program import RandomProgram

__all__ = ["ISA_FEATURES", "coverage"]

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE

def _isa_features():
    names = ["LOAD UOP", "STORE", "STORE multi-row", "STORE stride>x", "STORE last row",
             "GEMM", "GEMM reset", "GEMM factors", "GEMM multi-uop", "GEMM dst repeats",
             "ALU imm negative", "ALU imm wide", "ALU SHR imm negative", "ALU SHR imm positive",
             "ALU src after dst", "LOAD readback", "NOP LOAD", "NOP COMPUTE", "NOP STORE",
             "FINISH", "overlap L->C", "overlap C->S", "INP last row", "WGT last row",
             "ACC last row"]
    for mem in ("INP", "WGT", "ACC", "ACC_8BIT"):
        names += [f"LOAD {mem}{what}" for what in ("", " multi-row", " stride>x", " y_pad",
                                                   " x_pad", " pad ZERO", " pad MIN", " pad MAX")]
    names += [f"{op} loops {n}" for n in range(3) for op in ("GEMM", "ALU")]
    names += [f"ALU {op.name} {how}" for op in AluOp for how in ("imm", "two-operand")]
    return tuple(names)


#: Every feature :func:`coverage` can report; many seeds of :func:`random_program` cover them all.
ISA_FEATURES = _isa_features()


def coverage(programs):
    """How often each feature of :data:`ISA_FEATURES` occurs (a :class:`Counter` by name) in a
    :class:`RandomProgram`, a :class:`Program`, or a list of them."""
    if isinstance(programs, (RandomProgram, Program)):
        programs = [programs]
    found = Counter()
    for item in programs:
        program = item.program if isinstance(item, RandomProgram) else item
        cfg = program.cfg
        stored = []         # DRAM byte ranges that earlier STOREs wrote
        # The micro-op scratchpad as the program fills it, to see each step's rows.
        resident = np.zeros((3, cfg.uop_depth), dtype=np.int64)
        uops = np.array([(u.dst_idx, u.src_idx, u.wgt_idx) for u in program.uops],
                        dtype=np.int64).reshape(-1, 3).T
        for insn in program.insns:
            if insn.opcode == Opcode.FINISH:
                found["FINISH"] += 1
            elif isinstance(insn, MemoryInsn):
                _memory_features(cfg, insn, stored, found)
                if insn.stage == C and insn.memory_type == MemType.UOP and insn.x_size:
                    resident[:, insn.sram_base:insn.sram_base + insn.x_size] = \
                        uops[:, insn.dram_base:insn.dram_base + insn.x_size]
            else:
                _compute_features(cfg, insn, resident, found)
        for frm, to in ((L, C), (C, S)):
            if program.ledger.peak(frm, to) >= 2:      # the producer can run a task ahead
                found[f"overlap {frm.name[0]}->{to.name[0]}"] += 1
    return found


def _memory_features(cfg, insn, stored, found):
    if insn.x_size == 0:
        found[f"NOP {insn.stage.name}"] += 1
        return
    mem = MemType(insn.memory_type)
    name = "STORE" if insn.opcode == Opcode.STORE else f"LOAD {mem.name}"
    found[name] += 1
    if insn.y_size > 1:
        found[f"{name} multi-row"] += 1
        if insn.x_stride > insn.x_size:
            found[f"{name} stride>x"] += 1
    size = elem_bytes(cfg, MemType.OUT if insn.opcode == Opcode.STORE else mem)
    rows = [((insn.dram_base + y * insn.x_stride) * size,
             (insn.dram_base + y * insn.x_stride + insn.x_size) * size)
            for y in range(insn.y_size)]
    if insn.opcode == Opcode.STORE:
        stored += rows
        if insn.sram_base + insn.rows == cfg.acc_depth:
            found["STORE last row"] += 1
        return
    if mem == MemType.UOP:
        return
    if insn.y_pad_0 or insn.y_pad_1:
        found[f"{name} y_pad"] += 1
    if insn.x_pad_0 or insn.x_pad_1:
        found[f"{name} x_pad"] += 1
    if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
        found[f"{name} pad {PadValue(insn.pad_value).name}"] += 1
    pad = memory(cfg, mem).scratchpad
    if insn.sram_base + insn.rows == pad.depth:
        found[f"{pad.name.upper()} last row"] += 1
    if pad.name == "acc" and any(
            a < end and start < b for a, b in rows for start, end in stored):
        found["LOAD readback"] += 1


def _compute_features(cfg, insn, resident, found):
    name = insn.op.name
    found[f"{name} loops {(insn.iter_out > 1) + (insn.iter_in > 1)}"] += 1
    if isinstance(insn, AluInsn):
        op = AluOp(insn.alu_opcode).name
        found[f"ALU {op} {'imm' if insn.use_imm else 'two-operand'}"] += 1
        if insn.use_imm and insn.imm < 0:
            found["ALU imm negative"] += 1
        if insn.use_imm and not -128 <= insn.imm < 128:
            found["ALU imm wide"] += 1
        if insn.use_imm and op == "SHR" and insn.imm:
            found[f"ALU SHR imm {'negative' if insn.imm < 0 else 'positive'}"] += 1
    else:
        found["GEMM reset" if insn.reset else "GEMM"] += 1
        if (insn.iter_out > 1 and (insn.dst_factor_out or insn.src_factor_out
                                   or insn.wgt_factor_out)) or \
                (insn.iter_in > 1 and (insn.dst_factor_in or insn.src_factor_in
                                       or insn.wgt_factor_in)):
            found["GEMM factors"] += 1
        if insn.uop_end - insn.uop_bgn > 1:
            found["GEMM multi-uop"] += 1
    if insn.iter_out == 0 or insn.iter_in == 0 or insn.uop_end <= insn.uop_bgn:
        return
    u = resident[:, insn.uop_bgn:insn.uop_end]
    o, i = np.arange(insn.iter_out)[:, None, None], np.arange(insn.iter_in)[None, :, None]
    dst = (u[0] + o * insn.dst_factor_out + i * insn.dst_factor_in).ravel()
    src = (u[1] + o * insn.src_factor_out + i * insn.src_factor_in).ravel()
    if dst.max() == cfg.acc_depth - 1:
        found["ACC last row"] += 1
    if isinstance(insn, GemmInsn) and not insn.reset and np.unique(dst).size < dst.size:
        found["GEMM dst repeats"] += 1
    if isinstance(insn, AluInsn):
        # A source row that an earlier step of the same instruction wrote: forwarding.
        first = {}
        for k, d in enumerate(dst.tolist()):
            first.setdefault(d, k)
        if any(first.get(r, k) < k for k, r in enumerate(src.tolist())):
            found["ALU src after dst"] += 1
