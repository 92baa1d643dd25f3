"""ACC's forwarding (hw/core/banks.py): reads see the GEMM's and the ALU's writes of their cycle,
not a LOAD's, which no read meets in its cycle (hw/core/compute.py).

The bank test pins which writers a read sees in their cycle; the core tests run a LOAD into ACC
followed at once by an instruction that reads the rows it wrote last (its last beat, its last pad
row), alone and with a GEMM beside a detached ALU, against fsim (tests/hw/core/test_core.py's
``compare``), and fail in any cycle where an ACC read port is enabled while the loader writes.
"""

import pytest
from amaranth.sim import Simulator

from avta.hw.core.banks import BankedScratchpad
from avta.hw.core.compute import Compute
from avta.hw.core.tensor_load import LOAD_STAGE_TYPES, TensorLoad
from avta.hw.core.tensor_store import TensorStore
from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, Uop
from avta.isa.memories import scratchpad

from .test_core import ACC, FINISH, INP, OUT, UOPS, WGT, compare, load, store


def test_a_read_sees_only_the_forwarded_writers_in_their_cycle():
    """A read in the cycle of a write to its row returns the written row when the writer is
    forwarded and the row before it when not; either write is there a cycle later."""
    cfg = load_config("tiny")
    pad = BankedScratchpad(cfg, "acc", writers=("fwd", "plain"), readers={"rd": 0},
                           forward=("fwd",))
    all_en = 2 ** len(pad.wr_fwd.en) - 1
    row = 5
    seen = []

    async def bench(ctx):
        async def cycle(writer, value):
            port = getattr(pad, f"wr_{writer}") if writer else None
            if port is not None:
                ctx.set(port.addr, row)
                ctx.set(port.data, value)
                ctx.set(port.en, all_en)
            ctx.set(pad.rd_rd.addr, row)
            ctx.set(pad.rd_rd.en, 1)
            await ctx.tick()
            if port is not None:
                ctx.set(port.en, 0)
            seen.append(ctx.get(pad.rd_rd.data))

        await cycle("plain", 11)     # not forwarded: the row before (zero)
        await cycle(None, 0)         # a cycle later: the write is there
        await cycle("fwd", 22)       # forwarded: the write itself
        await cycle("plain", 33)
        await cycle("fwd", 44)
        await cycle(None, 0)

    sim = Simulator(pad)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [0, 11, 22, 22, 44, 44]


def test_forwarded_writers_must_be_writers():
    cfg = load_config("tiny")
    with pytest.raises(ValueError, match="forwarded writers"):
        BankedScratchpad(cfg, "acc", writers=("a",), readers={"r": 0}, forward=("b",))


ROWS = 8                                                    # ACC rows each LOAD writes
BANK = scratchpad(load_config("tiny"), "acc").bank_rows     # the first row of ACC's bank 1


def _alu(uop, op=AluOp.ADD, steps=1, dst_factor=1):
    """A two-operand ALU over ``steps`` steps from micro-op ``uop`` (src steps by one row, dst by
    ``dst_factor``: 0 folds every src row into one dst row, each step reading the last's)."""
    return AluInsn(alu_opcode=op, use_imm=0, uop_bgn=uop, uop_end=uop + 1, iter_out=1,
                   iter_in=steps, dst_factor_in=dst_factor, src_factor_in=1)


def _gemm(uop, steps=1, dst_factor=1, **kw):
    """A GEMM over ``steps`` steps from micro-op ``uop``; ``dst_factor`` 0 accumulates every step
    into one ACC row, each step reading the row the steps before it write (ACC's forwarding)."""
    return GemmInsn(opcode=Opcode.GEMM, uop_bgn=uop, uop_end=uop + 1, iter_out=1, iter_in=steps,
                    dst_factor_in=dst_factor, src_factor_in=1, **kw)


# Micro-ops (dst, src, wgt): the ALU's 0 and 1 read the last row of the LOAD into bank 0 (its
# last beat; its last pad row, when the LOAD pads), 3 passes over bank 0's rows; the GEMM's 4
# and 5 accumulate into those last rows, 2 into the last row of the LOAD into bank 1.
UOP_LIST = [Uop(ROWS - 1, ROWS - 1, 0), Uop(ROWS, ROWS - 1, 0), Uop(BANK + ROWS - 1, 0, 0),
            Uop(0, 1, 0), Uop(ROWS - 1, 0, 0), Uop(ROWS, 0, 0)]


def _acc_load(cfg, sram, *, pad=False):
    if pad:
        return load(cfg, MemType.ACC, ACC, sram, ROWS, y_pad_1=1, pad_value=0)
    return load(cfg, MemType.ACC, ACC, sram, ROWS)


CASES = {
    # name: the instructions after micro-ops, INP and WGT are loaded
    "load-then-alu": lambda cfg: [_acc_load(cfg, 0), _alu(0)],
    "load-then-gemm": lambda cfg: [_acc_load(cfg, 0), _gemm(4)],
    "load-then-gemm-into-one-row": lambda cfg: [_acc_load(cfg, 0), _gemm(4, 4, dst_factor=0)],
    "load-then-alu-into-one-row": lambda cfg: [_acc_load(cfg, 0), _alu(3, ROWS - 1, 0)],
    # Rows A, B, A, B, ...: each step reads the row the step two ahead of it writes in that
    # cycle, which only the banks' forwarding returns.
    "load-then-gemm-on-two-rows": lambda cfg: [
        _acc_load(cfg, 0), _gemm(4, 2).replace(iter_out=3, dst_factor_in=1, dst_factor_out=0)],
    "load-then-alu-on-two-rows": lambda cfg: [
        _acc_load(cfg, 0), _alu(3, 2).replace(iter_out=3, src_factor_out=0, dst_factor_out=0)],
    "load-8bit-then-alu": lambda cfg: [load(cfg, MemType.ACC_8BIT, ACC, 0, ROWS), _alu(0)],
    "pad-row-then-alu": lambda cfg: [_acc_load(cfg, 0, pad=True), _alu(1, op=AluOp.MAX)],
    "pad-row-then-gemm": lambda cfg: [_acc_load(cfg, 0, pad=True), _gemm(5)],
    # The detached ALU over rows just loaded, a GEMM beside it in the other bank over rows
    # loaded just before: the GEMM runs beside the ALU, both reading what the LOADs wrote.
    "load-then-alu-beside-gemm": lambda cfg: [_acc_load(cfg, BANK), _acc_load(cfg, 0),
                                              _alu(3, steps=ROWS - 1), _gemm(2, 4, 0)],
    # The GEMM beside the ALU, then a LOAD over the ALU's rows, then an ALU reading them.
    "alu-gemm-load-alu": lambda cfg: [_acc_load(cfg, 0), _alu(3, ROWS - 1, 0), _gemm(2, 4, 0),
                                      _acc_load(cfg, 0), _alu(0)],
}


def _no_acc_read_meets_a_load(compute):
    """A testbench (``run_core``'s ``watch``) that fails in a cycle where the compute stage's
    loader writes ACC and a unit reads it: the reason the loader's writes need no forwarding."""
    reads = [compute.acc_rd.en, compute.alu_acc_rd.en]
    if hasattr(compute, "alu_acc_rd_b"):
        reads.append(compute.alu_acc_rd_b.en)

    def watch(core):
        async def bench(ctx):
            cycle = 0
            async for _, _, load_en, *read_en in ctx.tick().sample(compute.load_acc_wr.en,
                                                                    *reads):
                cycle += 1
                assert not (load_en and any(read_en)), f"cycle {cycle}: ACC read beside a LOAD"
        return bench
    return watch


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_read_right_after_a_load_into_acc_sees_the_load(case):
    cfg = load_config("tiny")
    units = {"load": TensorLoad(cfg=cfg, types=LOAD_STAGE_TYPES), "compute": Compute(cfg=cfg),
             "store": TensorStore(cfg=cfg)}
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, len(UOP_LIST)),
        load(cfg, MemType.INP, INP, 0, 4),
        load(cfg, MemType.WGT, WGT, 0, 1),
        *CASES[case](cfg),
        _gemm(0, steps=0, push_next=1),
        store(cfg, OUT, 0, ROWS + 1, pop_prev=1, push_prev=1),
        _gemm(0, steps=0, pop_next=1),
        store(cfg, OUT + 0x100, BANK, ROWS, pop_prev=1),
        FINISH,
    ]
    compare(cfg, prog, UOP_LIST, core_args={"units": units},
            watch=_no_acc_read_meets_a_load(units["compute"]))
