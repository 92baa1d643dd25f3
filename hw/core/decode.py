"""Instruction decode: which stage runs an instruction, and its decode-time error (docs/isa.md §3.5).

The same rules as :func:`avta.isa.legality.check` (the software statement), on the
:mod:`avta.isa.layout` views: no bit offset is written here.
"""

import functools
import operator

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from avta.isa.enums import ErrorCode, MemType, Opcode, PadValue, Stage
from avta.isa.layout import layouts
from avta.isa.legality import alu_ops
from avta.isa.memories import LOADABLE, stage_types

from .faults import FaultName

__all__ = ["InsnDecode"]


def _one_of(value, members):
    """True when ``value`` equals one of ``members``."""
    return functools.reduce(operator.or_, (value == member for member in members))


class InsnDecode(wiring.Component):
    """Combinational decode of one instruction.

    Ports
    -----
    insn : In(layouts(cfg).insn)
        The 128-bit instruction.
    stage : Out(Stage)
        The stage that executes it (docs/isa.md §3: the memory type decides a LOAD's stage). Only
        meaningful when ``error`` is NONE.
    error : Out(ErrorCode)
        The lowest decode-time error code the instruction breaks (1–6, 8), or NONE.

    ``faults``: a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        super().__init__({
            "insn": In(layouts(cfg).insn),
            "stage": Out(Stage),
            "error": Out(ErrorCode),
        })

    def elaborate(self, platform):
        m = Module()
        head, mem, alu = self.insn.head, self.insn.memory, self.insn.alu
        opcode = head.opcode
        mtype = mem.memory_type

        is_load = opcode == Opcode.LOAD
        is_store = opcode == Opcode.STORE
        is_alu = opcode == Opcode.ALU
        is_finish = opcode == Opcode.FINISH
        load_stage = is_load & _one_of(mtype, stage_types(Stage.LOAD))
        if FaultName.DECODE_WRONG_QUEUE in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            load_stage = is_load & _one_of(mtype, stage_types(Stage.LOAD) + (MemType.UOP,))

        # One condition per code of docs/isa.md §3.5, in the order that makes the lowest code win.
        loadable = _one_of(mtype, LOADABLE)
        pads = mem.y_pad_0 | mem.y_pad_1 | mem.x_pad_0 | mem.x_pad_1
        rules = [
            (ErrorCode.ILLEGAL_OPCODE, opcode > Opcode.ALU),
            (ErrorCode.ILLEGAL_ALU_OPCODE, is_alu & ~_one_of(alu.alu_opcode, alu_ops(self._cfg))),
            (ErrorCode.ILLEGAL_MEMORY_TYPE, is_load & ~loadable),
            (ErrorCode.ILLEGAL_PAD_VALUE, is_load & (mem.pad_value > PadValue.MAX)),
            (ErrorCode.ILLEGAL_STORE,
             is_store & (mem.x_size != 0)
             & ((mtype != MemType.OUT) | (pads != 0) | (mem.pad_value != 0))),
            (ErrorCode.TOKEN_WRONG_STAGE,
             (load_stage & (head.pop_prev | head.push_prev))
             | (is_store & (head.pop_next | head.push_next))),
            (ErrorCode.FINISH_WITH_TOKEN,
             is_finish & (head.pop_prev | head.pop_next | head.push_prev | head.push_next)),
        ]
        m.d.comb += self.error.eq(ErrorCode.NONE)
        for code, broken in reversed(rules):
            with m.If(broken):
                m.d.comb += self.error.eq(code)

        with m.If(load_stage):
            m.d.comb += self.stage.eq(Stage.LOAD)
        with m.Elif(is_store):
            m.d.comb += self.stage.eq(Stage.STORE)
        with m.Else():
            m.d.comb += self.stage.eq(Stage.COMPUTE)
        return m
