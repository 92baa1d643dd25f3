"""Errors of docs/isa.md §3.5: every code 1–10 with the index of the offending instruction, decode
errors stopping before anything runs, strict versus wrapping scratchpad indices."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, ErrorCode as E, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn, Uop
from avta.sim.fsim import Fsim
from avta.sim.image import Image, alu, finish, gemm, load, store, sync

DATA = 0x1000
SIZE = 1 << 14


def illegal(opcode):
    """An instruction with opcode 5..7 (its 128 bits are just the opcode)."""
    return IllegalInsn(opcode=opcode, raw=opcode)


def acc_load(cfg, rows=2, **kw):
    return load(MemType.ACC, dram=DATA // cfg.acc_elem_bytes, x=rows, **kw)


def programs(cfg):
    """(id, program, expected code, expected index), one row per rule."""
    depth = cfg.acc.depth
    beyond = SIZE // cfg.acc_elem_bytes     # first ACC element outside the image
    return [
        ("1 illegal opcode", [acc_load(cfg), illegal(5), finish()],
         E.ILLEGAL_OPCODE, 1),
        ("1 opcode 7", [illegal(7), finish()], E.ILLEGAL_OPCODE, 0),
        ("2 ALU opcode 7", [acc_load(cfg), AluInsn(alu_opcode=7), finish()],
         E.ILLEGAL_ALU_OPCODE, 1),
        ("3 LOAD OUT", [load(MemType.OUT, x=1), finish()], E.ILLEGAL_MEMORY_TYPE, 0),
        ("3 LOAD type 6, x_size 0", [acc_load(cfg), load(6, x=0), finish()],
         E.ILLEGAL_MEMORY_TYPE, 1),
        ("4 pad value 3", [acc_load(cfg), acc_load(cfg, pad_value=3), finish()],
         E.ILLEGAL_PAD_VALUE, 1),
        ("5 STORE of ACC", [sync("push_next"), MemoryInsn(opcode=Opcode.STORE, memory_type=3,
                                                          x_size=1, y_size=1), finish()],
         E.ILLEGAL_STORE, 1),
        ("5 beats 6 in one STORE", [MemoryInsn(opcode=Opcode.STORE, memory_type=3, x_size=1,
                                               pop_next=1), finish()], E.ILLEGAL_STORE, 0),
        ("6 LOAD INP pop_prev", [acc_load(cfg), load(MemType.INP, pop_prev=1), finish()],
         E.TOKEN_WRONG_STAGE, 1),
        ("6 STORE push_next", [store(x=0, push_next=1), finish()], E.TOKEN_WRONG_STAGE, 0),
        ("7 token overflow", [load(MemType.INP, x=0, push_next=1)] * 4 + [finish()],
         E.TOKEN_OVERFLOW, 3),
        ("8 FINISH pops", [acc_load(cfg), GemmInsn(opcode=Opcode.FINISH, pop_next=1)],
         E.FINISH_WITH_TOKEN, 1),
        ("9 LOAD beyond DRAM", [acc_load(cfg), load(MemType.ACC, dram=beyond - 1, x=2),
                                finish()], E.DRAM_OUT_OF_RANGE, 1),
        ("9 strided row beyond DRAM", [load(MemType.ACC, dram=beyond - 10, x=2, y=3,
                                            stride=5), finish()], E.DRAM_OUT_OF_RANGE, 0),
        ("9 padding never reads DRAM", [load(MemType.ACC, dram=beyond - 1, x=1,
                                             pads=(2, 2, 2, 2)), finish()], None, None),
        ("9 UOP load beyond DRAM", [load(MemType.UOP, dram=SIZE // cfg.uop_elem_bytes, x=1),
                                    finish()], E.DRAM_OUT_OF_RANGE, 0),
        ("9 STORE beyond DRAM", [sync("push_next"),
                                 store(dram=SIZE // cfg.out_elem_bytes - 1, x=2, pop_prev=1),
                                 finish()], E.DRAM_OUT_OF_RANGE, 1),
        ("decode error wins over an earlier run-time error",
         [load(MemType.ACC, dram=beyond, x=1), acc_load(cfg), illegal(6)],
         E.ILLEGAL_OPCODE, 2),
        ("10 not raised without strict", [acc_load(cfg, sram=depth - 1), finish()], None, None),
    ]


def strict_programs(cfg):
    """(id, program, expected index) of error 10 in strict mode."""
    acc, uop = cfg.acc.depth, cfg.uop.depth
    return [
        ("LOAD past the end", [acc_load(cfg, sram=acc - 1), finish()], 0),
        ("LOAD padding past the end", [acc_load(cfg, rows=1, sram=acc - 1, pads=(0, 1, 0, 0)),
                                       finish()], 0),
        ("GEMM acc index", [gemm(iters=(1, 3), dst=(0, acc - 1)), finish()], 0),
        ("GEMM inp index", [acc_load(cfg), gemm(iters=(3, 1), src=(cfg.inp.depth - 1, 0)),
                            finish()], 1),
        ("GEMM wgt index", [gemm(iters=(3, 1), wgt=(cfg.wgt.depth - 1, 0)), finish()], 0),
        ("GEMM reset acc index", [gemm(iters=(1, 3), dst=(0, acc - 1), reset=1), finish()], 0),
        ("ALU dst index", [alu(AluOp.ADD, iters=(3, 1), dst=(acc // 2, 0), imm=1), finish()], 0),
        ("ALU src index", [alu(AluOp.ADD, iters=(3, 1), src=(acc // 2, 0)), finish()], 0),
        ("micro-op index", [gemm(uops=(uop - 1, uop + 1)), finish()], 0),
        ("STORE past the end", [sync("push_next"), store(sram=acc - 2, y=2, x=2, pop_prev=1),
                                finish()], 1),
    ]


def run(cfg, insns, **options):
    image = Image(cfg, size=SIZE)
    image.put(DATA, np.arange(1, 1 + 2 * cfg.acc_elem_bytes, dtype=np.uint8))
    image.add(*insns)
    return image.run(**options)


TINY = load_config("tiny")


@pytest.mark.parametrize("name, insns, code, index", programs(TINY),
                         ids=[p[0] for p in programs(TINY)])
def test_error_codes(tiny_cfg, name, insns, code, index):
    cfg = tiny_cfg.replace(token_bits=2) if "overflow" in name else tiny_cfg
    result, sim = run(cfg, insns)
    if code is None:
        assert result.status == "ok", result.detail
        return
    assert (result.status, result.error_code, result.error_insn) == ("error", code, index), \
        result.detail
    assert f"error {int(code)}" in result.detail and f"instruction {index}" in result.detail
    if code not in (E.TOKEN_OVERFLOW, E.DRAM_OUT_OF_RANGE):
        # Decode errors are found on the whole stream before anything runs (docs/isa.md §3.5).
        assert not sim.sram("acc").any()


def test_every_code_has_a_case():
    # Codes 10 and 11 have tests of their own below: strict mode, and the base registers.
    codes = {p[2] for p in programs(TINY)} | {E.SRAM_OUT_OF_RANGE, E.UNALIGNED_BASE}
    assert codes >= set(E) - {E.NONE}


@pytest.mark.parametrize("key", ["UOP", "INP", "WGT", "ACC", "OUT"])
def test_an_unaligned_base_is_error_11_before_any_instruction(tiny_cfg, key):
    """docs/isa.md §3.5: checked at launch, index 0, even before a decode error."""
    from avta.isa.memories import base_alignment
    insns = [acc_load(tiny_cfg), IllegalInsn(opcode=5, raw=5), finish()]
    result, sim = run(tiny_cfg, insns, bases={key: base_alignment(tiny_cfg, key) + 1})
    assert (result.status, result.error_code, result.error_insn) == ("error", 11, 0)
    assert f"{key}_BASE" in result.detail and not sim.sram("acc").any()


@pytest.mark.parametrize("name, insns, index", strict_programs(TINY),
                         ids=[p[0] for p in strict_programs(TINY)])
def test_strict_mode_error_10(tiny_cfg, name, insns, index):
    result, sim = run(tiny_cfg, insns, strict=True)
    assert (result.status, result.error_code, result.error_insn) == \
        ("error", E.SRAM_OUT_OF_RANGE, index), (name, result.detail)
    relaxed, _ = run(tiny_cfg, insns)       # the same program wraps without strict
    assert relaxed.status == "ok", (name, relaxed.detail)


def test_non_strict_load_wraps_to_row_zero(tiny_cfg):
    depth = tiny_cfg.acc.depth
    result, sim = run(tiny_cfg, [acc_load(tiny_cfg, rows=2, sram=depth - 1), finish()])
    assert result.status == "ok"
    rows = np.arange(1, 1 + 2 * tiny_cfg.acc_elem_bytes, dtype=np.uint8).view("<i4")
    rows = rows.reshape(2, tiny_cfg.batch, tiny_cfg.block_out)
    np.testing.assert_array_equal(sim.sram("acc")[depth - 1], rows[0])
    np.testing.assert_array_equal(sim.sram("acc")[0], rows[1])


def test_non_strict_gemm_wraps_indices(tiny_cfg):
    """Micro-op rows and ACC indices past the end wrap to the start (docs/isa.md §3)."""
    cfg = tiny_cfg
    uop_depth, acc_depth = cfg.uop.depth, cfg.acc.depth
    image = Image(cfg, size=SIZE)
    image.put(DATA, np.full(cfg.inp_elem_bytes, 2, dtype=np.int8))
    image.put(DATA + 0x100, np.full(cfg.wgt_elem_bytes, 3, dtype=np.int8))
    image.put_uops(0x800, [Uop(2, 0, 0), Uop(1, 0, 0)])
    image.add(load(MemType.INP, dram=DATA // cfg.inp_elem_bytes, x=1),
              load(MemType.WGT, dram=(DATA + 0x100) // cfg.wgt_elem_bytes, x=1, push_next=1),
              # Two micro-ops into rows depth-1 and (wrapped) 0.
              load(MemType.UOP, dram=0x800 // cfg.uop_elem_bytes, sram=uop_depth - 1, x=2,
                   pop_prev=1),
              # Steps write ACC 2, 1, then (i_o = 1) 2+depth-1 -> 1 and 1+depth-1 -> 0.
              gemm(uops=(uop_depth - 1, uop_depth + 1), iters=(2, 1), dst=(acc_depth - 1, 0)),
              finish())
    result, sim = image.run()
    assert result.status == "ok", result.detail
    step = 2 * 3 * cfg.block_in
    np.testing.assert_array_equal(sim.sram("acc")[:4, 0, 0], [step, 2 * step, step, 0])


def test_fetch_beyond_dram_is_error_9_at_that_instruction(tiny_cfg):
    image = Image(tiny_cfg, size=256, insn_addr=256 - 3 * 16)
    image.add(acc_load(tiny_cfg, rows=0), acc_load(tiny_cfg, rows=0), acc_load(tiny_cfg, rows=0))
    result, _ = image.run(count=5)
    assert (result.status, result.error_code, result.error_insn) == \
        ("error", E.DRAM_OUT_OF_RANGE, 3), result.detail


def test_decode_error_before_fetch_error(tiny_cfg):
    image = Image(tiny_cfg, size=64)
    image.add(acc_load(tiny_cfg, rows=0), illegal(5))
    result, _ = image.run(count=9)
    assert (result.error_code, result.error_insn) == (E.ILLEGAL_OPCODE, 1)


# (argument, value, message piece): mistakes of the caller, not of the program.
BAD_CALLS = [
    ("insn_addr", 8, "not 16-byte aligned"),
    ("insn_addr", -16, "insn_addr"),
    ("insn_count", 2**32, "insn_count"),
    ("bases", {"OUTPUT": 0}, "unknown base register"),
    ("bases", {"INP": 2**32}, "base INP"),
    ("dram", b"immutable", "bytearray"),
    ("dram", np.zeros(64, dtype=np.int32), "uint8"),
]


@pytest.mark.parametrize("argument, value, message", BAD_CALLS)
def test_bad_calls_raise(tiny_cfg, argument, value, message):
    call = {"dram": bytearray(64), "insn_addr": 0, "insn_count": 1, "bases": None}
    call[argument] = value
    with pytest.raises((ValueError, TypeError), match=message):
        Fsim(tiny_cfg).run(call["dram"], call["insn_addr"], call["insn_count"],
                           bases=call["bases"])
