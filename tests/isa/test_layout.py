"""The Amaranth layouts: field names agree with the ISA tables, fields never overlap, and the
layouts decode the same values as the software decoder."""

import random

import pytest
from amaranth.lib import data

from avta.isa import formats
from avta.isa.config import load_config, shipped_configs
from avta.isa.encoding import codec
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn, Uop
from avta.isa.layout import layouts


@pytest.mark.parametrize("config", shipped_configs())
def test_classes_have_the_format_fields_in_order(config):
    cfg = load_config(config)
    assert MemoryInsn.field_names() == [n for n, _ in formats.memory_fields(cfg)]
    assert GemmInsn.field_names() == [n for n, _ in formats.gemm_fields(cfg)]
    assert AluInsn.field_names() == [n for n, _ in formats.alu_fields(cfg)]
    assert [f for f in Uop.__dataclass_fields__] == [n for n, _ in formats.uop_fields(cfg)]


@pytest.mark.parametrize("config", shipped_configs())
def test_fields_do_not_overlap_or_cross_a_word(config):
    lay = layouts(load_config(config))
    for layout, unit in ((lay.memory, 64), (lay.gemm, 64), (lay.alu, 64), (lay.uop, 32)):
        used = 0
        for name, offset, width in lay.fields(layout):
            mask = ((1 << width) - 1) << offset
            assert not used & mask, f"{name} overlaps an earlier field"
            assert offset // unit == (offset + width - 1) // unit, f"{name} crosses a word"
            assert offset + width <= layout.size
            used |= mask


def test_head_is_common_to_all_formats(default_cfg):
    lay = layouts(default_cfg)
    head = lay.fields(lay.head)
    for layout in (lay.memory, lay.gemm, lay.alu):
        assert lay.fields(layout)[:len(head)] == head
    assert lay.insn.size == 128


@pytest.mark.parametrize("config", ["default", "tiny", "big_acc", "rect"])
def test_amaranth_views_decode_like_the_software_decoder(config):
    cfg = load_config(config)
    c, lay = codec(cfg), layouts(cfg)
    rng = random.Random(1)
    for _ in range(50):
        value = rng.getrandbits(128)
        for name, cls, opcode in (("memory", MemoryInsn, 0), ("gemm", GemmInsn, 2),
                                  ("alu", AluInsn, 4)):
            value_op = (value & ~0b111) | opcode
            insn = c.decode(value_op)
            sub = data.Const(lay.insn, value_op)[name]
            for field in cls.field_names():
                got = sub[field]
                expected = getattr(insn, field)
                if field == "imm":
                    got = got - (1 << 16) if got >= 1 << 15 else got
                assert got == expected, (config, name, field)
