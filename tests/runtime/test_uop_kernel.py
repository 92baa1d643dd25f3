"""Micro-op kernels, the kernel cache and merged micro-op loads."""

import pytest

from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import Uop
from avta.runtime.stream import StreamBuilder
from avta.runtime.uop_kernel import KernelError, KernelRecorder, Loop, UopCache, UopKernel


def uop_loads(prog):
    return [i for i in prog.insns if i.opcode == Opcode.LOAD and i.memory_type == MemType.UOP
            and i.x_size]


def test_indices_follow_the_loop_nest():
    k = UopKernel([(0, 10, 100), (1, 11, 101)], [Loop(2, 50, 5, 0), Loop(3, 10, 1, 7)])
    dst, src, wgt = k.indices()
    expect = [(o * 50 + i * 10 + u, 10 + u + o * 5 + i, 100 + u + i * 7)
              for o in range(2) for i in range(3) for u in range(2)]
    assert list(zip(dst, src, wgt)) == expect
    assert k.steps == 12
    assert k.max_indices() == (max(dst), max(src), max(wgt))


def test_recorder_is_upstream_order():
    r = KernelRecorder()
    r.loop_begin(4, 1, 1)
    r.push(3, 5)
    r.loop_end()
    assert r.kernel() == UopKernel((Uop(3, 5, 0),), (Loop(4, 1, 1, 0),))
    r = KernelRecorder()
    r.push(0)
    with pytest.raises(KernelError, match="before the first micro-op"):
        r.loop_begin(2)


@pytest.mark.parametrize("kwargs, message", [
    ({"uops": ()}, "at least one"),
    ({"uops": [(0, 0, 0)], "loops": [Loop(1)] * 3}, "at most two loops"),
    ({"uops": [(0, 0, 0)], "loops": [Loop(0)]}, "extent 0"),
    ({"uops": [(0, 0, 0)], "loops": [Loop(1 << 14)]}, "14-bit"),
    ({"uops": [(-1, 0, 0)]}, "unsigned"),
])
def test_bad_kernels(kwargs, message):
    with pytest.raises(KernelError, match=message):
        UopKernel(**kwargs)


def test_single_loop_slots_follow_upstream():
    k = UopKernel([(0, 0, 0)], [Loop(5, 1)])
    assert k.padded_loops(single_inner=False)[0].extent == 5      # GEMM: outer
    assert k.padded_loops(single_inner=True)[1].extent == 5       # ALU: inner


def test_cache_reuses_and_wraps():
    cache = UopCache(10)
    a, b, c = (tuple(Uop(i, n) for i in range(n)) for n in (4, 5, 3))
    pa = cache.place(a)
    assert (pa.begin, pa.end, pa.load) == (0, 4, True)
    pa = cache.place(a)
    assert (pa.begin, pa.end, pa.load) == (0, 4, False)
    pb = cache.place(b)
    assert (pb.begin, pb.end, pb.load) == (4, 9, True)
    pc = cache.place(c)                      # 9 + 3 > 10: wrap to 0, evicting a
    assert (pc.begin, pc.end, pc.load) == (0, 3, True)
    assert cache.place(b).load is False      # b survives: rows 4..8 untouched
    pa = cache.place(a)                      # a was overwritten: load again after c
    assert (pa.begin, pa.load) == (3, True)
    assert cache.place(b).load is True       # a's new rows 3..6 overlap b


def test_identical_kernel_loads_once(default_cfg):
    b = StreamBuilder(default_cfg)
    k = UopKernel([(0, 0), (1, 1)], [Loop(4, 2, 2)])
    for _ in range(3):
        b.alu(k, AluOp.ADD, imm=1)
    prog = b.finish()
    loads = uop_loads(prog)
    assert len(loads) == 1 and loads[0].x_size == 2
    assert len(prog.uops) == 2


def test_contiguous_uop_loads_merge(default_cfg):
    b = StreamBuilder(default_cfg)
    k1 = UopKernel([(0, 0), (1, 1)])
    k2 = UopKernel([(2, 2), (3, 3), (4, 4)])
    b.alu(k1, AluOp.ADD, imm=1)
    b.alu(k2, AluOp.ADD, imm=1)
    prog = b.finish()
    loads = uop_loads(prog)
    assert len(loads) == 1 and (loads[0].sram_base, loads[0].x_size) == (0, 5)
    alus = [i for i in prog.insns if i.opcode == Opcode.ALU]
    assert [(a.uop_bgn, a.uop_end) for a in alus] == [(0, 2), (2, 5)]
    unmerged = StreamBuilder(default_cfg, merge_uop_loads=False)
    unmerged.alu(k1, AluOp.ADD, imm=1)
    unmerged.alu(k2, AluOp.ADD, imm=1)
    assert len(uop_loads(unmerged.finish())) == 2


def test_no_merge_over_rows_in_use(tiny_cfg):
    """Extending an earlier LOAD must not overwrite a kernel that ran since: then no merge."""
    depth = tiny_cfg.uop_depth                    # 256 on tiny
    b = StreamBuilder(tiny_cfg)

    def kernel(n, tag):
        return UopKernel([(i % 8, tag) for i in range(n)])

    k1, k2, k3, k4 = kernel(200, 1), kernel(50, 2), kernel(20, 3), kernel(200, 4)
    b.alu(k1, AluOp.ADD, imm=1)                   # rows [0, 200)
    b.alu(k2, AluOp.ADD, imm=1)                   # rows [200, 250): merged into k1's LOAD
    b.alu(k3, AluOp.ADD, imm=1)                   # wraps to [0, 20): k1 evicted, k2 stays
    b.alu(k2, AluOp.ADD, imm=1)                   # resident, runs after k3's LOAD
    b.alu(k4, AluOp.ADD, imm=1)                   # [20, 220) overlaps k2: its own LOAD
    prog = b.finish()
    loads = uop_loads(prog)
    assert [(ld.sram_base, ld.x_size) for ld in loads] == [(0, 250), (0, 20), (20, 200)]
    assert depth == 256
    words = [(u.dst_idx, u.src_idx) for u in prog.uops]
    for ld, k in zip(loads[1:], (k3, k4)):
        assert words[ld.dram_base:ld.dram_base + ld.x_size] == \
            [(u.dst_idx, u.src_idx) for u in k.uops]
