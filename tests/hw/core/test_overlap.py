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


def _random_compute(rng, cfg, n_gemm_uops):
    """A GEMM (any of the first ``n_gemm_uops`` micro-ops, random reset, a few to a dozen
    steps; sometimes none, which the GEMM unit takes only when idle) or an ALU instruction
    (one micro-op of the rest, any op) over random rows."""
    if rng.random() < 0.1:
        return GemmInsn(opcode=Opcode.GEMM)
    if rng.random() < 0.55:
        u = rng.randrange(n_gemm_uops)
        return GemmInsn(opcode=Opcode.GEMM, reset=int(rng.random() < 0.2), uop_bgn=u,
                        uop_end=u + 1, iter_out=rng.randint(1, 2), iter_in=rng.randint(1, 12),
                        dst_factor_out=rng.randint(0, 16), dst_factor_in=1,
                        src_factor_out=rng.randint(0, 4), src_factor_in=1)
    u = n_gemm_uops + rng.randrange(2)
    return AluInsn(alu_opcode=rng.choice(alu_ops(cfg)), use_imm=rng.randint(0, 1),
                   imm=rng.randint(-8, 8), uop_bgn=u, uop_end=u + 1, iter_out=1,
                   iter_in=rng.randint(1, 12), dst_factor_in=1, src_factor_in=rng.randint(0, 1))


@pytest.mark.parametrize("seed", range(24))
def test_random_gemms_and_alus_equal_one_after_the_other(seed):
    """GEMMs and ALU instructions in a random order over random rows of both banks, some
    shared: an ALU instruction that starts while the GEMM before it drains, a GEMM that starts
    while the one before it drains, a GEMM beside an ALU instruction that a draining GEMM
    precedes (hw/core/compute.py, hw/core/stage_control.py). The DRAM image equals fsim's,
    which runs one instruction at a time."""
    rng = random.Random(1000 + seed)
    cfg = load_config("tiny")

    def rows():
        return rng.randrange(ROWS) if rng.random() < 0.5 else BANK + rng.randrange(ROWS)

    uops = [Uop(rows(), rng.randrange(STEPS), 0) for _ in range(3)]
    uops += [Uop(rows(), rows(), 0) for _ in range(2)]
    body = [_random_compute(rng, cfg, 3) for _ in range(rng.randint(3, 7))]
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, len(uops)),
        load(cfg, MemType.INP, INP, 0, 2 * STEPS),
        load(cfg, MemType.WGT, WGT, 0, 1),
        load(cfg, MemType.ACC, ACC, 0, ROWS),
        load(cfg, MemType.ACC, ACC + 0x400, BANK, ROWS),
        *body[:-1], body[-1].replace(push_next=1),
        store(cfg, OUT, 0, ROWS, pop_prev=1, push_prev=1),
        GemmInsn(opcode=Opcode.GEMM, pop_next=1),
        store(cfg, OUT + 0x100, BANK, ROWS),
        FINISH,
    ]
    compare(cfg, prog, uops, seed=seed)


def test_an_alu_pass_behind_a_draining_gemm_saves_the_drain():
    """GEMM, ALU, GEMM over rows of the other bank each: the ALU instruction starts while the
    first GEMM drains, and the second GEMM beside it, so the run is shorter than with an empty
    GEMM after the first one (which keeps the ALU until the first GEMM has completed) by the
    first GEMM's drain."""
    cfg = load_config("tiny")
    uops = [Uop(0, 0, 0), Uop(BANK + 8, 0, 0), Uop(BANK + 40, BANK + 40, 0)]

    def program(serial):
        first = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=STEPS,
                         dst_factor_in=1, src_factor_in=1)
        alu = AluInsn(alu_opcode=AluOp.SHR, use_imm=1, imm=1, uop_bgn=2, uop_end=3,
                      iter_out=1, iter_in=8, dst_factor_in=1, src_factor_in=1)
        second = GemmInsn(opcode=Opcode.GEMM, uop_bgn=1, uop_end=2, iter_out=1, iter_in=STEPS,
                          dst_factor_in=1, src_factor_in=1, push_next=1)
        # An empty GEMM cannot start while a GEMM drains (the unit completes in order), so it
        # keeps the ALU instruction behind the first GEMM's completion.
        gap = [GemmInsn(opcode=Opcode.GEMM)] if serial else []
        return [
            load(cfg, MemType.UOP, UOPS, 0, len(uops)),
            load(cfg, MemType.INP, INP, 0, STEPS),
            load(cfg, MemType.WGT, WGT, 0, 1),
            load(cfg, MemType.ACC, ACC, 0, ROWS),
            load(cfg, MemType.ACC, ACC + 0x400, BANK, ROWS),
            first, *gap, alu, second,
            store(cfg, OUT, 0, ROWS, pop_prev=1, push_prev=1),
            GemmInsn(opcode=Opcode.GEMM, pop_next=1),
            store(cfg, OUT + 0x100, BANK, ROWS),
            FINISH,
        ]

    got, _ = compare(cfg, program(False), uops)
    serial, _ = compare(cfg, program(True), uops)
    # The drain the second GEMM no longer waits for: s1 .. s(5+S) and the retirement.
    assert serial.cycles - got.cycles >= 4 + cfg.gemm_stages, (serial.cycles, got.cycles)


@pytest.mark.parametrize("back", range(4))
@pytest.mark.parametrize("op", [AluOp.SHR, AluOp.ADD])
@pytest.mark.parametrize("config", ["tiny", "default"])
def test_an_alu_pass_over_the_last_rows_a_draining_gemm_writes(config, back, op):
    """An ALU instruction right behind a GEMM over the row its last step (or one of the few
    before it, ``back``) writes, as src and dst: the ALU starts while the GEMM drains and must
    read that row after the GEMM writes it (hw/core/compute.py, the older steps; on
    ``default``, whose dot products have two pipeline registers, it waits for them)."""
    cfg = load_config(config)
    last = 10 + STEPS - 1 - back
    uops = [Uop(10, 0, 0), Uop(last, last, 0)]
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, len(uops)),
        load(cfg, MemType.INP, INP, 0, STEPS),
        load(cfg, MemType.WGT, WGT, 0, 1),
        load(cfg, MemType.ACC, ACC, 0, ROWS),
        GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=STEPS,
                 dst_factor_in=1, src_factor_in=1),
        AluInsn(alu_opcode=op, use_imm=int(op == AluOp.SHR), imm=1, uop_bgn=1, uop_end=2,
                iter_out=1, iter_in=1, push_next=1),
        store(cfg, OUT, 0, ROWS, pop_prev=1),
        FINISH,
    ]
    compare(cfg, prog, uops)
