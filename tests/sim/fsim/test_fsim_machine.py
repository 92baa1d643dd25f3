"""The machine around the instructions (docs/isa.md §3): token counters, deadlock, schedules, state
across launches, counters, the cycle estimate and trace events."""

import numpy as np
import pytest

from avta.isa import costs
from avta.sim.fsim import timing
from avta.isa.asm import format_insn
from avta.isa.config import load_config
from avta.isa.enums import AluOp, ErrorCode, MemType
from avta.isa.insn import Uop
from avta.isa.registers import COUNTER_NAMES, CYCLE_COUNTERS
from avta.sim.fsim import Fsim
from avta.sim.image import Image, alu, finish, gemm, load, store, sync

UOPS, INP, WGT, OUT = 0x800, 0x1000, 0x4000, 0x8000
ROWS = 4          # rows of a tile
SHIFT = 3


@pytest.fixture
def pipelined_matmul(random_tensor):
    """``pipelined_matmul(cfg, tiles, *, with_war_tokens=True)`` → ``(image, expected)``: a
    double-buffered tiled product: tile t = (INP rows · WGT row t) >> SHIFT, stored.

    Load, compute and store overlap; buffer b = t % 2 is reused by tile t+2 only after the
    stage that read it says so (C->L for INP/WGT, S->C for ACC/OUT), unless
    ``with_war_tokens`` is False, which leaves those write-after-read hazards unordered.
    """
    def build(cfg, tiles, *, with_war_tokens=True):
        rng = np.random.default_rng(11)
        inp = random_tensor(rng, (tiles * ROWS, cfg.batch, cfg.block_in), np.int8)
        wgt = random_tensor(rng, (tiles, cfg.block_out, cfg.block_in), np.int8)
        image = Image(cfg, size=1 << 16)
        image.put(INP, inp)
        image.put(WGT, wgt)
        image.put_uops(UOPS, [Uop(0, 0, 0), Uop(ROWS, ROWS, 1)])
        image.add(load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=2))
        for t in range(tiles):
            b = t % 2
            reuse = int(t >= 2 and with_war_tokens)
            last = t + 2 >= tiles or not with_war_tokens
            image.add(
                load(MemType.INP, sram=b * ROWS, dram=INP // cfg.inp_elem_bytes + t * ROWS, x=ROWS,
                     pop_next=reuse),
                load(MemType.WGT, sram=b, dram=WGT // cfg.wgt_elem_bytes + t, x=1, push_next=1),
                gemm(uops=(b, b + 1), iters=(ROWS, 1), dst=(1, 0), reset=1, pop_next=reuse),
                gemm(uops=(b, b + 1), iters=(ROWS, 1), dst=(1, 0), src=(1, 0), pop_prev=1,
                     push_prev=int(not last)),
                alu(AluOp.SHR, uops=(b, b + 1), iters=(ROWS, 1), dst=(1, 0), src=(1, 0), imm=SHIFT,
                    push_next=1),
                store(sram=b * ROWS, dram=OUT // cfg.out_elem_bytes + t * ROWS, x=ROWS, pop_prev=1,
                      push_prev=1),
            )
        # FINISH waits for the stores whose tokens no later tile popped (docs/isa.md §3 (c)).
        image.add(*[sync("pop_next")] * (min(tiles, 2) if with_war_tokens else tiles), finish())
        products = np.einsum("tmbk,tok->tmbo", inp.reshape(tiles, ROWS, cfg.batch, -1)
                             .astype(np.int64), wgt.astype(np.int64))
        expected = (products >> SHIFT).astype(np.int8).reshape(-1)
        return image, expected
    return build


def out_bytes(image, cfg, tiles):
    return image.get(OUT, tiles * ROWS * cfg.out_elem_bytes, np.int8)


@pytest.mark.parametrize("config", ["tiny", "batch2"])
def test_random_schedule_agrees_with_in_order(pipelined_matmul, config):
    from avta.isa.config import load_config
    cfg = load_config(config)
    image, expected = pipelined_matmul(cfg, 6)
    reference, sim = image.run()
    assert reference.status == "ok", reference.detail
    np.testing.assert_array_equal(out_bytes(image, cfg, 6), expected)
    exact = [n for n in COUNTER_NAMES if n not in CYCLE_COUNTERS]
    for seed in range(8):
        again, _ = pipelined_matmul(cfg, 6)
        result, other = again.run(schedule="random", seed=seed)
        assert result.status == "ok", result.detail
        assert again.data == image.data
        for name in ("acc", "out", "inp", "wgt", "uop"):
            np.testing.assert_array_equal(other.sram(name), sim.sram(name))
        assert {n: result.counters[n] for n in exact} == {n: reference.counters[n] for n in exact}


def test_random_schedule_exposes_a_missing_dependency(tiny_cfg, pipelined_matmul):
    outcomes = set()
    for seed in range(30):
        image, expected = pipelined_matmul(tiny_cfg, 6, with_war_tokens=False)
        result, _ = image.run(schedule="random", seed=seed)
        assert result.status == "ok", result.detail
        outcomes.add(bool((out_bytes(image, tiny_cfg, 6) == expected).all()))
    assert outcomes == {True, False}


def test_counters_are_exact(tiny_cfg, pipelined_matmul):
    cfg, tiles = tiny_cfg, 4
    image, _ = pipelined_matmul(cfg, tiles)
    result, _ = image.run()
    assert result.counters["INP_LD"] == tiles * ROWS * cfg.inp_elem_bytes
    assert result.counters["WGT_LD"] == tiles * cfg.wgt_elem_bytes
    assert result.counters["UOP_LD"] == 2 * cfg.uop_elem_bytes
    assert result.counters["OUT_ST"] == tiles * ROWS * cfg.out_elem_bytes
    assert result.counters["ACC_LD"] == 0
    assert result.counters["GEMM_STEPS"] == 2 * tiles * ROWS     # reset GEMMs count too
    assert result.counters["ALU_STEPS"] == tiles * ROWS
    assert result.estimated == frozenset(CYCLE_COUNTERS) | {"cycles"}
    assert set(result.counters) == set(COUNTER_NAMES)
    assert result.cycles > 0 and all(result.counters[n] >= 0 for n in CYCLE_COUNTERS)


# (instructions, expected cycles after the fetch latency): the documented estimate of
# sim/fsim/timing.py (avta.isa.costs). On tiny an INP element is 4 bytes, a WGT element 16, an OUT element 4 and a
# micro-op 4, on an 8-byte bus.
LOAD_FIXED = costs.INSN_OVERHEAD + costs.LOAD_LATENCY
#: A token-only compute instruction (a LOAD UOP of x_size 0) and FINISH.
SYNC_FINISH = costs.INSN_OVERHEAD + 1
CYCLE_CASES = [
    # A GEMM's fill counts its dot product's pipeline registers (one on tiny).
    ([gemm(iters=(3, 4))], 12 + costs.gemm_fill(load_config("tiny")) + 1),
    # An ALU instruction starts a cycle late (its copy is latched, timing.py).
    ([alu(AluOp.ADD, iters=(2, 5), imm=1)], 10 + costs.ALU_FILL + timing.ALU_LATCH + 1),
    ([alu(AluOp.ADD, iters=(2, 5), src=(5, 1))], 20 + costs.ALU_FILL + timing.ALU_LATCH + 1),
    # A step that reuses the src row of the step before (one micro-op, src offset unchanged)
    # reads only ACC[dst]: one cycle (costs.alu_cycles); each output block's first step two.
    ([alu(AluOp.ADD, iters=(2, 5), dst=(5, 1), src=(1, 0))],
     12 + costs.ALU_FILL + timing.ALU_LATCH + 1),
    # MOV reads only ACC[src].
    ([alu(AluOp.MOV, iters=(2, 5))], 10 + costs.ALU_FILL + timing.ALU_LATCH + 1),
    ([gemm(iters=(0, 4))], 1 + 1),
    # WGT: 3 rows of 5 elements, 80 bytes = 10 beats each.
    ([load(MemType.WGT, y=3, x=5, push_next=1), sync("pop_prev")], LOAD_FIXED + 30 + SYNC_FINISH),
    # INP narrower than the bus: one element per cycle, and one cycle per padding row.
    ([load(MemType.INP, y=2, x=6, pads=(1, 0, 1, 1), push_next=1), sync("pop_prev")],
     LOAD_FIXED + 2 * 6 + (3 * 8 - 12) + SYNC_FINISH),
    # A DRAM row of one element takes two cycles (the tensor load starts a row every other).
    ([load(MemType.INP, y=5, x=1, stride=3, push_next=1), sync("pop_prev")],
     LOAD_FIXED + 5 * costs.LOAD_ROW_MIN_CYCLES + SYNC_FINISH),
    # STORE: per row its cycles and the row overhead.
    ([store(y=4, x=3, push_prev=1), sync("pop_next")],
     costs.INSN_OVERHEAD + 4 * (3 + costs.STORE_ROW_OVERHEAD) + SYNC_FINISH),
]


@pytest.mark.parametrize("insns, cycles", CYCLE_CASES)
def test_cycle_estimate(tiny_cfg, insns, cycles):
    image = Image(tiny_cfg)
    image.add(*insns, finish())
    result, _ = image.run()
    assert result.cycles == costs.FETCH_LATENCY + cycles


def test_two_read_ports_halve_two_operand_alu(tiny_cfg):
    image = Image(tiny_cfg.replace(acc_read_ports=2))
    image.add(alu(AluOp.ADD, iters=(2, 5)), finish())
    assert image.run()[0].cycles == (costs.FETCH_LATENCY + 10 + costs.ALU_FILL
                                     + timing.ALU_LATCH + 1)


# -- tokens and deadlock ---------------------------------------------------------------------

def test_deadlock_names_waiting_instructions_and_counters(tiny_cfg):
    image = Image(tiny_cfg)
    waiting_load = load(MemType.INP, x=0, pop_next=1, push_next=1)
    waiting_compute = gemm(pop_prev=1, pop_next=1)
    image.add(waiting_load, waiting_compute, finish())
    result, _ = image.run()
    assert result.status == "deadlock"
    assert (result.error_code, result.error_insn) == (None, None)
    assert f"load stage: instruction 0 ({format_insn(waiting_load)}) waits on the empty C->L " \
           f"counter" in result.detail
    assert f"compute stage: instruction 1 ({format_insn(waiting_compute)}) waits on the empty " \
           f"L->C and S->C counters" in result.detail
    assert "store stage: no instructions left" in result.detail


def test_deadlock_names_only_the_empty_counter(tiny_cfg):
    image = Image(tiny_cfg)
    image.add(load(MemType.INP, x=0, push_next=1), gemm(pop_prev=1, pop_next=1), finish())
    result, _ = image.run()
    assert result.status == "deadlock"
    assert "waits on the empty S->C counter" in result.detail
    assert "L->C" not in result.detail


def test_stream_without_finish_is_a_deadlock(tiny_cfg):
    image = Image(tiny_cfg)
    image.add(load(MemType.ACC, x=0), gemm())
    result, _ = image.run()
    assert result.status == "deadlock"
    assert "ended without FINISH" in result.detail


def test_empty_stream_is_a_deadlock(tiny_cfg):
    result, _ = Image(tiny_cfg).run()
    assert result.status == "deadlock"


def test_token_overflow_at_default_width(default_cfg):
    image = Image(default_cfg)
    image.add(*[load(MemType.INP, x=0, push_next=1)] * 256, finish())
    result, _ = image.run()
    assert (result.status, result.error_code, result.error_insn) == \
        ("error", ErrorCode.TOKEN_OVERFLOW, 255)


def test_counter_drained_then_refilled_does_not_overflow(tiny_cfg):
    cfg = tiny_cfg.replace(token_bits=2)
    image = Image(cfg)
    image.add(*[load(MemType.INP, x=0, push_next=1)] * 3, *[sync("pop_prev")] * 3,
              *[load(MemType.INP, x=0, push_next=1)] * 3, *[sync("pop_prev")] * 3, finish())
    result, _ = image.run()
    assert result.status == "ok", result.detail


# -- state across launches (docs/isa.md §3, reset and launch) -------------------------------------

def test_scratchpads_persist_and_launch_clears_the_rest(tiny_cfg):
    cfg = tiny_cfg
    sim = Fsim(cfg)
    first = Image(cfg)
    first.put(INP, np.arange(2 * cfg.acc_elem_bytes, dtype=np.uint8))
    first.add(load(MemType.ACC, dram=INP // cfg.acc_elem_bytes, x=2),
              load(MemType.INP, x=0, push_next=1), finish())     # leaves an L->C token
    assert first.run(sim)[0].status == "ok"
    assert sim.sram("acc").any()

    second = Image(cfg)
    second.add(sync("push_next"), store(dram=OUT // cfg.out_elem_bytes, x=2, pop_prev=1,
                                        push_prev=1), sync("pop_next"), finish())
    result, _ = second.run(sim)
    assert result.status == "ok", result.detail
    assert result.counters["ACC_LD"] == 0
    np.testing.assert_array_equal(second.get(OUT, 2 * cfg.out_elem_bytes, np.int8),
                                  sim.sram("acc")[:2].reshape(-1).astype(np.int8))

    third = Image(cfg)
    third.add(gemm(pop_prev=1), finish())      # the token of the first launch is gone
    assert third.run(sim)[0].status == "deadlock"


def test_sram_views_are_read_only(tiny_cfg):
    sim = Fsim(tiny_cfg)
    for name, shape in (("uop", (tiny_cfg.uop.depth,)),
                        ("inp", (tiny_cfg.inp.depth, 1, tiny_cfg.block_in)),
                        ("wgt", (tiny_cfg.wgt.depth, tiny_cfg.block_out, tiny_cfg.block_in)),
                        ("acc", (tiny_cfg.acc.depth, 1, tiny_cfg.block_out)),
                        ("out", (tiny_cfg.acc.depth, 1, tiny_cfg.block_out))):
        view = sim.sram(name)
        assert view.shape == shape and not view.any()
        with pytest.raises(ValueError):
            view[0] = 1
    with pytest.raises(KeyError, match="no scratchpad"):
        sim.sram("psum")


def test_numpy_dram_is_modified_in_place(tiny_cfg):
    image = Image(tiny_cfg)
    image.put(INP, np.arange(16, dtype=np.int32) - 5)
    image.add(load(MemType.ACC, dram=INP // tiny_cfg.acc_elem_bytes, x=4), sync("push_next"),
              store(dram=OUT // tiny_cfg.out_elem_bytes, x=4, pop_prev=1, push_prev=1),
              sync("pop_next"), finish())
    image.put(0, image.codec.encode_program(image.insns))
    dram = np.frombuffer(bytes(image.data), dtype=np.uint8).copy()
    assert Fsim(tiny_cfg).run(dram, 0, len(image.insns)).status == "ok"
    np.testing.assert_array_equal(dram[OUT:OUT + 16].view(np.int8), np.arange(16) - 5)


def test_pipelined_matmul_on_every_shipped_config(shipped_cfg, pipelined_matmul):
    image, expected = pipelined_matmul(shipped_cfg, 3)
    result, _ = image.run(strict=True)
    assert result.status == "ok", result.detail
    np.testing.assert_array_equal(out_bytes(image, shipped_cfg, 3), expected)


def test_gemm_beside_alu_detaches_and_the_next_alu_follows_the_first(tiny_cfg):
    """A GEMM started beside a detached ALU instruction (other bank) that issues its steps
    first detaches too (hw/core/stage_control.py): it retires the cycle after the ALU, and the
    next ALU instruction starts as soon as the first has retired, as it would without the
    GEMM."""
    cfg = tiny_cfg
    other_bank = cfg.acc_depth // 2
    def run(with_gemm):
        image = Image(cfg)
        image.put_uops(UOPS, [Uop(0, 0, 0), Uop(other_bank, 0, 0)])
        pass_ = alu(AluOp.ADD, uops=(0, 1), iters=(1, 20), dst=(0, 1), src=(0, 1), imm=1)
        beside = [gemm(uops=(1, 2), iters=(1, 2), dst=(0, 1), reset=1)] if with_gemm else []
        image.add(load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=2), pass_, *beside,
                  pass_, finish())
        result, _ = image.run()
        assert result.status == "ok"
        return result.cycles
    assert run(True) == run(False)


def test_compute_stage_load_waits_behind_the_load_stages_burst(tiny_cfg):
    """The compute stage's LOADs share the read engine with the load stage's (hw/axi/vme.py): a
    micro-op LOAD issued while a long INP LOAD streams gets its beats after that one's."""
    cfg = tiny_cfg
    image = Image(cfg)
    image.put_uops(UOPS, [Uop(0, 0, 0), Uop(1, 0, 0)])
    image.add(alu(AluOp.ADD, iters=(1, 10), dst=(0, 1), src=(0, 1), imm=1),     # compute, first
              load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=2),         # compute, later
              load(MemType.INP, x=200),                                         # load, at once
              finish())
    result, _ = image.run()
    inp_end = costs.FETCH_LATENCY + LOAD_FIXED + 200
    assert result.cycles == inp_end + 2 + 1          # then the two micro-ops, then FINISH
