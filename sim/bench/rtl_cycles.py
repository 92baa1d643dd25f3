"""Cycle counts of GEMM and ALU instructions on the RTL core (Amaranth simulator).

The cost of an instruction is measured in the core as it runs in a stream: a program runs the
same instruction three times in a row, and the cycles between the first micro-op steps of
the first two copies (seen on the GEMM_STEPS / ALU_STEPS counters) is what one costs, from issue
by the compute stage to the issue of the next (the stage's per-instruction overhead included;
the next instruction is waiting, so the fetch stage's rate does not enter). ``avta bench rtl-cycles --config tiny`` (or ``python -m avta.sim.bench.rtl_cycles
[--config tiny] [--steps 1 8 64 256]``) prints the table; :func:`measure` returns it.

Targets (docs/architecture.md): a GEMM of N micro-op steps in N + at most 8 cycles; ALU one
step per cycle with an immediate, two cycles per step with two operands on one ACC read port and
one with two.
"""

import argparse
import sys

from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn, Uop
from avta.sim.amaranth.core_run import run_core

__all__ = ["measure", "instruction_cycles", "print_table", "main"]

#: Micro-op steps per instruction measured unless asked otherwise.
STEPS = (1, 8, 64, 256)

_UOP_ADDR = 0x1000


def _uops(cfg, n):
    # Distinct rows, so the measurement does not depend on forwarding.
    return [Uop(i % cfg.acc_depth, i % cfg.inp_depth, i % cfg.wgt_depth) for i in range(n)]


def instruction_cycles(cfg, insn, uop_count, *, copies=3):
    """Cycles per copy of ``insn`` in a stream of ``copies`` of it (see the module docstring)."""
    c = codec(cfg)
    uops = _uops(cfg, uop_count)
    insns = ([MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=0,
                         dram_base=_UOP_ADDR // cfg.uop_elem_bytes, y_size=1, x_size=uop_count,
                         x_stride=uop_count)]
             + [insn] * copies + [GemmInsn(opcode=Opcode.FINISH)])
    dram = bytearray(_UOP_ADDR + uop_count * cfg.uop_elem_bytes + 64)
    blob = c.encode_program(insns)
    dram[:len(blob)] = blob
    raw = c.encode_uops(uops)
    dram[_UOP_ADDR:_UOP_ADDR + len(raw)] = raw
    steps = insn.steps
    counter = "gemm_steps" if insn.opcode == Opcode.GEMM else "alu_steps"
    firsts = []

    def watch(core):
        async def sample(ctx):
            # The cycle at which each copy's first step is counted.
            cycle = 0
            async for _, _, value in ctx.tick().sample(getattr(core.counters, counter)):
                cycle += 1
                if value == len(firsts) * steps + 1:
                    firsts.append(cycle)
        return sample

    result = run_core(cfg, dram, 0, len(insns), watch=watch)
    if result.status != "ok" or len(firsts) != copies:
        raise RuntimeError(f"measurement run ended with {result}")
    # The second copy is already queued when the first issues, so the first period is the
    # compute stage's own cost. Later copies of an instruction shorter than instructions arrive
    # (a GEMM of one or two steps, which detaches two cycles after its last issue) can wait for
    # delivery by fetch and the queue: those periods may be longer, never shorter.
    periods = [b - a for a, b in zip(firsts, firsts[1:])]
    if min(periods) != periods[0]:
        raise RuntimeError(f"copies of {insn} took times {periods}: a later copy was faster")
    return periods[0]


def _gemm(n):
    return GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=n, iter_out=1, iter_in=1)


def _alu(n, **fields):
    return AluInsn(uop_bgn=0, uop_end=n, iter_out=1, iter_in=1, **fields)


def measure(cfg, steps=STEPS):
    """Rows ``(what, ACC_READ_PORTS, N, cycles, cycles − N)`` for GEMM and the ALU forms."""
    rows = []
    for n in steps:
        cycles = instruction_cycles(cfg, _gemm(n), n)
        rows.append(("GEMM", cfg.acc_read_ports, n, cycles, cycles - n))
    for ports in (1, 2):
        pcfg = cfg.replace(acc_read_ports=ports)
        for what, fields in (("ALU ADD imm", {"alu_opcode": AluOp.ADD, "use_imm": 1, "imm": 3}),
                             ("ALU ADD two operands", {"alu_opcode": AluOp.ADD}),
                             ("ALU MOV two operands", {"alu_opcode": AluOp.MOV})):
            for n in steps:
                cycles = instruction_cycles(pcfg, _alu(n, **fields), n)
                rows.append((what, ports, n, cycles, cycles - n))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m avta.sim.bench.rtl_cycles",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="tiny", help="configuration name or path")
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS),
                        help="micro-op steps N per instruction")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    if max(args.steps) > cfg.uop_depth:
        parser.error(f"N is at most the micro-op buffer depth ({cfg.uop_depth})")
    return print_table(cfg, args.steps)


def print_table(cfg, steps=STEPS):
    """Print :func:`measure`'s table for ``cfg``; exit status 0."""
    steps = [n for n in steps if n <= cfg.uop_depth]
    print(f"configuration {cfg.name} ({cfg.shape_name}); cycles per instruction in a stream")
    print(f"{'instruction':<22} {'ports':>5} {'N':>6} {'cycles':>7} {'cycles-N':>9}")
    for what, ports, n, cycles, extra in measure(cfg, steps):
        print(f"{what:<22} {ports:>5} {n:>6} {cycles:>7} {extra:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
