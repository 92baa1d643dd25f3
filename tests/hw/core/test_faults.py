"""The planted bugs of :mod:`avta.hw.core.faults` are real, and only in their corner.

For each fault, a hand-built program that uses the fault's corner runs on fsim and on the design
with the fault, and they differ (final DRAM or end of the run); the same program on the correct
design matches fsim; and a program just outside the corner matches even with the fault.

The design runs as the core in the Amaranth simulator (fast, no Verilator build; it has no
memory engine, so ``vme-write-page`` is tested here only on tsim and in
``tests/hw/axi/test_write_engine.py``), and with ``pytest -m slow`` as the whole accelerator on
tsim (one Verilator build per fault).
"""

import functools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from avta.hw.core.faults import (FAULT_LOOP_BITS, FAULT_PAGE_BYTES, FAULT_STORE_ROWS,
                                 FAULT_STRIDE_BITS, FAULT_TOKEN_BITS, FAULTS, ALL_FAULTS, Fault,
                                 FaultName, check_faults, fault_table)
from avta.sim.amaranth.core_run import run_core
from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import MemoryInsn, Uop
from avta.isa.memories import elem_bytes
from avta.sim.fsim import Fsim
from avta.sim.image import Image, alu, finish, gemm, load, store, sync
from avta.sim.mirror import run_differences

CFG = load_config("tiny")
#: DRAM of every program: eight 4 KiB pages, so that streams and rows can cross from one to
#: the next.
DRAM = 0x8000
#: Byte addresses of the data (element sizes on tiny: INP, OUT and UOP 4, WGT and ACC 16).
UOP_AT, INP_AT, WGT_AT, ACC_AT, OUT_AT = 0x2000, 0x3000, 0x3800, 0x4000, 0x6000
#: Cycles the core gets: every program here ends in a few hundred; a faulty one may deadlock.
CORE_CYCLES = 5_000
TSIM_CYCLES = 200_000
#: The RTL's sources (avta.hw).
HW = Path(__file__).resolve().parents[3] / "hw"


def _elem(addr, mtype):
    """The ``dram_base`` of byte address ``addr`` (with base registers 0)."""
    assert addr % elem_bytes(CFG, mtype) == 0
    return addr // elem_bytes(CFG, mtype)


def _image(insns, *, insn_addr=0x1800, uops=(), seed=0):
    """An image of random data (ACC rows in a small range) with ``insns`` at ``insn_addr``
    and ``uops`` at UOP_AT; the OUT region is zero."""
    rng = np.random.default_rng(seed)
    image = Image(CFG, size=DRAM, insn_addr=insn_addr)
    image.put(INP_AT, rng.integers(-128, 128, ACC_AT - INP_AT, dtype=np.int8))
    image.put(ACC_AT, rng.integers(-1000, 1000, (OUT_AT - ACC_AT) // 4, dtype=np.int32))
    if uops:
        image.put_uops(UOP_AT, list(uops))
    image.add(*insns)
    return image


def _through_store(*compute, rows, store_insn=None):
    """``compute`` (compute-stage instructions), then OUT rows ``[0, rows)`` stored to OUT_AT."""
    store_insn = store_insn or store(dram=_elem(OUT_AT, MemType.OUT), x=rows)
    return [*compute, sync("push_next"), store_insn.replace(pop_prev=1, push_prev=1),
            sync("pop_next"), finish()]


def _load_acc(rows, **kw):
    return load(MemType.ACC, dram=_elem(ACC_AT, MemType.ACC), x=rows, **kw)


def _load_uops(count):
    return load(MemType.UOP, dram=_elem(UOP_AT, MemType.UOP), x=count)


# -- the directed programs: (in the corner, just outside it) per fault -------------------------
# Each returns (image, bases).

def fetch_page(corner):
    """12 instructions, 8 before a 4 KiB boundary and 4 after it (fetch asks for 8 at a time,
    so the second command starts on the new page); outside, the same 12 inside one page. At
    byte 0 lie three no-ops and a FINISH: what the faulty fetch reads in place of the last
    four instructions (so the faulty run finishes, without the STORE)."""
    insns = _through_store(*(load(MemType.ACC, sram=i, dram=_elem(ACC_AT, MemType.ACC) + i)
                             for i in range(8)), rows=8)
    assert len(insns) == 12
    image = _image(insns, insn_addr=FAULT_PAGE_BYTES - 8 * 16 if corner else 0x800)
    nop = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP)
    image.put(0, codec(CFG).encode_program([nop, nop, nop, finish()]))
    return image, None


def load_stride(corner):
    """A LOAD ACC of 3 rows, x_stride just past the 7 bits the faulty design keeps (outside:
    the largest stride it keeps)."""
    stride = (1 << FAULT_STRIDE_BITS) + 5 if corner else (1 << FAULT_STRIDE_BITS) - 1
    return _image(_through_store(_load_acc(1, y=3, stride=stride), rows=3)), None


def store_rows(corner):
    """A STORE of one row more than the faulty design counts (outside: exactly that many), with
    an odd stride so rows start mid-beat."""
    rows = FAULT_STORE_ROWS + 1 if corner else FAULT_STORE_ROWS
    st = store(dram=_elem(OUT_AT, MemType.OUT), y=rows, x=1, stride=3)
    return _image(_through_store(_load_acc(rows), rows=rows, store_insn=st)), None


def token_wrap(corner):
    """The load stage pushes four L→C tokens (outside: three) while compute runs two ALUs of
    256 steps; only then does compute pop them."""
    pushes = (1 << FAULT_TOKEN_BITS) if corner else (1 << FAULT_TOKEN_BITS) - 1
    slow = alu(AluOp.ADD, uops=(0, 1), iters=(16, 16), imm=1)
    insns = [_load_uops(1), _load_acc(1), slow, slow]
    insns += [load(MemType.INP, sram=i, dram=_elem(INP_AT, MemType.INP) + i, x=1, push_next=1)
              for i in range(pushes)]
    insns += [sync("pop_prev") for _ in range(pushes)]
    return _image(_through_store(*insns, rows=1), uops=[Uop(0, 0, 0)]), None


def alu_uop_bgn(corner):
    """An ALU ADD on the micro-op in row 130 (outside: row 126), both Uop(1, 1); every other row
    up to 130 holds Uop(2, 2), which the faulty design also runs."""
    row = 130 if corner else 126
    assert (row >= CFG.uop_depth // 2) == corner
    uops = [Uop(1, 1, 0) if i in (126, 130) else Uop(2, 2, 0) for i in range(131)]
    insns = [_load_uops(131), _load_acc(4), alu(AluOp.ADD, uops=(row, row + 1), imm=1)]
    return _image(_through_store(*insns, rows=4), uops=uops), None


def loop_iter(corner):
    """An ALU whose inner loop runs 17 times (outside: 16), one ACC row per iteration."""
    n = (1 << FAULT_LOOP_BITS) + 1 if corner else 1 << FAULT_LOOP_BITS
    insns = [_load_uops(1), _load_acc(20),
             alu(AluOp.ADD, uops=(0, 1), iters=(1, n), dst=(0, 1), src=(0, 1), imm=3)]
    return _image(_through_store(*insns, rows=20), uops=[Uop(0, 0, 0)]), None


def wgt_base(corner):
    """A GEMM of an INP row and a WGT row that lie at the same byte addresses either way: in the
    corner through INP_BASE and WGT_BASE that differ, outside through equal ones."""
    if corner:
        bases = {"INP": INP_AT, "WGT": WGT_AT}
        wgt_dram = 0
    else:
        bases = {"INP": INP_AT, "WGT": INP_AT}
        wgt_dram = (WGT_AT - INP_AT) // CFG.wgt_elem_bytes
    insns = [
        _load_uops(1),
        load(MemType.INP, dram=0, x=1),
        load(MemType.WGT, dram=wgt_dram, x=1, push_next=1),
        gemm(reset=1),
        gemm(pop_prev=1),
    ]
    return _image(_through_store(*insns, rows=1), uops=[Uop(0, 0, 0)]), bases


def vme_write_page(corner):
    """A STORE row of 4 OUT elements (two beats) across the 4 KiB boundary in the OUT region
    (outside: ending on it)."""
    end = 7 * FAULT_PAGE_BYTES + (8 if corner else 0)
    assert OUT_AT < end - 16 and end + 8 <= DRAM
    st = store(dram=_elem(end - 16, MemType.OUT), x=4)
    return _image(_through_store(_load_acc(4), rows=4, store_insn=st)), None


PROGRAMS = {FaultName.FETCH_PAGE: fetch_page, FaultName.LOAD_STRIDE: load_stride,
            FaultName.STORE_ROWS: store_rows, FaultName.TOKEN_WRAP: token_wrap,
            FaultName.ALU_UOP_BGN: alu_uop_bgn, FaultName.LOOP_ITER: loop_iter,
            FaultName.WGT_BASE: wgt_base, FaultName.VME_WRITE_PAGE: vme_write_page}
#: Faults the core alone (no memory engine) cannot show.
NOT_IN_CORE = {FaultName.VME_WRITE_PAGE}


# -- targets ------------------------------------------------------------------------------------

class _Core:
    """The core of ``cfg`` in the Amaranth simulator with ``faults``, with fsim's ``run``."""

    def __init__(self, cfg, faults):
        self.cfg, self.faults = cfg, faults

    def run(self, dram, insn_addr, insn_count, *, bases=None):
        return run_core(self.cfg, dram, insn_addr, insn_count, bases=bases,
                        max_cycles=CORE_CYCLES, core_args={"faults": self.faults})


@functools.cache
def _tsim(cfg, faults):
    from avta.sim.tsim.driver import Tsim
    return Tsim(cfg, faults=faults)


class _Tsim:
    """The whole design of ``cfg`` on tsim with ``faults`` (one build per fault set)."""

    def __init__(self, cfg, faults):
        self.sim = _tsim(cfg, frozenset(faults))

    def run(self, dram, insn_addr, insn_count, *, bases=None):
        return self.sim.run(dram, insn_addr, insn_count, bases=bases, max_cycles=TSIM_CYCLES)


TARGETS = {"core": _Core, "tsim": _Tsim}


def differences(target, faults, image, bases, *, cfg=CFG):
    """What differs between fsim and ``target`` with ``faults`` running ``image``, on ``cfg``
    (the image's configuration, or one that encodes the same)."""
    raw = image.to_bytes()
    want_dram = np.frombuffer(raw, dtype=np.uint8).copy()
    want = Fsim(cfg).run(want_dram, image.insn_addr, len(image.insns), bases=bases)
    got_dram = bytearray(raw)
    got = TARGETS[target](cfg, faults).run(got_dram, image.insn_addr, len(image.insns),
                                           bases=bases)
    return want, run_differences(want, got, want_dram,
                                 np.frombuffer(bytes(got_dram), dtype=np.uint8), ("fsim", target))


CASES = [pytest.param(fault, "core", id=f"{fault}-core")
         for fault in PROGRAMS if fault not in NOT_IN_CORE]
CASES += [pytest.param(fault, "tsim", id=f"{fault}-tsim",
                       marks=[pytest.mark.slow, pytest.mark.tsim]) for fault in PROGRAMS]


@pytest.mark.parametrize("fault, target", CASES)
def test_fault_shows_in_its_corner_only(fault, target):
    in_corner = PROGRAMS[fault](True)
    want, found = differences(target, {fault}, *in_corner)
    assert want.status == "ok", want
    assert found, f"{fault} was not visible in its corner on {target}"
    assert differences(target, (), *in_corner)[1] == [], "the correct design disagrees"
    assert differences(target, {fault}, *PROGRAMS[fault](False))[1] == [], \
        f"{fault} showed outside its corner on {target}"


def test_token_wrap_loses_tokens_silently():
    """The token fault loses tokens instead of raising error 7: the run never finishes."""
    _, found = differences("core", {FaultName.TOKEN_WRAP}, *token_wrap(True))
    assert found and found[0].endswith("core ended ('timeout', None, None)"), found


def test_token_wrap_hides_behind_a_narrow_counter():
    """With TOKEN_BITS = 2 the counter is full at 3 and never counts to 4: the fault changes
    nothing (the fourth push is error 7 on both)."""
    narrow = CFG.replace(token_bits=FAULT_TOKEN_BITS)
    want, found = differences("core", {FaultName.TOKEN_WRAP}, *token_wrap(True), cfg=narrow)
    assert (want.status, want.error_code) == ("error", 7)
    assert found == []


def test_every_fault_has_a_directed_program():
    """Each fault but the two oldest has its program above; those two are tested by the
    trace diff (tests/sim/trace/test_trace_faults.py)."""
    assert set(PROGRAMS) | {FaultName.ALU_LANE, FaultName.GEMM_ACC_INDEX} == set(FAULTS)


def test_the_table():
    assert all(isinstance(f, Fault) and f.unit and f.description and f.corner
               for f in FAULTS.values())
    table = fault_table().splitlines()
    assert len(table) == 2 + len(FAULTS)
    assert all(f"`{name}`" in "\n".join(table) for name in FAULTS)
    assert check_faults(["load-stride", "load-stride"]) == frozenset({"load-stride"})
    with pytest.raises(ValueError, match="unknown fault.*known: alu-lane"):
        check_faults({"no-such-bug"})



def test_faults_are_named_by_members():
    """A fault is named by a :class:`FaultName` member, so a misspelt name fails where it is
    written; the command line and JSON still take and give the plain names."""
    with pytest.raises(AttributeError):
        FaultName.ALU_LNAE
    assert set(FaultName) == set(ALL_FAULTS)
    assert all(isinstance(name, FaultName) for name in ALL_FAULTS)
    planted = check_faults(["load-stride", FaultName.ALU_LANE])
    assert planted == {FaultName.LOAD_STRIDE, FaultName.ALU_LANE}
    assert all(isinstance(name, FaultName) for name in planted)
    assert json.dumps(sorted(planted)) == '["alu-lane", "load-stride"]'
    assert f"{FaultName.LOAD_STRIDE}" == "load-stride"


def test_the_rtl_names_no_fault_by_a_string():
    """No ``"name" in self._faults`` is left in the RTL: a literal could be misspelt silently."""
    literal = re.compile(r"""["'][a-z0-9-]+["']\s+(not\s+)?in\s+(self\.)?_?faults\b""")
    found = [f"{path.relative_to(HW)}:{n}" for path in sorted(HW.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if literal.search(line)]
    assert not found
