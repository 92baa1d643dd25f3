"""Which memories of the design are SRAM macros and which become flip-flops.

The scratchpads (docs/isa.md §1) are macros, cut and sized as the floorplan cuts them
(:func:`avta.floorplan.vta.plan_inventory`): each of their banks and copies (hw/core/banks.py) is
its share of the scratchpad's macros. Any other memory of the RTL (the instruction
queues, the fetch ring, small FIFOs) is a macro when the technology has a legal SRAM of its
words x bits, and otherwise synthesized to flip-flops, as a memory compiler would leave it.
"""

import re
from dataclasses import dataclass

from avta.isa.memories import SCRATCHPADS

__all__ = ["Memory", "rtlil_memories", "plan_memories"]

_MODULE = re.compile(r"^module (\S+)")
_MEMORY = re.compile(r"^\s+memory width (\d+) size (\d+)(?: offset -?\d+)? (\S+)")


@dataclass(frozen=True)
class Memory:
    """One memory of the netlist: where it is, its size, and how it is built."""
    module: str          # the Amaranth module path (vta_top.core.acc_mem)
    name: str            # its name in that module (bank0, storage)
    words: int
    bits: int
    scratchpad: str | None = None     # "inp", ... for a scratchpad
    macro: str | None = None          # the SRAM master's name, None when it is flip-flops
    macro_um2: float = 0.0            # total macro area, µm²
    count: int = 0                    # macros it is cut into

    @property
    def path(self):
        return f"{self.module}/{self.name}"


def rtlil_memories(rtlil):
    """(module, name, words, bits) of every ``memory`` declared in RTLIL text."""
    out, module = [], None
    for line in rtlil.splitlines():
        if (m := _MODULE.match(line)):
            module = m.group(1).lstrip("\\")
        elif (m := _MEMORY.match(line)):
            out.append((module, m.group(3).lstrip("\\"), int(m.group(2)), int(m.group(1))))
    return out


def plan_memories(rtlil, cfg, technology):
    """:class:`Memory` of every memory declared in ``rtlil``, decided as the module says.

    A scratchpad is the memories of module ``vta_top.core.<name>_mem`` (its banks and copies,
    docs/architecture.md); each is a share of the floorplan's macros for that scratchpad."""
    from avta.floorplan.vta import plan_inventory
    from avta.isa.memories import scratchpad
    inventory = plan_inventory(cfg, technology)
    scratch = {f"vta_top.core.{name}_mem": name for name in SCRATCHPADS}
    out = []
    for module, name, words, bits in rtlil_memories(rtlil):
        pad = scratch.get(module)
        if pad is not None:
            plan, info = inventory[pad], scratchpad(cfg, pad)
            parts = info.banks * info.copies
            if (info.bank_rows, plan.row_bits) != (words, bits) or plan.count % parts:
                raise ValueError(f"scratchpad {pad}: the RTL has {words} x {bits} memories, the "
                                 f"floorplan {plan.count} macros for {parts} banks and copies of "
                                 f"{info.bank_rows} x {plan.row_bits}")
            count = plan.count // parts
            area = count * technology.um(plan.master.width) * technology.um(plan.master.height)
            out.append(Memory(module, name, words, bits, pad, plan.master.name, area, count))
        elif technology.sram_problem(words, bits) is None:
            master = technology.sram(words, bits)
            area = technology.um(master.width) * technology.um(master.height)
            out.append(Memory(module, name, words, bits, None, master.name, area, 1))
        else:
            out.append(Memory(module, name, words, bits))
    return out
