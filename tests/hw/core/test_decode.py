"""InsnDecode agrees with the software legality rules (avta.isa.legality) and stage mapping."""

import random

import pytest
from amaranth.sim import Simulator

from avta.hw.core.decode import InsnDecode
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.enums import AluOp, ErrorCode, MemType, Opcode, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.legality import check

CONFIGS = ["tiny", "rect", "tiny+scale"]


def _config(name):
    """A shipped configuration; ``+scale`` turns ALU_SCALE on (SCL, opcode 7, becomes legal)."""
    base, _, scale = name.partition("+")
    return load_config(base).replace(alu_scale=1) if scale else load_config(base)


def _expected(cfg, raw):
    insn = codec(cfg).decode(raw)
    violation = check(insn, cfg)
    code = violation.code if violation else ErrorCode.NONE
    return code, insn.stage


def _run(cfg, raws):
    dut = InsnDecode(cfg=cfg)
    got = []

    async def bench(ctx):
        for raw in raws:
            ctx.set(dut.insn.as_value(), raw)
            got.append((ctx.get(dut.error), ctx.get(dut.stage)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return got


def _table(cfg):
    c = codec(cfg)
    L, S = Opcode.LOAD, Opcode.STORE
    insns = [
        MemoryInsn(opcode=L, memory_type=MemType.INP, x_size=1, y_size=1, pop_next=1),
        MemoryInsn(opcode=L, memory_type=MemType.WGT, push_prev=1),
        MemoryInsn(opcode=L, memory_type=MemType.UOP, pop_prev=1, push_next=1),
        MemoryInsn(opcode=L, memory_type=MemType.OUT),
        MemoryInsn(opcode=L, memory_type=MemType.ACC_8BIT, pad_value=3),
        MemoryInsn(opcode=L, memory_type=7, pad_value=3, pop_prev=1),
        MemoryInsn(opcode=S, memory_type=MemType.OUT, x_size=1, y_size=1, pop_prev=1),
        MemoryInsn(opcode=S, memory_type=MemType.INP, x_size=1, pop_next=1),
        MemoryInsn(opcode=S, memory_type=MemType.OUT, x_size=1, x_pad_1=1),
        MemoryInsn(opcode=S, memory_type=MemType.INP, x_size=0, pad_value=2),
        MemoryInsn(opcode=S, memory_type=MemType.OUT, push_next=1),
        GemmInsn(opcode=Opcode.FINISH),
        GemmInsn(opcode=Opcode.FINISH, pop_next=1),
        GemmInsn(opcode=Opcode.GEMM, pop_prev=1, push_next=1, uop_end=1),
        AluInsn(alu_opcode=AluOp.MOV, use_imm=1, imm=-1),
        AluInsn(alu_opcode=7, push_prev=1),
    ]
    raws = [c.encode(i) for i in insns]
    raws += [(op | 0xF0) | (0x1234 << 64) for op in (5, 6, 7)]
    return raws


@pytest.mark.parametrize("config", CONFIGS)
def test_decode_table(config):
    cfg = _config(config)
    raws = _table(cfg)
    got = _run(cfg, raws)
    for raw, (code, stage) in zip(raws, got):
        want_code, want_stage = _expected(cfg, raw)
        assert code == want_code, f"{codec(cfg).decode(raw)}: error {code} != {want_code}"
        if want_code == ErrorCode.NONE:
            assert stage == want_stage
    # The table exercises every decode-time code.
    codes = {_expected(cfg, r)[0] for r in raws}
    assert codes >= {ErrorCode.NONE, 1, 3, 4, 5, 6, 8} | (set() if cfg.alu_scale else {2})


@pytest.mark.parametrize("config", CONFIGS)
def test_decode_random(config):
    cfg = _config(config)
    rng = random.Random(4)
    raws = []
    for _ in range(300):
        raw = rng.getrandbits(128)
        # Bias toward legal opcodes and small field values so that every rule is reached.
        raw = (raw & ~0x7) | rng.choice([0, 0, 1, 1, 2, 3, 4, 5])
        if rng.random() < 0.5:
            raw &= ~(0xF << 3)
        raws.append(raw)
    got = _run(cfg, raws)
    for raw, (code, stage) in zip(raws, got):
        want_code, want_stage = _expected(cfg, raw)
        assert code == want_code, f"{codec(cfg).decode(raw)}"
        if want_code == ErrorCode.NONE:
            assert Stage(stage) == want_stage
