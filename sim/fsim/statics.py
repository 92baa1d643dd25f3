"""What fsim knows of a legal instruction before running it: a function of the instruction and the
configuration alone (its stage, the token counters it pops and pushes, its estimated cycles and
counts), worked out once per distinct instruction (:meth:`.machine.Fsim._decode` caches it)."""

from typing import NamedTuple

from avta.isa import costs
from avta.isa.enums import MemType, Opcode, Stage
from avta.isa.memories import memory

from . import compiled, timing
from .memops import bytes_moved

__all__ = ["TOKEN_COUNTERS", "ACTIVITY_KIND", "Static", "static_of", "DECODE_CACHE_LIMIT"]

#: Entries a per-instruction cache of the machine (decoded instructions, checks, row bounds)
#: holds before it is emptied: streams repeat a few thousand distinct instructions, and a
#: random program must not grow them without bound.
DECODE_CACHE_LIMIT = 1 << 16

#: The four dependency-token counters (docs/isa.md §3), by the direction tokens travel.
TOKEN_COUNTERS = ("L->C", "C->L", "C->S", "S->C")
_L2C, _C2L, _C2S, _S2C = range(4)

#: (counters popped, counters pushed) per stage for pop_prev, pop_next / push_prev, push_next.
#: None marks a flag that stage cannot have (decode error 6 rejects it first).
_POP = {Stage.LOAD: (None, _C2L), Stage.COMPUTE: (_L2C, _S2C), Stage.STORE: (_C2S, None)}
_PUSH = {Stage.LOAD: (None, _L2C), Stage.COMPUTE: (_C2L, _C2S), Stage.STORE: (_S2C, None)}

#: What run_activity records as a compute instruction's kind: its index in ("gemm", "alu",
#: "other").
ACTIVITY_KIND = {Opcode.GEMM: 0, Opcode.ALU: 1}


class Static(NamedTuple):
    """What the machine needs of a legal instruction besides the state: functions of the
    instruction and the configuration alone, worked out once per distinct instruction."""
    stage: int
    opcode: int
    pops: tuple             # token counters popped (indices into TOKEN_COUNTERS)
    pushes: tuple           # token counters pushed
    cycles: int             # timing.cost
    acc_writes: int         # timing.acc_row_writes
    counter: str            # the counter of its bytes or steps (None: none)
    count: int              # what it adds to that counter
    kind: int               # its activity kind (ACTIVITY_KIND)
    row: tuple              # its column of the compiled scheduler's table (compiled.row)
    release: int = 0        # a load-stage LOAD: costs.load_release_cycles


#: Opcodes as plain integers (timing.py says why).
_LOAD, _STORE, _GEMM, _ALU = map(int, (Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.ALU))
_OUT = int(MemType.OUT)


def static_of(cfg, insn):
    """The :class:`Static` of legal instruction ``insn`` on ``cfg``."""
    stage, opcode = int(insn.stage), int(insn.opcode)
    pops = tuple(c for flag, c in zip((insn.pop_prev, insn.pop_next), _POP[stage]) if flag)
    pushes = tuple(c for flag, c in zip((insn.push_prev, insn.push_next), _PUSH[stage])
                   if flag)
    elem_bytes = counter = None
    count = 0
    if opcode == _LOAD or opcode == _STORE:
        elem_bytes = memory(cfg, _OUT if opcode == _STORE else insn.memory_type).elem_bytes
        counter, count = bytes_moved(cfg, insn)
    elif opcode == _GEMM or opcode == _ALU:
        counter = "GEMM_STEPS" if opcode == _GEMM else "ALU_STEPS"
        count = insn.steps
    cycles = timing.cost(cfg, insn, elem_bytes)
    release = costs.load_release_cycles(cfg, insn.y_size, insn.x_size, elem_bytes) \
        if opcode == _LOAD and stage == Stage.LOAD else 0
    return Static(stage, opcode, pops, pushes, cycles, timing.acc_row_writes(insn), counter,
                  count, ACTIVITY_KIND.get(opcode, 2),
                  compiled.row(stage, opcode, cycles, pops, pushes,
                               opcode == _LOAD and insn.x_size > 0, release), release)
