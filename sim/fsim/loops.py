"""The micro-op loop nest shared by GEMM and ALU (docs/isa.md §3.3), as flat index arrays.

Step ``s`` enumerates ``i_o < iter_out``, ``i_i < iter_in``, ``u`` in ``[uop_bgn, uop_end)``
with ``u`` innermost, so arrays indexed by ``s`` are in execution order.
"""

import numpy as np

from avta.isa.enums import ErrorCode

from .errors import MachineError

__all__ = ["LoopNest", "wrap_or_raise"]


def wrap_or_raise(index, depth, strict, what):
    """Scratchpad indices modulo ``depth`` (docs/isa.md §3), or error 10 in strict mode."""
    if strict and index.size and int(index.max()) >= depth:
        bad = int(np.flatnonzero(index >= depth)[0])
        raise MachineError(ErrorCode.SRAM_OUT_OF_RANGE,
                           f"{what} index {int(index[bad])} (at micro-op step {bad}) is past "
                           f"the end of the {depth}-row scratchpad")
    return index % depth


class LoopNest:
    """The steps of one GEMM or ALU instruction and the micro-ops they execute."""

    def __init__(self, insn, pads, codec, *, strict):
        self.insn = insn
        count = max(0, insn.uop_end - insn.uop_bgn)
        self.steps = insn.iter_out * insn.iter_in * count
        if self.steps == 0:
            return
        uop_rows = wrap_or_raise(np.arange(insn.uop_bgn, insn.uop_end, dtype=np.int64),
                                 pads.depth("uop"), strict, "micro-op")
        # Decode only the kernel's micro-ops, then broadcast them over the loop nest.
        self._uops = codec.decode_uop_array(pads.uop[uop_rows])
        self._i_o = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
        self._i_i = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]

    def index(self, field, factor_out, factor_in):
        """Per-step index of micro-op field ``field`` (0 dst, 1 src, 2 wgt) plus the factors."""
        idx = (self._uops[field][None, None, :] + self._i_o * factor_out
               + self._i_i * factor_in)
        return idx.reshape(-1)
