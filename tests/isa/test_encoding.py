"""Golden vectors of docs/isa.md §2 and encode/decode round trips on every shipped configuration."""

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from avta.isa.config import load_config, shipped_configs
from avta.isa.encoding import EncodeError, codec, finish
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn, Uop

LOAD, STORE = Opcode.LOAD, Opcode.STORE

# (config, instruction, word0, word1): the table of docs/isa.md §2, one row per test.
GOLDEN = [
    ("default", MemoryInsn(opcode=LOAD, pop_next=1, push_next=1, memory_type=MemType.INP,
                           dram_base=0x100, y_size=1, x_size=16, x_stride=16),
     0x0000000400000150, 0x0000001000100001),
    ("default", MemoryInsn(opcode=LOAD, memory_type=MemType.INP, sram_base=5,
                           dram_base=0x12345678, y_size=4, x_size=4, x_stride=16, y_pad_0=1,
                           y_pad_1=1, x_pad_0=1, x_pad_1=1),
     0x0048d159e0001500, 0x1111001000040004),
    ("default", MemoryInsn(opcode=STORE, pop_prev=1, push_prev=1, memory_type=MemType.OUT,
                           dram_base=0x200, y_size=1, x_size=8, x_stride=8),
     0x0000000800000229, 0x0000000800080001),
    ("default", GemmInsn(pop_prev=1, push_prev=1, uop_bgn=0, uop_end=1, iter_out=4, iter_in=16,
                         dst_factor_out=1, src_factor_out=1, wgt_factor_in=1),
     0x002000200020002a, 0x0040000000400001),
    ("default", GemmInsn(reset=1, uop_bgn=2, uop_end=3, iter_out=1, iter_in=16, dst_factor_in=1),
     0x0020000800600282, 0x0000000000000800),
    ("default", AluInsn(alu_opcode=AluOp.SHR, use_imm=1, imm=-3, push_next=1, uop_bgn=0,
                        uop_end=1, iter_out=1, iter_in=64, dst_factor_in=1, src_factor_in=1),
     0x0080000800200044, 0xfffdb00200000800),
    ("default", finish(), 0x0000000000000003, 0x0000000000000000),
    ("tiny", GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, dst_factor_out=1),
     0x0020008002010002, 0x0000000000000000),
]

GOLDEN_UOPS = [
    ("default", Uop(dst_idx=1, src_idx=2, wgt_idx=3), 0x00c01001),
    ("big_acc", Uop(dst_idx=1, src_idx=2, wgt_idx=3), 0x0000000300004001),
]


@pytest.mark.parametrize("config, insn, word0, word1", GOLDEN,
                         ids=[f"{c}-{i.op.name}-{n}" for n, (c, i, _, _) in enumerate(GOLDEN)])
def test_golden_instruction(config, insn, word0, word1):
    c = codec(load_config(config))
    assert c.words(insn) == (word0, word1)
    raw = word0.to_bytes(8, "little") + word1.to_bytes(8, "little")
    assert c.encode_bytes(insn) == raw
    assert c.decode(raw) == insn


@pytest.mark.parametrize("config, uop, word", GOLDEN_UOPS, ids=[g[0] for g in GOLDEN_UOPS])
def test_golden_uop(config, uop, word):
    c = codec(load_config(config))
    assert c.encode_uop(uop) == word
    assert c.decode_uop(word) == uop
    assert len(c.encode_uops([uop])) == c.uop_bytes


def _field_strategy(name, width):
    if name == "imm":
        return st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1)
    return st.integers(0, (1 << width) - 1)


def _insn_strategy(c):
    def of(cls, opcodes):
        widths = c.field_widths(cls)
        kwargs = {n: _field_strategy(n, w) for n, w in widths.items() if n != "opcode"}
        kwargs["opcode"] = st.sampled_from(opcodes)
        return st.builds(cls, **kwargs)
    return st.one_of(of(MemoryInsn, [LOAD, STORE]), of(GemmInsn, [Opcode.GEMM, Opcode.FINISH]),
                     of(AluInsn, [Opcode.ALU]))


@pytest.mark.parametrize("config", shipped_configs())
def test_random_instructions_round_trip(config):
    c = codec(load_config(config))

    @settings(max_examples=300, deadline=None)
    @given(_insn_strategy(c))
    def round_trip(insn):
        value = c.encode(insn)
        assert 0 <= value < 1 << 128
        assert c.decode(value) == insn
        assert c.decode(c.encode_bytes(insn)) == insn

    round_trip()


@pytest.mark.parametrize("config", shipped_configs())
def test_random_uops_round_trip(config):
    c = codec(load_config(config))
    widths = c.field_widths(Uop)

    @settings(max_examples=200, deadline=None)
    @given(st.builds(Uop, **{n: _field_strategy(n, w) for n, w in widths.items()}))
    def round_trip(uop):
        word = c.encode_uop(uop)
        assert 0 <= word < 1 << c.cfg.uop_bits
        assert c.decode_uop(word) == uop
        dst, src, wgt = c.decode_uop_array([word])
        assert (dst[0], src[0], wgt[0]) == (uop.dst_idx, uop.src_idx, uop.wgt_idx)

    round_trip()


def test_skipped_bits_are_ignored_when_decoding(default_cfg):
    c = codec(default_cfg)
    insn = MemoryInsn(opcode=LOAD, memory_type=MemType.INP, x_size=1, y_size=1, x_stride=1)
    dirty = c.encode(insn) | (0b1111 << 60)   # bits [63:60] are skipped in LOAD/STORE
    assert c.decode(dirty) == insn


def test_illegal_opcode_decodes_without_crashing(default_cfg):
    c = codec(default_cfg)
    for opcode in (5, 6, 7):
        insn = c.decode((0xabc << 64) | opcode)
        assert insn == IllegalInsn(opcode=opcode, raw=(0xabc << 64) | opcode)
        assert c.encode(insn) == insn.raw


@pytest.mark.parametrize("insn, message", [
    (GemmInsn(uop_bgn=256), r"GemmInsn.uop_bgn = 256 does not fit its 8-bit field \(0..255\)"),
    (AluInsn(imm=40000), r"AluInsn.imm = 40000 does not fit a signed 16-bit field"),
    (MemoryInsn(x_size=-1), r"MemoryInsn.x_size = -1 does not fit"),
    (GemmInsn(dst_factor_out=256), r"dst_factor_out = 256 does not fit its 8-bit field"),
])
def test_encode_rejects_values_that_do_not_fit(tiny_cfg, insn, message):
    with pytest.raises(EncodeError, match=message):
        codec(tiny_cfg).encode(insn)


def test_encode_rejects_a_mismatched_opcode(default_cfg):
    with pytest.raises(EncodeError, match="opcode 4 is not a GemmInsn opcode"):
        codec(default_cfg).encode(GemmInsn(opcode=Opcode.ALU))


def test_program_must_be_whole_instructions(default_cfg):
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        codec(default_cfg).decode_program(b"\0" * 17)


def test_program_round_trip(default_cfg):
    c = codec(default_cfg)
    program = [row[1] for row in GOLDEN if row[0] == "default"]
    assert c.decode_program(c.encode_program(program)) == program
    assert dataclasses.asdict(program[-1])["opcode"] == Opcode.FINISH


def test_illegal_insn_cannot_encode_as_a_legal_one(default_cfg):
    c = codec(default_cfg)
    assert c.decode(c.encode(IllegalInsn(opcode=6))) == IllegalInsn(opcode=6)
    with pytest.raises(ValueError, match="opcode bits are 0"):
        IllegalInsn(opcode=5, raw=0)
    with pytest.raises(ValueError, match="opcode 2 is legal"):
        IllegalInsn(opcode=2)
