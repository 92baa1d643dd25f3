"""Rebasing avta's streams onto upstream's physical addresses, and finding the instructions
whose meaning differs upstream (docs/isa.md, compatibility). Needs no upstream checkout."""

import pytest

from avta.errors import UserError
from avta.isa.encoding import codec, finish
from avta.isa.enums import AluOp, MemType, Opcode, PadValue
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn, Uop
from avta.isa.memories import elem_bytes
from avta.runtime.program import Program
from avta.sim.upstream import rebase_stream, upstream_alu_ops, upstream_differences

#: What upstream's hw_spec_const.h defines of the ALU (the names are upstream's).
UPSTREAM_ALU_TEXT = "\n".join(f"#define VTA_ALU_OPCODE_{name} {value}" for name, value in
                              (("MIN", 0), ("MAX", 1), ("ADD", 2), ("SHR", 3), ("MUL", 4)))
UPSTREAM_OPS = upstream_alu_ops([UPSTREAM_ALU_TEXT])


def _memory_program(cfg):
    loads = [MemoryInsn(opcode=Opcode.LOAD, memory_type=t, dram_base=7, y_size=1, x_size=1,
                        x_stride=1) for t in (MemType.UOP, MemType.WGT, MemType.INP, MemType.ACC,
                                              MemType.ACC_8BIT)]
    store = MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, dram_base=9, y_size=1,
                       x_size=1, x_stride=1)
    gemm = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)
    return [*loads, store, gemm, finish()]


@pytest.mark.parametrize("base", [0, 4096, 3 * 4096])
def test_rebase_moves_each_dram_base_by_its_element(default_cfg, base):
    cfg = default_cfg
    insns = _memory_program(cfg)
    moved = codec(cfg).decode_program(rebase_stream(cfg, codec(cfg).encode_program(insns), base))
    for before, after in zip(insns, moved):
        if isinstance(before, MemoryInsn):
            size = elem_bytes(cfg, MemType(before.memory_type))
            assert after.dram_base * size == before.dram_base * size + base
            assert after.replace(dram_base=before.dram_base) == before
        else:
            assert after == before


def test_rebase_refuses_what_it_cannot_express(default_cfg):
    cfg = default_cfg
    stream = codec(cfg).encode_program(_memory_program(cfg))
    with pytest.raises(UserError, match="not a multiple of the 256-byte WGT element"):
        rebase_stream(cfg, stream, 4096 + 128)
    with pytest.raises(UserError, match="negative"):
        rebase_stream(cfg, stream, -4096)
    with pytest.raises(UserError, match="32 bits"):
        rebase_stream(cfg, stream, 1 << 40)


def test_upstream_alu_ops_are_read_from_its_headers():
    assert UPSTREAM_OPS == {AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL}


def _alu_program(cfg, alu, uops=(Uop(3, 3, 0),)):
    load = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=0, dram_base=0,
                      y_size=1, x_size=len(uops), x_stride=len(uops))
    return Program(cfg, (load, alu, finish()), tuple(uops), (0,), None)


def _alu(op, **fields):
    return AluInsn(**{"opcode": Opcode.ALU, "alu_opcode": op, "uop_bgn": 0, "uop_end": 1,
                      "iter_out": 1, "iter_in": 1, **fields})


@pytest.mark.parametrize("alu, uops, why", [
    (_alu(AluOp.MOV), (Uop(3, 4, 0),), "ALU MOV: upstream has no such operation"),
    (_alu(AluOp.CLP, use_imm=1, imm=5), (Uop(3, 3, 0),), "ALU CLP"),
    (_alu(AluOp.MUL), (Uop(3, 4, 0),), "8-bit product"),
    (_alu(AluOp.SHR), (Uop(3, 4, 0),), "amounts from data"),
    (_alu(AluOp.SHR, use_imm=1, imm=-32), (Uop(3, 3, 0),), "SHR by -32"),
    (_alu(AluOp.ADD, use_imm=1, imm=1), (Uop(3, 4, 0),), "reads ACC[src], upstream ACC[dst]"),
    (_alu(AluOp.MAX, use_imm=1, imm=0, iter_in=2, dst_factor_in=1, src_factor_in=2),
     (Uop(3, 3, 0),), "reads ACC[src]"),
])
def test_differences_are_found(default_cfg, alu, uops, why):
    found = upstream_differences(_alu_program(default_cfg, alu, uops), UPSTREAM_OPS)
    assert [index for index, _ in found] == [1] and why in found[0][1]


@pytest.mark.parametrize("alu, uops", [
    (_alu(AluOp.SHR, use_imm=1, imm=-31), (Uop(3, 3, 0),)),
    (_alu(AluOp.ADD), (Uop(3, 4, 0),)),          # two operands read the same rows on both
    (_alu(AluOp.MIN, use_imm=1, imm=127, iter_out=2, dst_factor_out=4, src_factor_out=4,
          iter_in=2, dst_factor_in=1, src_factor_in=1), (Uop(3, 3, 0),)),
])
def test_what_means_the_same_is_not_flagged(default_cfg, alu, uops):
    assert upstream_differences(_alu_program(default_cfg, alu, uops), UPSTREAM_OPS) == []


def test_a_load_padding_with_min_differs(default_cfg):
    pad = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, y_size=1, x_size=1,
                     x_stride=1, x_pad_0=1, pad_value=PadValue.MIN)
    program = Program(default_cfg, (pad, finish()), (), (), None)
    assert "pads with MIN" in upstream_differences(program, UPSTREAM_OPS)[0][1]
    unpadded = Program(default_cfg, (pad.replace(x_pad_0=0), finish()), (), (), None)
    assert upstream_differences(unpadded, UPSTREAM_OPS) == []


SMALL = {"name": "small", "h": 7, "w": 7, "cin": 32, "cout": 32, "k": 3, "pad": 1, "stride": 1}


def test_resnet_layers_need_the_bias_unknown_to_mean_the_same(default_cfg):
    """With the bias's bound known the accumulators start at it by a MOV, which upstream lacks;
    without it the program is upstream's own tail and means the same there."""
    from avta.sim.bench.fsim import build_conv2d_layer
    known = build_conv2d_layer(default_cfg, SMALL)["program"]
    assert any("MOV" in why for _, why in upstream_differences(known, UPSTREAM_OPS))
    unknown = build_conv2d_layer(default_cfg, SMALL, bias_known=False)
    assert upstream_differences(unknown["program"], UPSTREAM_OPS) == []
    assert unknown["device"].run(unknown["program"]).ok
