"""ALU unit: every operation with and without an immediate on every batch row, both
ACC_READ_PORTS settings, read-after-write at distances 1..6 through dst and src, and the
initiation interval; compared row for row with fsim (docs/isa.md §3.4)."""

import random

import numpy as np
import pytest

from avta.hw.core.alu import Alu
from avta.isa import costs
from avta.isa.config import load_config
from avta.isa.enums import AluOp
from avta.isa.insn import AluInsn, Uop
from avta.sim.fsim.alu import execute_alu


def config(name, ports, scale=0):
    return load_config(name).replace(acc_read_ports=ports, alu_scale=scale)


@pytest.fixture
def run_alus(compare_unit, random_rows, uop_rows):
    """``run_alus(cfg, uops, insns, seed=0, small=True)``: the instructions on the ALU and on
    fsim from the same random ACC rows (narrow ones when ``small``), compared; the cycles of
    each instruction."""
    def run(cfg, uops, insns, seed=0, small=True):
        ports = {"uop_rd": ("uop", "r"), "acc_rd": ("acc", "r"), "acc_wr": ("acc", "w")}
        if cfg.acc_read_ports == 2:
            ports["acc_rd_b"] = ("acc", "r")
        rng = np.random.default_rng(seed)
        contents = {"acc": random_rows(cfg, "acc", rng, small=small),
                    "uop": uop_rows(cfg, uops)}
        return compare_unit(cfg, Alu(cfg=cfg), ports, insns, contents, execute_alu)
    return run


@pytest.mark.parametrize("op", list(AluOp), ids=lambda op: op.name)
@pytest.mark.parametrize("name,ports", [("tiny", 1), ("tiny", 2), ("batch2", 1)])
def test_every_op(run_alus, name, ports, op):
    cfg = config(name, ports, scale=int(op == AluOp.SCL))
    rng = random.Random(f"{name}{ports}{op}")
    uops = [Uop(rng.randrange(6), rng.randrange(6), 0) for _ in range(5)]
    imm = {AluOp.SHR: rng.choice([-5, 3, 31, -32]), AluOp.CLP: 100}.get(
        op, rng.randrange(-200, 200))
    insns = [
        AluInsn(alu_opcode=op, use_imm=1, imm=imm, uop_bgn=0, uop_end=3, iter_out=2,
                iter_in=2, dst_factor_out=1, src_factor_in=2),
        AluInsn(alu_opcode=op, uop_bgn=1, uop_end=5, iter_out=2, iter_in=1,
                dst_factor_out=3, src_factor_out=1),
    ]
    run_alus(cfg, uops, insns, seed=int(op))


@pytest.mark.parametrize("imm", [1 << 14, 0x7FFF, -0x8000, 12345, -3, 0])
@pytest.mark.parametrize("name,ports,scale", [("tiny", 1, 1), ("tiny", 2, 1), ("batch2", 1, 1),
                                              ("tiny", 1, 2), ("batch2", 2, 2)])
def test_scl_on_full_range_rows(run_alus, name, ports, scale, imm):
    """SCL on int32 lanes of any value (the 32×W-bit product, its rounding and the wrap at
    −2^31 · −2^(W−1)), with an immediate (sext(imm) · 2^(W−16)) and with per-lane multipliers
    read from ACC, W = 16 (ALU_SCALE: 1) or 24 (ALU_SCALE: 2)."""
    cfg = config(name, ports, scale=scale)
    uops = [Uop(0, 1, 0), Uop(2, 3, 0), Uop(4, 4, 0), Uop(5, 6, 0)]
    insns = [
        AluInsn(alu_opcode=AluOp.SCL, use_imm=1, imm=imm, uop_bgn=0, uop_end=4, iter_out=2,
                iter_in=2, dst_factor_out=8, src_factor_in=1),
        AluInsn(alu_opcode=AluOp.SCL, uop_bgn=0, uop_end=4, iter_out=3, iter_in=1,
                dst_factor_out=1, src_factor_out=2),
    ]
    run_alus(cfg, uops, insns, seed=imm & 0xFFFF, small=False)


@pytest.mark.parametrize("ports", [1, 2])
@pytest.mark.parametrize("distance", range(1, 7))
def test_read_after_write_at_distance(run_alus, ports, distance):
    """Step k reads ACC[src] written by step k − distance, and updates ACC[dst] written by step
    k − distance (docs/isa.md §3.4: each step sees every earlier step)."""
    cfg = config("tiny", ports)
    # Through src: step k writes row 20 + k and reads row 20 + k − distance.
    src_chain = [Uop(20 + k, 20 + k - distance, 0) for k in range(12)]
    # Through dst: the micro-op range repeats every `distance` steps on the same rows.
    dst_chain = [Uop(40 + k, 40 + k, 0) for k in range(distance)]
    uops = src_chain + dst_chain
    insns = [
        AluInsn(alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=12, iter_out=1, iter_in=1),
        AluInsn(alu_opcode=AluOp.MOV, uop_bgn=0, uop_end=12, iter_out=1, iter_in=1),
        AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=7, uop_bgn=0, uop_end=12, iter_out=1,
                iter_in=1),
        AluInsn(alu_opcode=AluOp.MUL, uop_bgn=12, uop_end=12 + distance, iter_out=2,
                iter_in=3),
        AluInsn(alu_opcode=AluOp.SHR, use_imm=1, imm=-1, uop_bgn=12, uop_end=12 + distance,
                iter_out=3, iter_in=2),
    ]
    run_alus(cfg, uops, insns, seed=distance)


@pytest.mark.parametrize("ports", [1, 2])
def test_initiation_interval(run_alus, ports):
    """II = 1 with an immediate (and for MOV); two operands: II = 2 on one read port, 1 on two."""
    cfg = config("tiny", ports)
    uops = [Uop(i, i + 16, 0) for i in range(16)]

    def pair(**fields):
        return [AluInsn(uop_bgn=0, uop_end=4, iter_out=1, iter_in=1, **fields),
                AluInsn(uop_bgn=0, uop_end=16, iter_out=2, iter_in=1, **fields)]
    insns = (pair(alu_opcode=AluOp.ADD, use_imm=1, imm=1) + pair(alu_opcode=AluOp.MAX)
             + pair(alu_opcode=AluOp.MOV))
    cycles = run_alus(cfg, uops, insns)
    per_step = [(cycles[i + 1] - cycles[i]) / (32 - 4) for i in range(0, 6, 2)]
    assert per_step == [1, 2 if ports == 1 else 1, 1]
    assert cycles[0] <= 4 + 8


@pytest.mark.parametrize("ports", [1, 2])
def test_cycles_are_the_cost_model(run_alus, ports):
    """An ALU instruction of N steps takes exactly N (2N with two operands on one ACC read port)
    + ``costs.ALU_FILL`` cycles on the unit, from ``start`` to ``done`` (fsim's model,
    sim/fsim/timing.py, adds the cycle the compute stage latches its copy): its index and
    operand registers included (hw/core/alu.py)."""
    cfg = config("tiny", ports)
    uops = [Uop(i, i + 16, 0) for i in range(4)]
    insns = [AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=3, uop_bgn=0, uop_end=4, iter_out=2,
                     iter_in=3, dst_factor_in=4, src_factor_in=4),
             AluInsn(alu_opcode=AluOp.MAX, uop_bgn=0, uop_end=4, iter_out=2, iter_in=3,
                     dst_factor_in=4, src_factor_in=4)]
    assert run_alus(cfg, uops, insns) == [24 + costs.ALU_FILL,
                                          24 * (3 - ports) + costs.ALU_FILL]


def test_degenerate_loops_do_nothing(run_alus):
    cfg = config("tiny", 1)
    uops = [Uop(1, 2, 0)]
    insns = [AluInsn(alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=0, iter_in=4),
             AluInsn(alu_opcode=AluOp.ADD, uop_bgn=1, uop_end=0, iter_out=1, iter_in=1)]
    cycles = run_alus(cfg, uops, insns)
    assert max(cycles) <= 3


def test_clip_at_int32_corners():
    """CLP, formed by comparisons made in parallel (hw/core/alu_lanes.py), against fsim on
    every pair of int32 corner values (−B wraps at −2^31; the formal check ``alu.ops`` proves
    every value)."""
    from amaranth.sim import Simulator
    from avta.hw.core.alu_lanes import AluLanes
    from avta.sim.fsim.alu import alu_op
    cfg = load_config("tiny")
    corners = [-(1 << 31), -(1 << 31) + 1, -100, -1, 0, 1, 100, (1 << 31) - 2, (1 << 31) - 1]
    pairs = [(a, b) for a in corners for b in corners]
    dut = AluLanes(cfg=cfg)
    got = []

    async def bench(ctx):
        ctx.set(dut.op, AluOp.CLP)
        for a, b in pairs:
            ctx.set(dut.a[0][0], a)
            ctx.set(dut.b[0][0], b)
            got.append(ctx.get(dut.out[0][0]))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    a, b = (np.array(column, dtype=np.int32) for column in zip(*pairs))
    with np.errstate(over="ignore"):
        assert got == alu_op(AluOp.CLP, a, b).tolist()


def _sync_targets(fragment):
    """Every signal a fragment (and its subfragments) assigns in the ``sync`` domain."""
    targets = []
    for stmt in fragment.statements.get("sync", []):
        targets += list(stmt._lhs_signals())
    for sub, _, _ in fragment.subfragments:
        targets += _sync_targets(sub)
    return targets


@pytest.mark.parametrize("ports", [1, 2])
def test_lanes_operands_are_flip_flops(ports):
    """The lanes' A and B are registers: the forwarding of the step ahead's result is decided
    before them, so no mux select fans out to every operand bit between them and the lanes
    (docs/architecture.md, timing on an FPGA)."""
    from amaranth.hdl import Fragment
    alu = Alu(cfg=config("tiny", ports))
    targets = _sync_targets(Fragment.get(alu, None))
    for operand in (alu.lanes.a, alu.lanes.b):
        assert any(t is operand.as_value() for t in targets)


# A single micro-op whose src row stays put: (iter_out, iter_in, src factors (out, in), dst
# factors (out, in), the steps that reuse the src row of the step before, docs/isa.md §3.4).
REUSE_CASES = {
    # A per-channel row per output block (runtime/ops/conv2d.py): held over the block's pixels.
    "row_per_block": (3, 5, (1, 0), (8, 1), 3 * 4),
    "one_row": (2, 4, (0, 0), (4, 1), 2 * 4 - 1),
    # src moves in the inner loop, but each outer iteration starts where the last one ended.
    "outer_lands_on_inner": (3, 3, (4, 2), (8, 1), 2),
    "moves_every_step": (2, 3, (1, 1), (4, 1), 0),
}


@pytest.mark.parametrize("case", list(REUSE_CASES))
def test_reused_src_row_takes_one_cycle(run_alus, case):
    """A two-operand step whose src row is the step before's (one micro-op, the src offset
    unchanged) reads only ACC[dst] through the one ACC read port: one cycle, not two, as
    ``costs.alu_cycles`` says."""
    cfg = config("tiny", 1)
    iter_out, iter_in, (sfo, sfi), (dfo, dfi), reused = REUSE_CASES[case]
    insn = AluInsn(alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=iter_out,
                   iter_in=iter_in, src_factor_out=sfo, src_factor_in=sfi,
                   dst_factor_out=dfo, dst_factor_in=dfi)
    steps = iter_out * iter_in
    assert run_alus(cfg, [Uop(0, 40, 0)], [insn]) == [2 * steps - reused + costs.ALU_FILL]
    assert costs.reused_src_steps(cfg, insn) == reused
    assert costs.alu_cycles(cfg, insn) == 2 * steps - reused + costs.ALU_FILL


def test_src_reuse_needs_one_micro_op(run_alus):
    """Two micro-ops reading one src row still read it at every step: the rule is the loop's,
    so that the cost is a function of the instruction alone."""
    cfg = config("tiny", 1)
    insn = AluInsn(alu_opcode=AluOp.MAX, uop_bgn=0, uop_end=2, iter_out=1, iter_in=3,
                   dst_factor_in=2)
    assert run_alus(cfg, [Uop(0, 40, 0), Uop(1, 40, 0)], [insn]) == [12 + costs.ALU_FILL]
    assert costs.alu_cycles(cfg, insn) == 12 + costs.ALU_FILL


@pytest.mark.parametrize("ports", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_held_src_row_sees_every_write(run_alus, ports, seed):
    """Random one-micro-op instructions on a few rows, so that steps write the src row they
    hold (at every distance): data as fsim, cycles as ``costs.alu_cycles``."""
    cfg = config("tiny", ports, scale=1)
    rng = random.Random(seed)
    ops = [op for op in AluOp if op != AluOp.MOV]
    uops = [Uop(rng.randrange(5), rng.randrange(5), 0) for _ in range(8)]
    insns = []
    for u in range(8):
        insns.append(AluInsn(
            alu_opcode=rng.choice(ops), uop_bgn=u, uop_end=u + 1,
            iter_out=rng.randrange(1, 4), iter_in=rng.randrange(1, 6),
            src_factor_out=rng.randrange(3), src_factor_in=rng.choice([0, 0, 1]),
            dst_factor_out=rng.randrange(3), dst_factor_in=rng.randrange(3)))
    cycles = run_alus(cfg, uops, insns, seed=seed)
    assert cycles == [costs.alu_cycles(cfg, insn) for insn in insns]


@pytest.mark.parametrize("ports", [1, 2])
def test_one_operand_steps_with_a_fixed_src_row(run_alus, ports):
    """MOV and immediate steps over one src row (a bias MOV of runtime/ops/conv2d.py) read
    ACC[src] at every step, one cycle each: only a two-operand step reuses a held row."""
    cfg = config("tiny", ports)
    loops = dict(uop_bgn=0, uop_end=1, iter_out=3, iter_in=4, src_factor_out=1,
                 dst_factor_out=8, dst_factor_in=1)
    insns = [AluInsn(alu_opcode=AluOp.MOV, **loops),
             AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=5, **loops),
             AluInsn(alu_opcode=AluOp.SHR, use_imm=1, imm=1, **loops)]
    assert run_alus(cfg, [Uop(0, 40, 0)], insns) == [12 + costs.ALU_FILL] * 3
