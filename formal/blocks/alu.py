"""ALU lanes (hw/core/alu_lanes.py) against docs/isa.md §3.4.

``ops``
    For every operand value and every legal ALU op (MIN, MAX, ADD, SHR both ways, MUL, CLP,
    MOV), each lane of every batch row equals :func:`avta.formal.reference.alu_lane` at the
    configured widths. The lanes are combinational, so this is proven at once (k = 1). The
    immediate form feeds the same lanes with B = sext(imm) (hw/core/alu.py), so the lanes'
    proof covers it; the sign extension itself is not part of this check.
"""

from amaranth.hdl import Signal

from avta.hw.core.alu_lanes import AluLanes
from avta.hw.core.sram import row_layout
from avta.isa.enums import AluOp

from ..harness import Check, Harness
from ..reference import alu_lane

__all__ = ["checks"]


class AluHarness(Harness):
    def __init__(self, cfg, faults):
        super().__init__()
        self._cfg, self._faults = cfg, faults

    def properties(self, m):
        cfg = self._cfg
        m.submodules.dut = dut = AluLanes(cfg=cfg, faults=self._faults)
        row = row_layout(cfg, "acc")
        op = self.input("op", 3)
        a, b = self.input("a", row.size), self.input("b", row.size)
        self.assume(m, op <= max(AluOp))
        m.d.comb += [dut.op.eq(op), dut.a.eq(a), dut.b.eq(b)]
        out = Signal(row.size)
        m.d.comb += out.eq(dut.out.as_value())
        width = cfg.acc_width
        for lane in range(cfg.batch * cfg.block_out):
            bits = slice(lane * width, (lane + 1) * width)
            want = alu_lane(m, cfg, op, a[bits], b[bits], name=f"want{lane}")
            self.promise(m, out[bits] == want)
        for value in AluOp:
            self.cover(m, (op == value) & (out != 0))


def checks(cfg, faults=frozenset()):
    return [Check("alu", "ops", "every lane equals docs/isa.md §3.4 for every op and operand",
                  lambda: AluHarness(cfg, faults), depth=1, solver="z3")]
