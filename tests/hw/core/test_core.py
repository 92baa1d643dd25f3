"""The whole core in the Amaranth simulator with the DRAM model: hand-built programs compared
with fsim byte for byte, the error codes and indices of docs/isa.md §3.5, launch semantics and the
counters of docs/architecture.md."""

import numpy as np
import pytest

from avta.sim.amaranth.core_run import run_core
from avta.isa.config import load_config
from avta.isa.encoding import codec, finish
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn, Uop
from avta.isa.memories import base_alignment, elem_bytes
from avta.sim.fsim import Fsim
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.mirror import run_differences

L, S = Opcode.LOAD, Opcode.STORE
FINISH = GemmInsn(opcode=Opcode.FINISH)

# DRAM regions of the hand-built programs (byte addresses).
INSN, UOPS, INP, WGT, ACC, OUT, SIZE = 0x0, 0x400, 0x800, 0x1000, 0x2000, 0x3000, 0x4000


def _elem(cfg, addr, mtype):
    return addr // elem_bytes(cfg, mtype)


def load(cfg, mtype, addr, sram, x, **kw):
    return MemoryInsn(opcode=L, memory_type=mtype, sram_base=sram,
                      dram_base=_elem(cfg, addr, mtype), y_size=1, x_size=x, x_stride=x, **kw)


def store(cfg, addr, sram, x, **kw):
    return MemoryInsn(opcode=S, memory_type=MemType.OUT, sram_base=sram,
                      dram_base=_elem(cfg, addr, MemType.OUT), y_size=1, x_size=x, x_stride=x,
                      **kw)


def image(cfg, insns, uops=(), seed=0, size=SIZE):
    c = codec(cfg)
    rng = np.random.default_rng(seed)
    dram = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
    blob = c.encode_program(insns)
    dram[INSN:INSN + len(blob)] = blob
    if uops:
        raw = c.encode_uops(uops)
        dram[UOPS:UOPS + len(raw)] = raw
    return dram


def compare(cfg, insns, uops=(), *, seed=0, core_args=None, watch=None, **knobs):
    """Run on fsim and on the core; the same status, error, exact counters and DRAM image.
    ``core_args`` and ``watch`` go to :func:`run_core` (the core's units; a testbench beside)."""
    dram = image(cfg, insns, uops, seed)
    ref = np.frombuffer(bytes(dram), dtype=np.uint8).copy()
    want = Fsim(cfg).run(ref, INSN, len(insns))
    got = run_core(cfg, dram, INSN, len(insns), knobs=MemoryKnobs(seed=seed, **knobs),
                   core_args=core_args, watch=watch)
    differences = run_differences(want, got, ref, np.frombuffer(bytes(dram), dtype=np.uint8),
                                  ("fsim", "core"))
    assert not differences, differences
    return got, want


def matmul_program(cfg):
    """out = shr(inp · wgtᵀ, 2) for two rows, through every stage with tokens."""
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, 2),
        load(cfg, MemType.INP, INP, 0, 2),
        load(cfg, MemType.WGT, WGT, 0, 2, push_next=1),
        GemmInsn(opcode=Opcode.GEMM, reset=1, uop_bgn=0, uop_end=2, iter_out=1, iter_in=1),
        GemmInsn(opcode=Opcode.GEMM, pop_prev=1, uop_bgn=0, uop_end=2, iter_out=1, iter_in=2),
        AluInsn(alu_opcode=AluOp.SHR, use_imm=1, imm=2, uop_bgn=0, uop_end=2, iter_out=1,
                iter_in=1, push_next=1),
        store(cfg, OUT, 0, 2, pop_prev=1, push_prev=1),
        GemmInsn(opcode=Opcode.GEMM, pop_next=1),
        FINISH,
    ]
    return prog, [Uop(0, 0, 0), Uop(1, 1, 1)]


@pytest.mark.parametrize("config", ["tiny", "rect"])
def test_matmul_program(config):
    cfg = load_config(config)
    prog, uops = matmul_program(cfg)
    got, _ = compare(cfg, prog, uops, backpressure=0.2, latency=(0, 4), reorder=True)
    assert got.counters["ACC_WR"] >= 8


def test_loads_of_every_type_and_alu_program():
    cfg = load_config("tiny")
    prog = [
        load(cfg, MemType.UOP, UOPS, 0, 3),
        load(cfg, MemType.ACC, ACC, 0, 2, x_pad_1=1, pad_value=1),
        load(cfg, MemType.ACC_8BIT, ACC + 0x100, 3, 3, y_pad_0=1, pad_value=2),
        AluInsn(alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=3, iter_out=1, iter_in=2,
                dst_factor_in=3),
        AluInsn(alu_opcode=AluOp.MIN, use_imm=1, imm=-5, uop_bgn=0, uop_end=3, iter_out=2,
                iter_in=1, src_factor_out=1, push_next=1),
        MemoryInsn(opcode=S, memory_type=MemType.OUT, pop_prev=1, push_prev=1, sram_base=0,
                   dram_base=_elem(cfg, OUT, MemType.OUT), y_size=3, x_size=3, x_stride=4),
        GemmInsn(opcode=Opcode.GEMM, pop_next=1),
        FINISH,
    ]
    compare(cfg, prog, [Uop(0, 3, 0), Uop(1, 4, 0), Uop(2, 5, 0)], backpressure=0.3,
            latency=(0, 6), reorder=True)


@pytest.mark.parametrize("case", ["decode", "decode_after_finish", "decode_beats_exec",
                                  "dram", "fetch_outside", "overflow"])
def test_errors(case):
    cfg = load_config("tiny").replace(token_bits=2)
    prog, uops = matmul_program(cfg)
    bad_store = MemoryInsn(opcode=S, memory_type=MemType.INP, x_size=1, y_size=1)
    outside = load(cfg, MemType.INP, SIZE + 0x40, 0, 1)
    if case == "decode":
        prog = prog[:4] + [bad_store] + prog[4:]
    elif case == "decode_after_finish":
        prog = prog + [AluInsn(alu_opcode=7)]
    elif case == "decode_beats_exec":
        prog = [outside] + prog + [bad_store]
    elif case == "dram":
        prog = [outside] + prog
    elif case == "fetch_outside":
        prog = prog[:3]
        got = run_core(cfg, image(cfg, prog, uops, size=0x30), INSN, 5)
        assert (got.status, got.error_code, got.error_insn) == ("error", 9, 3)
        return
    elif case == "overflow":
        # TOKEN_BITS 2: the fourth push on L→C with nothing popping overflows (a long ALU keeps
        # the unordered FINISH from ending the run first).
        prog = [load(cfg, MemType.INP, INP, 0, 1, push_next=1) for _ in range(4)] + [
            AluInsn(alu_opcode=AluOp.ADD, use_imm=1, uop_bgn=0, uop_end=1, iter_out=100,
                    iter_in=4), FINISH]
    got, want = compare(cfg, prog, uops)
    assert got.status == "error"
    expected = {"decode": (5, 4), "decode_after_finish": (2, 9), "decode_beats_exec": (5, 10),
                "dram": (9, 0), "overflow": (7, 3)}[case]
    assert (got.error_code, got.error_insn) == expected


def test_relaunch_clears_counters_and_keeps_scratchpads():
    cfg = load_config("tiny")
    # The second launch runs the same stream again: the GEMM accumulates onto the first run's
    # ACC rows (scratchpads persist) while counters restart from zero.
    prog = [load(cfg, MemType.UOP, UOPS, 0, 1), load(cfg, MemType.INP, INP, 0, 1),
            load(cfg, MemType.WGT, WGT, 0, 1, push_next=1),
            GemmInsn(opcode=Opcode.GEMM, pop_prev=1, uop_bgn=0, uop_end=1, iter_out=1,
                     iter_in=1, push_next=1),
            store(cfg, OUT, 0, 1, pop_prev=1, push_prev=1),
            GemmInsn(opcode=Opcode.GEMM, pop_next=1), FINISH]
    dram = image(cfg, prog, [Uop(0, 0, 0)])
    ref = np.frombuffer(bytes(dram), dtype=np.uint8).copy()
    fsim = Fsim(cfg)
    for _ in range(2):
        want = fsim.run(ref, INSN, len(prog))
    got = run_core(cfg, dram, INSN, len(prog), launches=2)
    assert got.status == "ok" and bytes(dram) == ref.tobytes()
    assert got.counters["GEMM_STEPS"] == want.counters["GEMM_STEPS"] == 1


def test_stream_without_finish_times_out():
    cfg = load_config("tiny")
    prog = [load(cfg, MemType.INP, INP, 0, 1)]
    got = run_core(cfg, image(cfg, prog), INSN, 1, max_cycles=300)
    assert got.status == "timeout"


def test_launch_while_busy_is_ignored():
    from avta.hw.core.core import Core
    from avta.sim.amaranth.testbench import run_sim, wait_until
    from avta.sim.amaranth.dram import DramModel

    cfg = load_config("tiny")
    prog, uops = matmul_program(cfg)
    dram = image(cfg, prog, uops)
    ref = np.frombuffer(bytes(dram), dtype=np.uint8).copy()
    want = Fsim(cfg).run(ref, INSN, len(prog))
    core = Core(cfg=cfg, queue_depth=8)
    model = DramModel(dram, data_bits=cfg.axi_data_bits)
    for name in ("fetch_mem", "ld_mem", "cp_mem"):
        model.add_read_client(getattr(core, name), name)
    model.add_write_client(core.st_mem)
    seen = {}

    async def bench(ctx):
        ctx.set(core.insn_addr, INSN)
        ctx.set(core.insn_count, len(prog))
        ctx.set(core.launch, 1)
        await ctx.tick()
        ctx.set(core.launch, 0)
        await ctx.tick().repeat(12)
        ctx.set(core.launch, 1)            # while busy: no effect
        await ctx.tick()
        ctx.set(core.launch, 0)
        await wait_until(ctx, ~core.busy, timeout=2000, what="end of run")
        seen.update(finish=ctx.get(core.finish), error=ctx.get(core.error),
                    steps=ctx.get(core.counters.gemm_steps), cycles=ctx.get(core.cycles))

    run_sim(core, bench, background=[model.run])
    assert (seen["finish"], seen["error"]) == (1, 0)
    assert seen["steps"] == want.counters["GEMM_STEPS"] and seen["cycles"] > 13
    assert bytes(dram) == ref.tobytes()


@pytest.mark.parametrize("key", ["UOP", "INP", "WGT", "ACC", "OUT"])
def test_an_unaligned_base_register_is_error_11_at_launch(key):
    """docs/isa.md §3.5: the RTL used to drop the low bits, so fsim and the RTL disagreed;
    now both stop at launch with error 11 at index 0."""
    cfg = load_config("tiny")
    prog, uops = matmul_program(cfg)
    bases = {key: base_alignment(cfg, key) // 2 or 1}
    got = run_core(cfg, image(cfg, prog, uops), INSN, len(prog), bases=bases)
    ref = np.frombuffer(bytes(image(cfg, prog, uops)), dtype=np.uint8).copy()
    want = Fsim(cfg).run(ref, INSN, len(prog), bases=bases)
    assert (got.status, got.error_code, got.error_insn) == \
        (want.status, want.error_code, want.error_insn) == ("error", 11, 0)
    aligned = run_core(cfg, image(cfg, prog, uops), INSN, len(prog),
                       bases={key: 2 * base_alignment(cfg, key)})
    assert aligned.status == "ok"


@pytest.mark.parametrize("op", ["gemm", "alu"])
def test_an_error_abandons_a_long_compute_instruction(op):
    """docs/isa.md §3.5: the machine stops at once. While the compute stage runs 268M steps,
    the load stage reads outside DRAM (error 9): the run used to wait for the steps to finish."""
    cfg = load_config("tiny")
    loop = dict(uop_bgn=0, uop_end=1, iter_out=16383, iter_in=16383)
    long = GemmInsn(**loop) if op == "gemm" else \
        AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=1, **loop)
    prog = [load(cfg, MemType.UOP, UOPS, 0, 1), long,
            MemoryInsn(opcode=L, memory_type=MemType.INP, dram_base=1 << 20, y_size=1,
                       x_size=1, x_stride=1), finish()]
    got = run_core(cfg, image(cfg, prog, [Uop(0, 0, 0)]), INSN, len(prog), max_cycles=3000)
    assert (got.status, got.error_code, got.error_insn) == ("error", 9, 2)
    assert got.cycles < 1000


def test_a_load_that_leaves_dram_stops_requesting_rows():
    """Error 9 came only after all of a LOAD's rows had been requested
    (4000 here); the LOAD now stops at the first bad beat."""
    cfg = load_config("tiny")
    rows_apart = SIZE // cfg.inp_elem_bytes           # row 1 and later lie outside DRAM
    prog = [MemoryInsn(opcode=L, memory_type=MemType.INP, dram_base=0, y_size=4000, x_size=1,
                       x_stride=rows_apart), finish()]
    got = run_core(cfg, image(cfg, prog), INSN, len(prog), max_cycles=3000)
    assert (got.status, got.error_code, got.error_insn) == ("error", 9, 0)
    assert got.cycles < 500


def test_a_store_that_leaves_dram_stops_at_its_error():
    """A STORE of 4000 rows whose row 1 lies outside DRAM ends with error 9
    once that row is answered, instead of after every row."""
    cfg = load_config("tiny")
    rows_apart = SIZE // cfg.out_elem_bytes
    prog = [MemoryInsn(opcode=S, memory_type=MemType.OUT, dram_base=0, y_size=4000, x_size=1,
                       x_stride=rows_apart), finish()]
    got = run_core(cfg, image(cfg, prog), INSN, len(prog), max_cycles=3000)
    assert (got.status, got.error_code, got.error_insn) == ("error", 9, 0)
    assert got.cycles < 500


@pytest.mark.parametrize("bad", [0, 1, 2])
def test_read_ahead_errors_are_the_loads_own(bad):
    """Read-ahead (docs/architecture.md, load stage): WGT LOADs overlap, each one's DRAM error
    is reported with its own index (the released LOAD's by the stage's detached completion),
    the earliest in program order first, as on fsim."""
    cfg = load_config("tiny")
    loads = [load(cfg, MemType.WGT, SIZE + 0x40 if i == bad else WGT + 0x40 * i, 4 * i, 4,
                  push_next=1) for i in range(3)]
    prog = loads + [GemmInsn(opcode=Opcode.GEMM, pop_prev=1) for _ in loads] + [FINISH]
    got, want = compare(cfg, prog, backpressure=0.3, latency=(0, 6), reorder=True)
    assert (got.status, got.error_code, got.error_insn) == ("error", 9, bad)


def test_read_ahead_overflow_is_the_released_loads():
    """A released LOAD pushes when it completes: the fourth push onto L→C (TOKEN_BITS 2) is
    error 7 at its index."""
    cfg = load_config("tiny").replace(token_bits=2)
    prog = [load(cfg, MemType.WGT, WGT + 0x40 * i, 4 * i, 4, push_next=1) for i in range(4)] + [
        AluInsn(alu_opcode=AluOp.ADD, use_imm=1, uop_bgn=0, uop_end=1, iter_out=100,
                iter_in=4), FINISH]
    got, want = compare(cfg, prog, [Uop(0, 0, 0)])
    assert (got.status, got.error_code, got.error_insn) == ("error", 7, 3)
