"""Fixtures of the fsim tests: naive references, docs/isa.md §3.3 and §3.4 one micro-op step at
a time, in plain Python loops (ALU lanes as Python integers), written from the spec independently
of fsim: ``ref_op``, ``reference_alu`` and ``reference_gemm``."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType
from avta.sim.image import Image, load


def _wrap32(value):
    return (value + 2**31) % 2**32 - 2**31


def _sext(value, bits):
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _ref_op(op, a, b, scale_bits=16):
    """f(A, B) of docs/isa.md §3.4 on Python ints (SCL's multiplier ``scale_bits`` W wide)."""
    if op == AluOp.MIN:
        return min(a, b)
    if op == AluOp.MAX:
        return max(a, b)
    if op == AluOp.ADD:
        return _wrap32(a + b)
    if op == AluOp.SHR:
        s = _sext(b, 6)
        return a >> s if s >= 0 else _wrap32(a << -s)
    if op == AluOp.MUL:
        return _sext(a, 8) * _sext(b, 8)
    if op == AluOp.CLP:
        return max(min(a, b), _wrap32(-b))
    if op == AluOp.MOV:
        return b
    if op == AluOp.SCL:
        # ⌊A·m / 2^(W−1)⌋ with m = sext(B[W−1:0]), wrapped to int32.
        return _wrap32((a * _sext(b, scale_bits)) // 2**(scale_bits - 1))
    raise AssertionError(op)


def _reference_alu(insn, uops, acc, scale_bits=16):
    """docs/isa.md §3.4 one step and one lane at a time (SCL ``scale_bits`` W wide, an
    immediate standing for sext(imm) · 2^(W−16))."""
    acc = [[int(v) for v in row.reshape(-1)] for row in acc]
    imm = insn.imm << (scale_bits - 16) if insn.alu_opcode == AluOp.SCL else insn.imm
    for i_o in range(insn.iter_out):
        for i_i in range(insn.iter_in):
            for u in range(insn.uop_bgn, insn.uop_end):
                d = uops[u].dst_idx + i_o * insn.dst_factor_out + i_i * insn.dst_factor_in
                s = uops[u].src_idx + i_o * insn.src_factor_out + i_i * insn.src_factor_in
                if insn.use_imm:
                    acc[d] = [_ref_op(insn.alu_opcode, a, imm, scale_bits) for a in acc[s]]
                else:
                    acc[d] = [_ref_op(insn.alu_opcode, a, b, scale_bits)
                              for a, b in zip(acc[d], acc[s])]
    return np.array(acc, dtype=np.int64)


def _reference_gemm(insn, uops, inp, wgt, acc):
    """docs/isa.md §3.3 step by step, in Python loops: ACC[acc] += INP[inp]·WGT[wgt]ᵀ, wrapping."""
    acc = acc.astype(np.int64)
    for i_o in range(insn.iter_out):
        for i_i in range(insn.iter_in):
            for u in range(insn.uop_bgn, insn.uop_end):
                a = uops[u].dst_idx + i_o * insn.dst_factor_out + i_i * insn.dst_factor_in
                i = uops[u].src_idx + i_o * insn.src_factor_out + i_i * insn.src_factor_in
                w = uops[u].wgt_idx + i_o * insn.wgt_factor_out + i_i * insn.wgt_factor_in
                if insn.reset:
                    acc[a] = 0
                else:
                    total = acc[a] + inp[i].astype(np.int64) @ wgt[w].astype(np.int64).T
                    acc[a] = (total + 2**31) % 2**32 - 2**31
    return acc.astype(np.int32)


@pytest.fixture(scope="session")
def ref_op():
    """``ref_op(op, a, b)``: f(A, B) of docs/isa.md §3.4 on Python ints."""
    return _ref_op


@pytest.fixture(scope="session")
def reference_alu():
    """``reference_alu(insn, uops, acc)``: the ACC rows after ``insn`` (docs/isa.md §3.4), as
    int64."""
    return _reference_alu


@pytest.fixture(scope="session")
def reference_gemm():
    """``reference_gemm(insn, uops, inp, wgt, acc)``: the ACC rows after ``insn``
    (docs/isa.md §3.3), as int32."""
    return _reference_gemm


def _compute_image(cfg, size, kernel, inp, wgt, acc, addresses, *, uop_pop_prev=0):
    """An :class:`Image` of ``size`` bytes holding ``kernel`` and the INP, WGT and ACC rows
    ``inp``, ``wgt``, ``acc`` at ``addresses`` (UOP, INP, WGT, ACC byte addresses), and the
    four LOADs that bring them in: WGT's pushes a token to the compute stage, which the first
    compute instruction (or, with ``uop_pop_prev``, the micro-op LOAD) pops."""
    uops, inp_at, wgt_at, acc_at = addresses
    image = Image(cfg, size=size)
    image.put_uops(uops, kernel)
    image.put(inp_at, inp)
    image.put(wgt_at, wgt)
    image.put(acc_at, acc)
    image.add(load(MemType.INP, dram=inp_at // cfg.inp_elem_bytes, x=len(inp)),
              load(MemType.WGT, dram=wgt_at // cfg.wgt_elem_bytes, x=len(wgt), push_next=1),
              load(MemType.UOP, dram=uops // cfg.uop_elem_bytes, x=len(kernel),
                   pop_prev=uop_pop_prev),
              load(MemType.ACC, dram=acc_at // cfg.acc_elem_bytes, x=len(acc)))
    return image


@pytest.fixture(scope="session")
def compute_image():
    """``compute_image(cfg, size, kernel, inp, wgt, acc, addresses, *, uop_pop_prev=0)``: an
    image with a kernel, INP, WGT and ACC rows and the LOADs that bring them in."""
    return _compute_image


@pytest.fixture(autouse=True)
def python_machine(request, monkeypatch):
    """These tests are of the Python machine, the reference (its forms of GEMM and ALU, its
    memos, its speed): ``"auto"`` keeps bit-exact runs in Python, however much this process has
    run already. test_fsim_compiled_exact.py holds the compiled interpreter equal to it, and
    tests its ``"auto"`` rule itself."""
    if not request.module.__name__.endswith("test_fsim_compiled_exact"):
        from avta.sim.fsim import compiled_exact
        monkeypatch.setattr(compiled_exact, "wanted", lambda: False)
