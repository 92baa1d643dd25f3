"""The residual add on the GEMM core (operands as INP rows, diagonal weight blocks) and the
choice between it and the ALU add by the cycle estimates."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.memories import scratchpad
from avta.runtime.ops.conv_plan import PlanError
from avta.runtime.ops.reference import add_ref
from avta.runtime.ops.requant import Requant
from avta.runtime.ops.residual import AddTiling, add_on_device, pack_add_weights, plan_add
from avta.sim.fsim.backend import fsim_device

TAILS = {"relu": Requant(0, (0, 127)), "shr2-offset": Requant(2, (-128, 127), offset=2),
         "wrap": Requant(), "clp": Requant(1, (-100, 100), use_clp=True)}


@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("shift_a", [0, 3, 6])
def test_gemm_add_is_bit_exact(cfg, int8, device, tail, shift_a):
    a = int8((2 * cfg.batch, 2 * cfg.block_out, 3, 5))
    b = int8(a.shape)
    a[0, 0, 0, :2], b[0, 0, 0, :2] = 127, (127, -128)      # the int32 sum leaves int8
    rq = TAILS[tail]
    if cfg.block_in != cfg.block_out:
        with pytest.raises(PlanError, match="BLOCK_IN"):
            add_on_device(device(cfg), a, b, requant=rq, shift_a=shift_a, path="gemm")
        return
    dev = device(cfg)
    out = add_on_device(dev, a, b, requant=rq, shift_a=shift_a, path="gemm")
    np.testing.assert_array_equal(out, add_ref(a, b, shift_a=shift_a, requant=rq))


@pytest.mark.parametrize("threads,slots", [(1, 1), (2, 2), (2, 4)])
def test_gemm_add_tiles(cfg, int8, device, threads, slots):
    """Many tiles through every accumulator slot, each tile's passes beside the next's GEMMs:
    operands loaded as INP by the load stage, no ACC_8BIT LOAD, no two-operand ADD, the two
    weight blocks loaded once."""
    if cfg.block_in != cfg.block_out:
        pytest.skip("the GEMM add needs BLOCK_IN = BLOCK_OUT")
    a = int8((cfg.batch, cfg.block_out, 6, 7))
    b = int8(a.shape)
    rq = Requant(1, (0, 127))
    dev = device(cfg, schedule="random", seed=threads)
    acc = scratchpad(cfg, "acc")
    banks = min(threads, acc.banks)
    tiling = AddTiling(5, threads, banks, acc.bank_rows if banks > 1 else acc.depth, slots)
    out = add_on_device(dev, a, b, requant=rq, shift_a=1, threads=threads, tiling=tiling)
    np.testing.assert_array_equal(out, add_ref(a, b, shift_a=1, requant=rq))
    insns = dev.last_program.insns
    loads = [i for i in insns if i.opcode == Opcode.LOAD and i.x_size]
    assert {i.memory_type for i in loads} == {MemType.INP, MemType.WGT, MemType.UOP}
    assert sum(i.x_size for i in loads if i.memory_type == MemType.WGT) == 2
    assert sum(i.x_size for i in loads if i.memory_type == MemType.INP) == 2 * 42
    assert not any(i.opcode == Opcode.ALU and i.alu_opcode == AluOp.ADD and not i.use_imm
                   for i in insns)


def test_add_weights():
    cfg = load_config("tiny")
    w = pack_add_weights(cfg, 3)
    np.testing.assert_array_equal(w[0], 8 * np.eye(4, dtype=np.int8))
    np.testing.assert_array_equal(w[1], np.eye(4, dtype=np.int8))
    with pytest.raises(PlanError, match="shift_a 7"):
        pack_add_weights(cfg, 7)


def test_resnet_adds_choose_the_gemm_core():
    """ResNet's adds (ReLU tail) on default and huge: the GEMM path's estimate is at least a
    quarter below the ALU's, and the planner takes it."""
    for name in ("default", "huge"):
        cfg = load_config(name)
        for shape in ((1, 64, 56, 56), (1, 256, 56, 56), (1, 1024, 14, 14), (1, 512, 7, 7)):
            plan = plan_add(cfg, shape, requant=Requant(1, (0, 127)))
            assert plan.path == "gemm" and plan.gemm_cycles < 0.75 * plan.alu_cycles, \
                (name, shape, plan)


def test_the_alu_add_where_the_gemm_core_cannot():
    rect = load_config("rect")
    plan = plan_add(rect, (1, 64, 8, 8), requant=Requant(1, (0, 127)))
    assert plan.path == "alu" and plan.gemm_cycles is None and "BLOCK_IN" in plan.why
    default = load_config("default")
    plan = plan_add(default, (1, 64, 8, 8), shift_a=7, requant=Requant(1, (0, 127)))
    assert plan.path == "alu" and "shift_a 7" in plan.why
    with pytest.raises(PlanError, match="shift_a 7"):
        plan_add(default, (1, 64, 8, 8), shift_a=7, path="gemm")
    with pytest.raises(ValueError, match="not one of"):
        plan_add(default, (1, 64, 8, 8), path="systolic")


@pytest.mark.parametrize("config", ["default", "huge"])
def test_estimates_follow_fsim(config, rng):
    """Both paths' estimates within 10 % of fsim's cycles (two threads, ResNet-like sizes)."""
    cfg = load_config(config)
    rq = Requant(1, (0, 127))
    for shape in ((1, 2 * cfg.block_out, 28, 28), (1, 8 * cfg.block_out, 7, 7)):
        a = rng.integers(-128, 128, shape, dtype=np.int8)
        b = rng.integers(-128, 128, shape, dtype=np.int8)
        plan = plan_add(cfg, shape, requant=rq)
        for path, guess in (("gemm", plan.gemm_cycles), ("alu", plan.alu_cycles)):
            dev = fsim_device(cfg, dram_size=4 << 20)
            add_on_device(dev, a, b, requant=rq, path=path)
            cycles = dev.last_result.cycles
            assert abs(guess - cycles) <= 0.10 * cycles, (path, shape, guess, cycles)


def test_four_slots_keep_the_store_off_the_compute_path():
    """With two accumulator buffers a tile's reset waits for the STORE of the tile two before;
    with four (the token counters allow it on default) the compute stage does not wait: ResNet's
    first add on huge is at least 15 % faster, and tight (2-bit token counters) keeps two."""
    from avta.runtime.ops.residual import estimate_add_gemm, plan_add_gemm
    huge = load_config("huge")
    n = 4 * 56 * 56
    four = plan_add_gemm(huge, n, requant=Requant(1, (0, 127)))
    assert four.slots == 4
    two = min((AddTiling(r, 2, 2, 256, 2) for r in (128, 196, 256)),
              key=lambda t: estimate_add_gemm(huge, n, t, Requant(1, (0, 127))))
    assert estimate_add_gemm(huge, n, four, Requant(1, (0, 127))) < 0.85 * estimate_add_gemm(
        huge, n, two, Requant(1, (0, 127)))
    assert plan_add_gemm(load_config("tight"), 64, requant=Requant(1, (0, 127))).slots == 2


def test_two_slot_estimate_waits_for_the_gemms_before_the_store():
    """ResNet-50's add of two 256×56×56 maps on huge (two requantization passes, fewer than
    the GEMM steps): a tile's STORE pops the token the next tile's last GEMM pushes, so with
    two accumulator buffers the reset two tiles on waits for it; the estimate follows fsim
    within 2 % for two and four buffers, and the planner takes four."""
    cfg = load_config("huge")
    rq = Requant(0, (0, 127))
    shape = (1, 256, 56, 56)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2))
    from avta.runtime.ops.residual import estimate_add_gemm
    n = 4 * 56 * 56
    for slots in (2, 4):
        tiling = AddTiling(128, 2, 2, scratchpad(cfg, "acc").bank_rows, slots)
        dev = fsim_device(cfg, dram_size=8 << 20)
        add_on_device(dev, a, b, requant=rq, tiling=tiling)
        cycles = dev.last_result.cycles
        assert abs(estimate_add_gemm(cfg, n, tiling, rq) - cycles) <= 0.02 * cycles, slots
    assert plan_add(cfg, shape, requant=rq).tiling.slots == 4
