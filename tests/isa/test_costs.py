"""The cost model's rule for a reused ALU src row (avta.isa.costs, docs/isa.md §3.4) against the
loop nest step by step."""

import random

import pytest

from avta.isa import costs
from avta.isa.config import load_config
from avta.isa.enums import AluOp
from avta.isa.insn import AluInsn


def src_rows(insn, depth):
    """The src row offset of every step of a one-micro-op instruction, in order."""
    return [(o * insn.src_factor_out + i * insn.src_factor_in) % depth
            for o in range(insn.iter_out) for i in range(insn.iter_in)]


@pytest.mark.parametrize("seed", range(40))
def test_reused_steps_are_the_steps_whose_src_row_stays(seed):
    cfg = load_config("tiny")
    depth = cfg.acc_depth
    rng = random.Random(seed)
    insn = AluInsn(alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=rng.choice([1, 1, 1, 2]),
                   iter_out=rng.randrange(0, 5), iter_in=rng.randrange(0, 7),
                   src_factor_out=rng.choice([0, 1, 2, 4, depth // 2, depth - 2]),
                   src_factor_in=rng.choice([0, 0, 1, 2, depth // 2]))
    rows = src_rows(insn, depth)
    same = sum(a == b for a, b in zip(rows, rows[1:])) if insn.uop_end == 1 else 0
    assert costs.reused_src_steps(cfg, insn) == same
    steps = insn.steps
    assert costs.alu_cycles(cfg, insn) == (2 * steps - same + costs.ALU_FILL if steps else 1)
    two_ports = cfg.replace(acc_read_ports=2)
    assert costs.alu_cycles(two_ports, insn) == (steps + costs.ALU_FILL if steps else 1)


def test_one_operand_steps_take_one_cycle_whatever_src_does():
    cfg = load_config("tiny")
    for insn in (AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=3, uop_bgn=0, uop_end=2,
                         iter_out=2, iter_in=3),
                 AluInsn(alu_opcode=AluOp.MOV, uop_bgn=0, uop_end=2, iter_out=2, iter_in=3)):
        assert costs.alu_cycles(cfg, insn) == 12 + costs.ALU_FILL
