"""Coverage of random programs: which instruction forms, pads, ops, hazards and corners they use.

:func:`coverage` works from the instructions (a :class:`RandomProgram` or a runtime
:class:`Program`) and, for a :class:`RandomProgram`, its layout (base registers, addresses, the
planted error), so ``avta fuzz`` can report what a campaign exercised. :data:`ISA_FEATURES` are
the instruction set's forms; :data:`CORNER_FEATURES` the corners of :mod:`.corners` as they
show in a program, and :data:`RUN_FEATURES` what only a run shows (the fuzzer adds those).
"""

from collections import Counter

import numpy as np

from avta.isa.config import INSN_QUEUE_DEPTH
from avta.isa.encoding import INSN_BYTES, codec
from avta.isa.costs import reused_src_steps
from avta.isa.enums import AluOp, MemType, Opcode, PadValue, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.legality import alu_ops
from avta.isa.memories import DRAM_PAGE_BYTES, elem_bytes, memories, memory
from avta.runtime.program import Program
from avta.runtime.tokens import QUEUES

from .errors import ERROR_KINDS
from .program import RandomProgram

__all__ = ["ISA_FEATURES", "CORNER_FEATURES", "RUN_FEATURES", "coverage", "isa_features"]

#: Before the corners, every address of a random program lay below this.
_LOW_ADDRESSES = 24 << 10

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE

def isa_features(cfg=None):
    """Every instruction-set feature :func:`coverage` reports for programs of ``cfg``: the ALU
    operations are those it has (:func:`avta.isa.legality.alu_ops`; ``None``: upstream's)."""
    names = ["LOAD UOP", "STORE", "STORE multi-row", "STORE stride>x", "STORE last row",
             "GEMM", "GEMM reset", "GEMM factors", "GEMM multi-uop", "GEMM dst repeats",
             "ALU imm negative", "ALU imm wide", "ALU SHR imm negative", "ALU SHR imm positive",
             "ALU src after dst", "ALU src reused", "LOAD readback", "NOP LOAD", "NOP COMPUTE", "NOP STORE",
             "FINISH", "overlap L->C", "overlap C->S", "INP last row", "WGT last row",
             "ACC last row"]
    for mem in ("INP", "WGT", "ACC", "ACC_8BIT"):
        names += [f"LOAD {mem}{what}" for what in ("", " multi-row", " stride>x", " y_pad",
                                                   " x_pad", " pad ZERO", " pad MIN", " pad MAX")]
    names += [f"{op} loops {n}" for n in range(3) for op in ("GEMM", "ALU")]
    names += [f"ALU {op.name} {how}" for op in alu_ops(cfg) for how in ("imm", "two-operand")]
    return tuple(names)


#: Every instruction-set feature :func:`coverage` reports on a configuration without SCL; many
#: seeds of :func:`random_program` cover them all (:func:`isa_features` for any configuration).
ISA_FEATURES = isa_features()

#: The corners as they show in a program. "token counter full" needs a narrow counter
#: (``TOKEN_BITS`` ≤ 3); "queue full" is read from the stream: more than INSN_QUEUE_DEPTH
#: instructions of one stage right behind one of its instructions that waits on a token.
CORNER_FEATURES = (
    "GEMM loop >16", "ALU loop >16", "GEMM >256 steps", "ALU >256 steps", "GEMM zero-trip",
    "ALU zero-trip", "LOAD >128 rows", "LOAD stride>85", "STORE y>4", "micro-op rows past half",
    "micro-op last row", "factor at field max", "token count >2", "token counter full",
    "queue full LOAD", "queue full STORE", "image not page-multiple", "address >24 KiB",
    "LOAD crosses 4 KiB", "STORE crosses 4 KiB", "stream crosses 4 KiB", "stream at DRAM end",
    "non-zero base", "base not element-aligned", "LOAD wraps", "kernel wraps",
) + tuple(f"ends {kind}" for kind in ERROR_KINDS)

#: Features only a run shows; :func:`avta.sim.fuzz.runner.fuzz` counts them.
RUN_FEATURES = ("tsim reused after an error",)


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
        peaks = [program.ledger.peak(frm, to) for frm, to in QUEUES]
        if max(peaks) > 2:
            found["token count >2"] += 1
        if max(peaks) == (1 << cfg.token_bits) - 1:
            found["token counter full"] += 1
        _queue_features(program.insns, found)
        if isinstance(item, RandomProgram):
            _layout_features(item, found)
    return found


def _queue_features(insns, found):
    """More than a queue's worth of one stage's instructions right behind one that pops."""
    stage, behind = None, None      # instructions of ``stage`` queued behind one that pops
    for insn in insns:
        if insn.stage != stage:
            stage, behind = insn.stage, None
        elif behind is not None:
            behind += 1
            if behind == INSN_QUEUE_DEPTH + 1 and stage != C:
                found[f"queue full {stage.name}"] += 1
        if behind is None and (insn.pop_prev or insn.pop_next):
            behind = 0


def _layout_features(rp, found):
    """Features of where a :class:`RandomProgram` lies in DRAM and how it must end."""
    cfg = rp.cfg
    if len(rp.image) % DRAM_PAGE_BYTES:
        found["image not page-multiple"] += 1
    stream_end = rp.insn_addr + len(rp.insns) * INSN_BYTES
    if stream_end == rp.dram_size:
        found["stream at DRAM end"] += 1
    if rp.insn_addr // DRAM_PAGE_BYTES != (stream_end - 1) // DRAM_PAGE_BYTES:
        found["stream crosses 4 KiB"] += 1
    if any(rp.bases.values()):
        found["non-zero base"] += 1
    if any(value % max(info.elem_bytes for info in memories(cfg).values() if info.base == key)
           for key, value in rp.bases.items()):
        found["base not element-aligned"] += 1
    if rp.error is not None:
        found[f"ends {rp.error}"] += 1
    top = 0
    for insn in rp.insns:
        if not isinstance(insn, MemoryInsn) or not insn.x_size \
                or insn.memory_type not in MemType._value2member_map_:
            continue        # no-ops, and instructions made illegal on purpose
        size = elem_bytes(cfg, MemType.OUT if insn.opcode == Opcode.STORE else insn.memory_type)
        start = rp.address(insn) + (insn.dram_base + np.arange(insn.y_size, dtype=np.int64)
                                    * insn.x_stride) * size
        end = start + insn.x_size * size
        top = max(top, int(end.max()))
        if np.any(start // DRAM_PAGE_BYTES != (end - 1) // DRAM_PAGE_BYTES):
            found[f"{'STORE' if insn.opcode == Opcode.STORE else 'LOAD'} crosses 4 KiB"] += 1
    if max(top, stream_end) > _LOW_ADDRESSES:
        found["address >24 KiB"] += 1



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
        if insn.opcode == Opcode.LOAD and insn.x_stride > 85:
            found["LOAD stride>85"] += 1
    if insn.opcode == Opcode.STORE and insn.y_size > 4:
        found["STORE y>4"] += 1
    size = elem_bytes(cfg, MemType.OUT if insn.opcode == Opcode.STORE else mem)
    rows = [((insn.dram_base + y * insn.x_stride) * size,
             (insn.dram_base + y * insn.x_stride + insn.x_size) * size)
            for y in range(insn.y_size)]
    if insn.opcode == Opcode.STORE:
        stored += rows
        if insn.sram_base + insn.rows == cfg.acc_depth:
            found["STORE last row"] += 1
        return
    nrows = insn.rows
    if mem == MemType.UOP:
        if insn.sram_base + nrows > cfg.uop_depth // 2:
            found["micro-op rows past half"] += 1
        if insn.sram_base + nrows == cfg.uop_depth:
            found["micro-op last row"] += 1
        return
    if nrows > 128:
        found["LOAD >128 rows"] += 1
    if insn.y_pad_0 or insn.y_pad_1:
        found[f"{name} y_pad"] += 1
    if insn.x_pad_0 or insn.x_pad_1:
        found[f"{name} x_pad"] += 1
    if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
        found[f"{name} pad {PadValue(insn.pad_value).name}"] += 1
    pad = memory(cfg, mem).scratchpad
    if insn.sram_base + nrows == pad.depth:
        found[f"{pad.name.upper()} last row"] += 1
    if insn.sram_base + nrows > pad.depth:
        found["LOAD wraps"] += 1
    if pad.name == "acc" and any(
            a < end and start < b for a, b in rows for start, end in stored):
        found["LOAD readback"] += 1


def _compute_features(cfg, insn, resident, found):
    name = insn.op.name
    found[f"{name} loops {(insn.iter_out > 1) + (insn.iter_in > 1)}"] += 1
    if max(insn.iter_out, insn.iter_in) > 16:
        found[f"{name} loop >16"] += 1
    if insn.steps > 256:
        found[f"{name} >256 steps"] += 1
    if insn.iter_out == 0 or insn.iter_in == 0 or insn.uop_end <= insn.uop_bgn:
        found[f"{name} zero-trip"] += 1
    elif any(getattr(insn, field) == (1 << width) - 1
             for field, width in codec(cfg).field_widths(type(insn)).items()
             if "factor" in field):
        found["factor at field max"] += 1
    if isinstance(insn, AluInsn):
        op = AluOp(insn.alu_opcode).name
        found[f"ALU {op} {'imm' if insn.use_imm else 'two-operand'}"] += 1
        if insn.use_imm and insn.imm < 0:
            found["ALU imm negative"] += 1
        if insn.use_imm and not -128 <= insn.imm < 128:
            found["ALU imm wide"] += 1
        if insn.use_imm and op == "SHR" and insn.imm:
            found[f"ALU SHR imm {'negative' if insn.imm < 0 else 'positive'}"] += 1
        if not insn.use_imm and op != "MOV" and reused_src_steps(cfg, insn):
            # Steps that read only ACC[dst], the src row held from the step before.
            found["ALU src reused"] += 1
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
    if dst.max() >= cfg.acc_depth or src.max() >= (
            cfg.inp_depth if isinstance(insn, GemmInsn) else cfg.acc_depth):
        found["kernel wraps"] += 1
    if isinstance(insn, GemmInsn) and not insn.reset and np.unique(dst).size < dst.size:
        found["GEMM dst repeats"] += 1
    if isinstance(insn, AluInsn):
        # A source row that an earlier step of the same instruction wrote: forwarding.
        first = {}
        for k, d in enumerate(dst.tolist()):
            first.setdefault(d, k)
        if any(first.get(r, k) < k for k, r in enumerate(src.tolist())):
            found["ALU src after dst"] += 1
