"""Launching a different program after a run: the host rewrites INSN_ADDR/INSN_COUNT while the
core is idle, and the next run must fetch only its own instructions.

Regression: fetch used to see the new INSN_COUNT before the launch and read on past the old
program's end at its old address; the orphan beats arrived after the launch reset, so the run
never drained (it hung) and they could land in the new run's instruction ring.
"""

import pytest

from avta.hw.core.core import Core
from avta.sim.amaranth.core_run import core_memory, launch
from avta.sim.amaranth.testbench import run_sim
from avta.isa.config import load_config
from avta.isa.encoding import INSN_BYTES, codec, finish
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, MemoryInsn, Uop

MAX_CYCLES = 2000


def programs(cfg):
    load_acc = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC,
                           dram_base=0x1000 // cfg.acc_elem_bytes, y_size=2, x_size=3,
                           x_stride=3), finish()]
    alu = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, y_size=1, x_size=1,
                      x_stride=1),
           AluInsn(alu_opcode=AluOp.ADD, use_imm=1, imm=1, uop_bgn=0, uop_end=1, iter_out=1,
                   iter_in=6, dst_factor_in=1, src_factor_in=1), finish()]
    return [(0x2000, load_acc), (0x3000, alu), (0x2000, load_acc)]


@pytest.mark.parametrize("config", ["tiny", "wide"])
def test_each_launch_fetches_only_its_own_program(config):
    cfg = load_config(config)
    c = codec(cfg)
    runs = programs(cfg)
    dram = bytearray(1 << 16)
    dram[0:c.uop_bytes] = c.encode_uops([Uop(0, 0, 0)])
    for addr, program in runs:
        dram[addr:addr + len(program) * INSN_BYTES] = c.encode_program(program)
    core = Core(cfg=cfg)
    model = core_memory(core, dram)
    ended, fetched = [], []

    async def host(ctx):
        for addr, program in runs:
            ctx.set(core.insn_addr, addr)
            ctx.set(core.insn_count, len(program))
            await ctx.tick().repeat(3)          # the new values sit there while idle
            status = await launch(ctx, core, MAX_CYCLES)
            ended.append((status, ctx.get(core.finish), ctx.get(core.error)))

    async def watch(ctx):
        cmd = core.fetch_mem.cmd
        async for _, _, valid, ready, addr in ctx.tick().sample(cmd.valid, cmd.ready,
                                                                 cmd.payload.addr):
            if valid and ready:
                fetched.append(addr)

    run_sim(core, host, background=[model.run, watch], name=f"relaunch-{config}")
    assert ended == [("ok", 1, 0)] * len(runs)
    spans = [(addr, addr + len(program) * INSN_BYTES) for addr, program in runs]
    for addr in fetched:
        assert any(lo <= addr < hi for lo, hi in spans), f"fetched at {addr:#x}"
