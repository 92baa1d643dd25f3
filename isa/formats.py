"""Field lists of every instruction format and the packing rule of docs/isa.md §2.

This module is pure Python (no Amaranth) so that configuration checking can use it. The
Amaranth layouts in :mod:`avta.isa.layout` are built from the placements computed here, and
everything else (encoder, decoder, RTL, model, trace diff) reads field positions from those
layouts.

Packing rule (docs/isa.md §2, the C bit-field rule of upstream's ``hw_spec.h``): fields are packed
LSB-first in the order listed; a field that would cross a multiple of the unit (64 bits for
instructions, 32 bits for micro-ops) starts at that multiple instead.
"""

from dataclasses import dataclass

__all__ = [
    "INSN_BITS", "INSN_UNIT", "UOP_UNIT", "OPCODE_BITS", "ITER_BITS", "IMM_BITS",
    "Placement", "place", "head_fields", "memory_fields", "gemm_fields", "alu_fields",
    "uop_fields", "factor_bits", "instruction_formats",
]

INSN_BITS = 128
INSN_UNIT = 64     # hw_spec.h declares instructions as uint64_t bit-fields
UOP_UNIT = 32      # ... and micro-ops as uint32_t bit-fields
OPCODE_BITS = 3
ITER_BITS = 14     # VTA_LOOP_ITER_WIDTH
IMM_BITS = 16      # VTA_ALUOP_IMM_BIT_WIDTH
ALU_OPCODE_BITS = 3
MEMORY_TYPE_BITS = 3
SRAM_ADDR_BITS = 16
DRAM_ADDR_BITS = 32
PAD_VALUE_BITS = 2
SIZE_BITS = 16
STRIDE_BITS = 16
PAD_BITS = 4


@dataclass(frozen=True)
class Placement:
    """The fields of one format at their bit offsets, and how far they reach."""
    fields: tuple   # of (name, offset, width)
    end: int        # one past the highest bit used
    total: int      # bits available

    @property
    def overflow(self):
        """Bits by which the format exceeds its total width (0 when it fits)."""
        return max(0, self.end - self.total)


def place(fields, *, unit, total):
    """Place ``fields`` (a sequence of ``(name, width)``) with the crossing rule of docs/isa.md §2."""
    placed = []
    offset = 0
    for name, width in fields:
        if width <= 0:
            raise ValueError(f"field {name!r} has width {width}; widths must be positive")
        if offset // unit != (offset + width - 1) // unit:
            offset = (offset // unit + 1) * unit
        placed.append((name, offset, width))
        offset += width
    return Placement(tuple(placed), offset, total)


def head_fields():
    """The common head of every instruction: opcode and the four dependency flags."""
    return [("opcode", OPCODE_BITS), ("pop_prev", 1), ("pop_next", 1),
            ("push_prev", 1), ("push_next", 1)]


def memory_fields(cfg):
    """LOAD and STORE (docs/isa.md §2 table, row LOAD/STORE)."""
    return head_fields() + [
        ("memory_type", MEMORY_TYPE_BITS), ("sram_base", SRAM_ADDR_BITS),
        ("dram_base", DRAM_ADDR_BITS), ("pad_value", PAD_VALUE_BITS),
        ("y_size", SIZE_BITS), ("x_size", SIZE_BITS), ("x_stride", STRIDE_BITS),
        ("y_pad_0", PAD_BITS), ("y_pad_1", PAD_BITS), ("x_pad_0", PAD_BITS), ("x_pad_1", PAD_BITS),
    ]


def _loop_fields(cfg):
    u = cfg.log_uop_depth
    return [("reset", 1), ("uop_bgn", u), ("uop_end", u + 1),
            ("iter_out", ITER_BITS), ("iter_in", ITER_BITS)]


def gemm_fields(cfg, restrict=None):
    """GEMM and FINISH. ``restrict`` overrides the config's (inp, wgt, acc) factor restrictions."""
    a, i, w = factor_bits(cfg, restrict)
    return head_fields() + _loop_fields(cfg) + [
        ("dst_factor_out", a), ("dst_factor_in", a),
        ("src_factor_out", i), ("src_factor_in", i),
        ("wgt_factor_out", w), ("wgt_factor_in", w),
    ]


def alu_fields(cfg, restrict=None):
    """ALU: dst and src both index ACC, so both use the ACC factor width (docs/isa.md §2)."""
    a, _, _ = factor_bits(cfg, restrict)
    return head_fields() + _loop_fields(cfg) + [
        ("dst_factor_out", a), ("dst_factor_in", a),
        ("src_factor_out", a), ("src_factor_in", a),
        ("alu_opcode", ALU_OPCODE_BITS), ("use_imm", 1), ("imm", IMM_BITS),
    ]


def uop_fields(cfg):
    """Micro-op: dst indexes ACC; src indexes INP (GEMM) or ACC (ALU); wgt indexes WGT."""
    return [("dst_idx", cfg.log_acc_depth),
            ("src_idx", max(cfg.log_acc_depth, cfg.log_inp_depth)),
            ("wgt_idx", cfg.log_wgt_depth)]


def factor_bits(cfg, restrict=None):
    """``(A, I, W)`` of docs/isa.md §2: the widths of the ACC, INP and WGT factor fields, each
    the index width less its ``*_FACTOR_RESTRICT`` (``restrict`` = (inp, wgt, acc) overrides the
    configuration's)."""
    r_inp, r_wgt, r_acc = restrict if restrict is not None else (
        cfg.log_inp_factor_restrict, cfg.log_wgt_factor_restrict, cfg.log_acc_factor_restrict)
    return (cfg.log_acc_depth - r_acc, cfg.log_inp_depth - r_inp, cfg.log_wgt_depth - r_wgt)



def instruction_formats(cfg, restrict=None):
    """Placements of the three instruction formats, keyed by format name."""
    return {
        "LOAD/STORE": place(memory_fields(cfg), unit=INSN_UNIT, total=INSN_BITS),
        "GEMM/FINISH": place(gemm_fields(cfg, restrict), unit=INSN_UNIT, total=INSN_BITS),
        "ALU": place(alu_fields(cfg, restrict), unit=INSN_UNIT, total=INSN_BITS),
    }
