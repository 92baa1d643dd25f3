"""Error paths for the fuzzer: one planted fault in a well-formed program, and the end it must have.

docs/isa.md §3.5 defines how a run ends when an instruction is illegal or reaches outside DRAM:
the code and the index of the offending instruction, on every target, whatever else is in
flight. :func:`plant_error` breaks exactly one rule in a linked instruction list, at an
instruction it picks, and returns the end that fsim and tsim must both report. The rest of the
program is the generator's: long GEMMs, loads in flight, queued stores, so the error meets the
machine busy (a case the fuzzer found).

Every kind gives one deterministic end:

* a decode error (codes 1-6, 8) at instruction k ends the run with that code at k, because fsim
  checks the whole stream first and the RTL checks every fetched instruction, even past FINISH;
* a LOAD or STORE reaching past DRAM (code 9) at k: every instruction it waits for is ordered
  before it by tokens, so it always runs, and nothing else fails first;
* fetch past the end of DRAM (code 9): the host asks for more instructions than DRAM holds, with
  the stream ending where DRAM ends; the index is the first instruction outside DRAM;
* a dropped token push (``deadlock``): one L→C or S→C push of the program is cleared, so the
  last pop of that counter, in the closing sequence before FINISH, waits forever.
"""

from avta.isa.encoding import codec
from avta.isa.enums import ErrorCode, MemType, Opcode, Stage
from avta.isa.formats import ALU_OPCODE_BITS
from avta.isa.legality import alu_ops
from avta.isa.insn import AluInsn, IllegalInsn, MemoryInsn
from avta.isa.memories import memory

__all__ = ["ERROR_KINDS", "plant_error"]

#: Kind → the error code it must end with (None: the run must end in ``deadlock``).
ERROR_KINDS = {
    "illegal opcode": ErrorCode.ILLEGAL_OPCODE,
    "illegal ALU opcode": ErrorCode.ILLEGAL_ALU_OPCODE,
    "illegal memory type": ErrorCode.ILLEGAL_MEMORY_TYPE,
    "illegal pad value": ErrorCode.ILLEGAL_PAD_VALUE,
    "illegal STORE": ErrorCode.ILLEGAL_STORE,
    "token on the wrong stage": ErrorCode.TOKEN_WRONG_STAGE,
    "FINISH with a token": ErrorCode.FINISH_WITH_TOKEN,
    "LOAD past DRAM": ErrorCode.DRAM_OUT_OF_RANGE,
    "STORE past DRAM": ErrorCode.DRAM_OUT_OF_RANGE,
    "fetch past DRAM": ErrorCode.DRAM_OUT_OF_RANGE,
    "dropped push": None,
}

_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


def plant_error(kind, rng, cfg, insns, *, dram_size, address):
    """``(insns, insn_count, expect)``: ``insns`` (linked, as in the image) with the error of
    ``kind`` planted at an instruction drawn with ``rng``, the count the host asks for, and the
    ``(status, error_code, error_insn)`` every target must end with.

    ``address(insn)`` is the byte address of element 0 of a memory instruction's type (its base
    register). A kind that finds no instruction to break (a program without ALU instructions has
    no ALU opcode to make illegal, nor has a configuration with ``ALU_SCALE`` 1 or 2) falls back to
    an illegal opcode.
    """
    insns = list(insns)
    last = len(insns) - 1
    pick = _PICKERS[kind](insns[:last]) if kind != "FINISH with a token" else [last]
    if kind == "fetch past DRAM":
        return insns, len(insns) + rng.randint(1, 8), ("error", ErrorCode.DRAM_OUT_OF_RANGE,
                                                       len(insns))
    if kind == "dropped push":
        if not pick:
            kind, pick = "illegal opcode", list(range(last + 1))
        else:
            k, flag = rng.choice(pick)
            insns[k] = insns[k].replace(**{flag: 0})
            return insns, len(insns), ("deadlock", None, None)
    if kind == "illegal ALU opcode" and len(alu_ops(cfg)) == 1 << ALU_OPCODE_BITS:
        pick = []       # with ALU_SCALE 1 or 2 every ALU opcode is legal (docs/isa.md §3.5)
    if not pick:
        kind, pick = "illegal opcode", list(range(last + 1))
    k = rng.choice(pick)
    insns[k] = _BREAK[kind](rng, cfg, insns[k], dram_size, address)
    return insns, len(insns), ("error", ERROR_KINDS[kind], k)


# -- which instructions a kind can break -----------------------------------------------------------

def _is_load(insn, *, moving=False):
    return (isinstance(insn, MemoryInsn) and insn.opcode == Opcode.LOAD
            and (insn.x_size > 0 or not moving))


def _is_store(insn):
    return isinstance(insn, MemoryInsn) and insn.opcode == Opcode.STORE and insn.x_size > 0


def _indices(insns, test):
    return [k for k, insn in enumerate(insns) if test(insn)]


def _pushes(insns):
    """``(k, flag)`` of every L→C and S→C push: the closing sequence pops all of them."""
    found = []
    for k, insn in enumerate(insns):
        if insn.stage == Stage.LOAD and insn.push_next:
            found.append((k, "push_next"))
        elif insn.stage == Stage.STORE and insn.push_prev:
            found.append((k, "push_prev"))
    return found


_PICKERS = {
    "illegal opcode": lambda insns: list(range(len(insns))),
    "illegal ALU opcode": lambda insns: _indices(insns, lambda i: isinstance(i, AluInsn)),
    "illegal memory type": lambda insns: _indices(insns, _is_load),
    "illegal pad value": lambda insns: _indices(insns, _is_load),
    "illegal STORE": lambda insns: _indices(insns, _is_store),
    "token on the wrong stage": lambda insns: _indices(
        insns, lambda i: isinstance(i, MemoryInsn) and i.stage in (Stage.LOAD, Stage.STORE)),
    "LOAD past DRAM": lambda insns: _indices(insns, lambda i: _is_load(i, moving=True)),
    "STORE past DRAM": lambda insns: _indices(insns, _is_store),
    "fetch past DRAM": lambda insns: [],
    "dropped push": _pushes,
}


# -- how each kind breaks its instruction ----------------------------------------------------------

def _illegal_opcode(rng, cfg, insn, dram_size, address):
    opcode = rng.choice((5, 6, 7))
    return IllegalInsn(opcode=opcode, raw=(codec(cfg).encode(insn) & ~0b111) | opcode)


def _illegal_alu(rng, cfg, insn, dram_size, address):
    illegal = sorted(set(range(1 << ALU_OPCODE_BITS)) - set(alu_ops(cfg)))
    return insn.replace(alu_opcode=rng.choice(illegal))


def _illegal_memory_type(rng, cfg, insn, dram_size, address):
    return insn.replace(memory_type=rng.choice((MemType.OUT, 6, 7)))


def _illegal_pad(rng, cfg, insn, dram_size, address):
    return insn.replace(pad_value=3)


def _illegal_store(rng, cfg, insn, dram_size, address):
    field = rng.choice(("memory_type", "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1", "pad_value"))
    if field == "memory_type":
        return insn.replace(memory_type=rng.choice([m for m in range(8) if m != MemType.OUT]))
    return insn.replace(**{field: rng.randint(1, 3 if field == "pad_value" else 15)})


def _wrong_stage(rng, cfg, insn, dram_size, address):
    flags = ("pop_prev", "push_prev") if insn.stage == Stage.LOAD else ("pop_next", "push_next")
    return insn.replace(**{rng.choice(flags): 1})


def _finish_token(rng, cfg, insn, dram_size, address):
    return insn.replace(**{rng.choice(_FLAGS): 1})


def _past_dram(rng, cfg, insn, dram_size, address):
    """The same transfer moved so that its last element (or, sometimes, every element) lies
    partly or wholly past the end of DRAM, without the 32-bit address wrapping back in."""
    size = memory(cfg, insn.memory_type).elem_bytes
    base = address(insn)
    span = (insn.y_size - 1) * insn.x_stride + insn.x_size      # elements from the first
    outside = (dram_size - base) // size        # the first element not wholly inside DRAM
    limit = ((1 << 32) - base) // size - span                   # keeps every address < 2^32
    if rng.random() < 0.7:
        first = outside - (span - 1) + rng.randint(0, 3)        # only the tail is outside
    else:
        first = rng.randint(outside, max(outside, min(limit, outside + (1 << 20))))
    return insn.replace(dram_base=max(0, min(first, limit, (1 << 32) - 1)))


_BREAK = {
    "illegal opcode": _illegal_opcode,
    "illegal ALU opcode": _illegal_alu,
    "illegal memory type": _illegal_memory_type,
    "illegal pad value": _illegal_pad,
    "illegal STORE": _illegal_store,
    "token on the wrong stage": _wrong_stage,
    "FINISH with a token": _finish_token,
    "LOAD past DRAM": _past_dram,
    "STORE past DRAM": _past_dram,
}
