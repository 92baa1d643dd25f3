"""GEMM beside a detached ALU instruction (hw/core/compute.py): the result is the one of running
them one after the other, whatever rows they share, and they overlap only when the GEMM's rows are
in an ACC bank the ALU does not use (hw/core/banks.py: a bank has one write and one read port).

Each program loads micro-ops, INP, WGT and 64 ACC rows at the start of each of ACC's two banks,
runs one ALU instruction over some rows and then one GEMM over others, and stores those rows; fsim runs it one instruction at a time and
the DRAM images must agree byte for byte (tests/hw/core/test_core.py's ``compare``)."""

import random

import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, Uop
from avta.isa.legality import alu_ops
from avta.isa.memories import scratchpad

from .test_core import ACC, FINISH, INP, OUT, UOPS, WGT, compare, load, store

ROWS = 64          # ACC rows loaded and stored at the start of each bank
STEPS = 24         # rows each instruction walks
BANK = scratchpad(load_config("tiny"), "acc").bank_rows     # the first row of ACC's bank 1
DEPTH = scratchpad(load_config("tiny"), "acc").depth


def _program(cfg, alu_uops, gemm_dst, *, alu_op=AluOp.SHR, use_imm=1):
    """ALU over ``STEPS`` rows from micro-ops ``alu_uops`` (each ``(dst, src)``; dst and src
    step by one row), then a GEMM accumulating into ``STEPS`` rows from ``gemm_dst``."""
    uops = [Uop(gemm_dst, 0, 0)] + [Uop(d, s, 0) for d, s in alu_uops]
    n_alu = len(alu_uops)
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, len(uops)),
        load(cfg, MemType.INP, INP, 0, STEPS),
        load(cfg, MemType.WGT, WGT, 0, 1),
        load(cfg, MemType.ACC, ACC, 0, ROWS),
        load(cfg, MemType.ACC, ACC + 0x400, BANK, ROWS),
        AluInsn(alu_opcode=alu_op, use_imm=use_imm, imm=1, uop_bgn=1, uop_end=1 + n_alu,
                iter_out=1, iter_in=STEPS // n_alu, dst_factor_in=1, src_factor_in=1),
        GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=STEPS,
                 dst_factor_in=1, src_factor_in=1, push_next=1),
        store(cfg, OUT, 0, ROWS, pop_prev=1),
        store(cfg, OUT + 0x100, BANK, ROWS, push_prev=1),
        GemmInsn(opcode=Opcode.GEMM, pop_next=1),          # FINISH after both stores
        FINISH,
    ]
    return prog, uops


CASES = {
    # name: (ALU micro-ops (dst, src), GEMM dst, overlaps)
    "other-bank": ([(0, 0)], BANK + 8, True),
    "same-bank-other-rows": ([(0, 0)], 32, False),
    "alu-in-both-banks": ([(BANK - 12, BANK - 12)], BANK + 32, False),
    "gemm-writes-alu-dst": ([(0, 0)], 10, False),
    "gemm-writes-alu-src": ([(40, 0)], 8, False),
    "alu-reads-gemm-rows": ([(0, 30)], 34, False),
    "several-uops": ([(0, 0), (12, 12)], 32, False),
    # The bound's edge (compute.py asks first + span < depth): the ALU's last row is ACC's
    # last, so its rows are bounded to bank 1; one row further they wrap into bank 0 (row 0),
    # so they are not bounded and the GEMM waits.
    "alu-ends-at-last-row": ([(DEPTH - STEPS, DEPTH - STEPS)], 8, True),
    "alu-wraps-past-last-row": ([(DEPTH - STEPS + 1, DEPTH - STEPS + 1)], 8, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gemm_after_alu_equals_one_after_the_other(case):
    cfg = load_config("tiny")
    alu_uops, gemm_dst, overlaps = CASES[case]
    prog, uops = _program(cfg, alu_uops, gemm_dst)
    got, _ = compare(cfg, prog, uops)
    # Serial: an empty GEMM between them retires only after the ALU, so the real GEMM starts
    # after the ALU's last write. Overlapped, the two step streams share cycles, and the run is
    # shorter by most of the ALU's STEPS cycles.
    serial, _ = compare(cfg, prog[:6] + [GemmInsn(opcode=Opcode.GEMM)] + prog[6:], uops)
    saved = serial.cycles - got.cycles
    if overlaps:
        assert saved >= STEPS // 2, (serial.cycles, got.cycles)
    else:
        # Only the GEMM's start and loop fill (a few cycles) happen beside the ALU.
        assert saved <= 4, (serial.cycles, got.cycles)


def test_two_operand_alu_and_wrapping_indices():
    """A two-operand ADD whose dst walks past the end of ACC (indices wrap, docs/isa.md §3)
    over rows the GEMM writes: the GEMM must wait, and the result is still the serial one."""
    cfg = load_config("tiny")
    depth = 256
    prog, uops = _program(cfg, [(depth - 8, 5)], 2, alu_op=AluOp.ADD, use_imm=0)
    compare(cfg, prog, uops)


@pytest.mark.parametrize("seed", range(16))
def test_random_alu_then_gemms_equal_one_after_the_other(seed):
    """A random ALU instruction (one micro-op or two, any op, factors that may run past the end
    of ACC and wrap) and two GEMMs after it over random rows: the DRAM image equals fsim's."""
    rng = random.Random(seed)
    cfg = load_config("tiny")
    depth = 256
    n_alu = rng.choice((1, 1, 1, 2))
    uops = [Uop(rng.randrange(ROWS), rng.randrange(STEPS), 0) for _ in range(2)]
    # ALU rows mostly among the GEMMs' (rows 0..ROWS), sometimes near the end of ACC.
    uops += [Uop(*(rng.randrange(ROWS if rng.random() < 0.8 else depth) for _ in range(2)), 0)
             for _ in range(n_alu)]
    op = rng.choice(alu_ops(cfg))
    alu = AluInsn(alu_opcode=op, use_imm=rng.randint(0, 1), imm=rng.randint(-8, 8),
                  uop_bgn=2, uop_end=2 + n_alu, iter_out=rng.randint(1, 4),
                  iter_in=rng.randint(1, 8), dst_factor_out=rng.randint(0, 40),
                  dst_factor_in=rng.randint(0, 3), src_factor_out=rng.randint(0, 40),
                  src_factor_in=rng.randint(0, 3))
    gemms = [GemmInsn(opcode=Opcode.GEMM, uop_bgn=u, uop_end=u + 1, iter_out=1,
                      iter_in=rng.randint(1, 16), dst_factor_in=1, src_factor_in=1)
             for u in (0, 1)]
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, len(uops)),
        load(cfg, MemType.INP, INP, 0, 2 * STEPS),
        load(cfg, MemType.WGT, WGT, 0, 1),
        load(cfg, MemType.ACC, ACC, 0, ROWS),
        alu, *gemms[:1], gemms[1].replace(push_next=1),
        store(cfg, OUT, 0, ROWS, pop_prev=1),
        FINISH,
    ]
    compare(cfg, prog, uops, seed=seed)
