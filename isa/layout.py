"""Amaranth ``lib.data`` layouts of every instruction format and the micro-op.

These layouts are the single source of field positions: the RTL decodes with
``data.View(layouts.insn, signal)``, and the software encoder and decoder in
:mod:`avta.isa.encoding` read offsets and widths from the same objects.
"""

import functools

from amaranth.lib import data

from . import formats

__all__ = ["IsaLayouts", "layouts"]


def _flexible(placement):
    return data.FlexibleLayout(placement.total, {
        name: data.Field(width, offset) for name, offset, width in placement.fields})


class IsaLayouts:
    """The layouts of one configuration.

    Attributes
    ----------
    memory, gemm, alu : FlexibleLayout (128 bits)
        LOAD/STORE, GEMM/FINISH and ALU formats. Field names are those of docs/isa.md §2.
    head : FlexibleLayout (128 bits)
        Only the common head (opcode and dependency flags).
    insn : UnionLayout (128 bits)
        ``head``, ``memory``, ``gemm`` and ``alu`` views of the same bits, for RTL decode.
    uop : FlexibleLayout (``cfg.uop_bits``)
        The micro-op: ``dst_idx``, ``src_idx``, ``wgt_idx``.
    """

    def __init__(self, cfg):
        self._cfg = cfg
        placements = formats.instruction_formats(cfg)
        self.memory = _flexible(placements["LOAD/STORE"])
        self.gemm = _flexible(placements["GEMM/FINISH"])
        self.alu = _flexible(placements["ALU"])
        self.head = _flexible(formats.place(formats.head_fields(), unit=formats.INSN_UNIT,
                                            total=formats.INSN_BITS))
        self.insn = data.UnionLayout({"head": self.head, "memory": self.memory,
                                      "gemm": self.gemm, "alu": self.alu})
        self.uop = _flexible(formats.place(formats.uop_fields(cfg), unit=formats.UOP_UNIT,
                                           total=cfg.uop_bits))

    @property
    def cfg(self):
        return self._cfg

    def fields(self, layout):
        """``(name, offset, width)`` of every field of ``layout``, in bit order."""
        return sorted(((name, f.offset, f.width) for name, f in layout), key=lambda t: t[1])


@functools.lru_cache(maxsize=None)
def layouts(cfg):
    """The :class:`IsaLayouts` of ``cfg`` (cached: a config is frozen and hashable)."""
    return IsaLayouts(cfg)
