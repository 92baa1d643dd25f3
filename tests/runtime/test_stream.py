"""The stream builder: well-formed, decodable programs; misuse caught with clear errors."""

import pytest

from avta.isa.encoding import codec
from avta.isa.enums import AluOp, MemType, Opcode, PadValue, Stage
from avta.isa.insn import GemmInsn, MemoryInsn
from avta.isa.legality import check_program
from avta.isa.config import load_config
from avta.runtime.stream import StreamBuilder, StreamError
from avta.runtime.wellformed import check_wellformed
from avta.runtime.uop_kernel import Loop, UopKernel

L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def small_program(cfg):
    """Load, reset, GEMM, requantize, store: the shape of every operator."""
    b = StreamBuilder(cfg)
    b.load(MemType.INP, sram=0, dram=100, x_size=2, y_size=2, x_stride=5, y_pad=(1, 0),
           x_pad=(0, 1))
    b.load(MemType.WGT, sram=0, dram=7, x_size=1)
    b.dep_push(L, C)
    b.dep_pop(L, C)
    b.gemm(UopKernel([(0, 0, 0)], [Loop(6, 1)]), reset=True)
    b.gemm(UopKernel([(0, 0, 0)], [Loop(6, 1, 1)]))
    b.alu(UopKernel([(0, 0)], [Loop(6, 1, 1)]), AluOp.SHR, imm=3)
    b.alu(UopKernel([(0, 0)], [Loop(6, 1, 1)]), AluOp.CLP, imm=100)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store(sram=0, dram=40, x_size=3, y_size=2, x_stride=8)
    return b.finish()


def test_program_is_legal_and_decodes(shipped_cfg):
    prog = small_program(shipped_cfg)
    assert check_program(prog.insns) is None
    linked = prog.link(1000)
    assert codec(shipped_cfg).decode_program(prog.encode(1000)) == linked
    uop_load = linked[prog.uop_loads[0]]
    assert uop_load.memory_type == MemType.UOP and uop_load.dram_base == 1000


def test_finish_is_last_flagless_and_after_everything(default_cfg):
    prog = small_program(default_cfg)
    last = len(prog) - 1
    assert prog.insns[last] == GemmInsn(opcode=Opcode.FINISH)
    assert all(prog.ledger.ordered(i, last) for i in range(last))
    for q in ((L, C), (S, C)):
        assert prog.ledger.outstanding(*q) == 0


def test_closing_sequence_adds_pushes_and_pops(default_cfg):
    b = StreamBuilder(default_cfg)
    b.load(MemType.INP, sram=0, dram=0, x_size=1)
    b.store(sram=0, dram=0, x_size=1)           # (not a sensible program; tokens only)
    prog = b.finish()
    # The LOAD and STORE push to compute; one compute no-op pops both, then FINISH.
    assert prog.insns[0].push_next and prog.insns[1].push_prev
    nop = prog.insns[2]
    assert nop.opcode == Opcode.LOAD and nop.x_size == 0 and nop.pop_prev and nop.pop_next
    assert prog.insns[3].opcode == Opcode.FINISH and len(prog) == 4


def test_empty_program_is_just_finish(default_cfg):
    prog = StreamBuilder(default_cfg).finish()
    assert prog.insns == (GemmInsn(opcode=Opcode.FINISH),)


def test_push_attaches_to_last_instruction_of_stage(default_cfg):
    b = StreamBuilder(default_cfg)
    first = b.load(MemType.INP, sram=0, dram=0, x_size=1)
    b.alu(UopKernel([(0, 0)]), AluOp.ADD, imm=1)
    b.dep_push(L, C)                 # the LOAD is still load's latest: no no-op needed
    b.dep_push(L, C)                 # it already pushes: a load no-op carries the second
    prog_insns = b._insns
    assert prog_insns[first].push_next
    assert prog_insns[-1].opcode == Opcode.LOAD and prog_insns[-1].x_size == 0
    assert prog_insns[-1].memory_type == MemType.INP and prog_insns[-1].push_next


def test_pending_pop_comes_before_push(default_cfg):
    b = StreamBuilder(default_cfg)
    b.dep_push(C, L)
    b.dep_pop(C, L)
    b.dep_push(L, C)                 # the pop must happen first: a no-op does both
    nop = b._insns[-1]
    assert nop.pop_next and nop.push_next and nop.x_size == 0


def test_pop_without_push_is_refused(default_cfg):
    b = StreamBuilder(default_cfg)
    with pytest.raises(StreamError, match="no token to take.*dep_push\\(LOAD, COMPUTE\\)"):
        b.dep_pop(L, C)


def test_no_queue_between_load_and_store(default_cfg):
    with pytest.raises(Exception, match="no token queue from LOAD to STORE"):
        StreamBuilder(default_cfg).dep_push(L, S)


def test_token_overflow_is_refused(default_cfg):
    cfg = default_cfg.replace(token_bits=2)
    b = StreamBuilder(cfg)
    for _ in range(3):
        b.load(MemType.INP, sram=0, dram=0, x_size=1)
        b.dep_push(L, C)
    b.load(MemType.INP, sram=0, dram=0, x_size=1)
    with pytest.raises(StreamError, match=r"could take the counter to 4.*holds at most 3"):
        b.dep_push(L, C)


def test_back_pressure_keeps_counter_low(default_cfg):
    """Load waits for compute every other task: the counter never passes 2 (rule (b))."""
    cfg = default_cfg.replace(token_bits=2)
    b = StreamBuilder(cfg)
    for j in range(20):
        if j >= 2:
            b.dep_pop(C, L)
        b.load(MemType.INP, sram=0, dram=0, x_size=1)
        b.dep_push(L, C)
        b.dep_pop(L, C)
        b.alu(UopKernel([(0, 0)]), AluOp.ADD, imm=1)
        b.dep_push(C, L)
    prog = b.finish()
    assert prog.ledger.peak(L, C) == 2
    assert prog.ledger.peak(C, L) <= 3


@pytest.mark.parametrize("call, message", [
    (lambda b, cfg: b.load(MemType.INP, sram=0, dram=0, x_size=cfg.inp_depth + 1),
     "runs past the"),
    (lambda b, cfg: b.load(MemType.INP, sram=cfg.inp_depth - 2, dram=0, x_size=1,
                           y_pad=(1, 1)), "runs past the"),
    (lambda b, cfg: b.load(MemType.OUT, sram=0, dram=0, x_size=1), "cannot LOAD memory type OUT"),
    (lambda b, cfg: b.load(MemType.INP, sram=0, dram=0, x_size=0), "at least one element"),
    (lambda b, cfg: b.load(MemType.INP, sram=0, dram=0, x_size=1, x_pad=(16, 0)),
     "0..15"),
    (lambda b, cfg: b.load(MemType.INP, sram=0, dram=1 << 32, x_size=1), "dram_base"),
    (lambda b, cfg: b.load(MemType.INP, sram=0, dram=0, x_size=1, x_stride=1 << 16),
     "x_stride"),
    (lambda b, cfg: b.store(sram=0, dram=0, x_size=4, y_size=2, x_stride=3), "written twice"),
    (lambda b, cfg: b.store(sram=cfg.acc_depth, dram=0, x_size=1), "runs past the"),
    (lambda b, cfg: StreamBuilder(cfg.replace(log_acc_factor_restrict=1)).gemm(
        UopKernel([(0, 0, 0)], [Loop(2, 1 << (cfg.acc_factor_bits - 1))])), "dst_factor_out"),
    (lambda b, cfg: b.gemm(UopKernel([(cfg.acc_depth - 1, 0, 0)], [Loop(2, 1)])),
     "dst \\(ACC\\) index reaches"),
    (lambda b, cfg: b.gemm(UopKernel([(0, cfg.inp_depth, 0)])), "src \\(INP\\) index"),
    (lambda b, cfg: b.alu(UopKernel([(0, 0)]), AluOp.ADD, imm=1 << 15), "imm"),
    (lambda b, cfg: b.alu(UopKernel([(0, 0, 1)]), AluOp.ADD), "no weights"),
    (lambda b, cfg: b.gemm(UopKernel([(0, 0, 0)] * (cfg.uop_depth + 1))), "does not fit"),
])
def test_misuse_is_refused(tiny_cfg, call, message):
    with pytest.raises(StreamError, match=message):
        call(StreamBuilder(tiny_cfg), tiny_cfg)


def test_finished_builder_refuses_more(default_cfg):
    b = StreamBuilder(default_cfg)
    b.finish()
    with pytest.raises(StreamError, match="finished"):
        b.load(MemType.INP, sram=0, dram=0, x_size=1)


def test_pad_value_and_acc8_encode(default_cfg):
    b = StreamBuilder(default_cfg)
    b.load(MemType.ACC_8BIT, sram=4, dram=9, x_size=3, y_size=2, x_stride=7, y_pad=(2, 1),
           x_pad=(1, 2), pad_value=PadValue.MIN)
    prog = b.finish()
    insn = prog.insns[0]
    assert isinstance(insn, MemoryInsn) and insn.stage == C
    assert (insn.pad_value, insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1) == \
        (PadValue.MIN, 2, 1, 1, 2)
    assert insn.rows == 6 * 5


def test_a_refused_push_leaves_the_builder_consistent():
    """A push refused for overflow (rule (b)) is not half-recorded: the builder goes on, and its
    closing sequence pops exactly the tokens that were pushed (a half-recorded push
    made finish() pop one token too many, a deadlock)."""
    b = StreamBuilder(load_config("tight"))         # 2-bit counters: at most 3 tokens
    for _ in range(3):
        b.dep_push(Stage.LOAD, Stage.COMPUTE)
    with pytest.raises(StreamError, match="at most 3"):
        b.dep_push(Stage.LOAD, Stage.COMPUTE)
    for _ in range(3):
        b.dep_pop(Stage.LOAD, Stage.COMPUTE)
    b.dep_push(Stage.COMPUTE, Stage.LOAD)       # the load stage waits for those pops
    b.dep_pop(Stage.COMPUTE, Stage.LOAD)
    assert check_wellformed(b.finish()) == []


def test_gemm_part_runs_a_range_of_the_kernels_micro_ops(tiny_cfg):
    b = StreamBuilder(tiny_cfg)
    kernel = UopKernel([(0, 0, 0), (1, 1, 1), (2, 2, 2), (3, 3, 3)], [Loop(2, 4, 4, 4)])
    b.preload(kernel)                       # the one micro-op LOAD
    b.gemm(kernel, part=(0, 1))
    b.gemm(kernel, part=(1, 4))
    insns = [i for i in b.finish().insns if i.opcode == Opcode.GEMM]
    assert [(i.uop_bgn, i.uop_end) for i in insns[:2]] == [(0, 1), (1, 4)]
    assert all(i.iter_out == 2 for i in insns[:2])
    with pytest.raises(StreamError, match="not a range"):
        StreamBuilder(tiny_cfg).gemm(kernel, part=(2, 5))


def test_a_tile_may_begin_before_the_previous_one_ends_but_not_on_its_buffer(tiny_cfg):
    from avta.runtime.pipeline import Pipeline
    pipe = Pipeline(StreamBuilder(tiny_cfg), threads=2)
    assert pipe.tile_buffer() == 0
    assert (pipe.begin_tile(), pipe.begin_tile()) == (0, 1)
    with pytest.raises(RuntimeError, match="same accumulator buffer"):
        pipe.begin_tile()
    pipe.end_tile()
    assert pipe.tile_buffer() == 0
    pipe.end_tile()
    with pytest.raises(RuntimeError, match="has not begun"):
        pipe.end_tile()


def test_four_accumulator_buffers_wait_for_the_store_four_tiles_back(tiny_cfg):
    """With ``slots=4`` tile t uses buffer t % 4 and pops S→C from tile 4 on: its start waits
    for the store of tile t − 4, not t − 2; the input buffers stay two."""
    from avta.runtime.pipeline import Pipeline
    b = StreamBuilder(tiny_cfg)
    pipe = Pipeline(b, threads=2, slots=4)
    for t in range(6):
        assert pipe.tile_buffer() == t % 4
        if t >= 4:
            with pytest.raises(StreamError, match="pop"):
                pipe.begin_tile()       # no store has pushed S→C yet
            pipe.begin_store()
            pipe.end_store()
        assert pipe.begin_tile() == t % 4
        pipe.end_tile()
    assert pipe.threads == 2 and pipe.slots == 4


@pytest.mark.parametrize("slots, message", [(1, "at least threads"), (True, "integer"),
                                            (4, "token counters hold 3")])
def test_accumulator_buffers_are_checked(slots, message):
    from avta.runtime.pipeline import Pipeline
    cfg = load_config("tight")                  # 2-bit token counters: at most 3 tokens
    with pytest.raises(ValueError, match=message):
        Pipeline(StreamBuilder(cfg), threads=2, slots=slots)


def test_a_load_window_lets_loads_run_ahead(tiny_cfg):
    """With ``load_window=3`` load tasks 0..2 pop nothing and task 3 pops C→L, which the
    compute of task 0 pushes; a window is ``threads`` or more, up to the counters' limit
    less two (a task in pieces pushes one token more)."""
    from avta.runtime.pipeline import Pipeline
    b = StreamBuilder(tiny_cfg)
    pipe = Pipeline(b, threads=2, load_window=3)
    for j in range(3):
        assert pipe.begin_load() == j % 2
        b.load(MemType.INP, sram=j, dram=0, x_size=1)
        pipe.end_load()
    with pytest.raises(StreamError, match="pop"):
        pipe.begin_load()               # no compute has pushed C→L yet
    pipe.begin_compute()
    pipe.end_compute()
    assert pipe.begin_load() == 1
    for window in (1, True, (1 << tiny_cfg.token_bits) - 1):
        with pytest.raises(ValueError, match="load_window"):
            Pipeline(StreamBuilder(tiny_cfg), threads=2, load_window=window)
