"""The fields of a stream's instructions as one int64 table, a row per field and a column per
instruction: what the compiled data interpreter (:mod:`.compiled_exact`) reads in place of
decoded instruction objects.

Every field is taken from every instruction (:meth:`.stream.Stream.column`, the layouts the codec
and the RTL read), the loop fields GEMM and ALU share from each one's own format; the interpreter
reads the ones of each instruction's opcode. The row numbers are named here once, for the compiled kernels (:mod:`.compiled_checks`,
:mod:`.compiled_data`), which read them as constants.
"""

import numpy as np

from avta.isa.enums import Opcode

__all__ = ["FIELDS", "stream_table"]

#: ``(format, name)`` of each row, in row order (the constants below name the rows).
FIELDS = (
    ("head", "opcode"),
    ("memory", "memory_type"), ("memory", "sram_base"), ("memory", "dram_base"),
    ("memory", "pad_value"), ("memory", "y_size"), ("memory", "x_size"), ("memory", "x_stride"),
    ("memory", "y_pad_0"), ("memory", "y_pad_1"), ("memory", "x_pad_0"), ("memory", "x_pad_1"),
    ("gemm", "reset"), ("gemm", "uop_bgn"), ("gemm", "uop_end"), ("gemm", "iter_out"),
    ("gemm", "iter_in"), ("gemm", "dst_factor_out"), ("gemm", "dst_factor_in"),
    ("gemm", "src_factor_out"), ("gemm", "src_factor_in"), ("gemm", "wgt_factor_out"),
    ("gemm", "wgt_factor_in"),
    ("alu", "alu_opcode"), ("alu", "use_imm"), ("alu", "imm"),
)

(OPCODE,
 MEMORY_TYPE, SRAM_BASE, DRAM_BASE, PAD_VALUE, Y_SIZE, X_SIZE, X_STRIDE, Y_PAD_0, Y_PAD_1,
 X_PAD_0, X_PAD_1,
 RESET, UOP_BGN, UOP_END, ITER_OUT, ITER_IN, DST_FACTOR_OUT, DST_FACTOR_IN, SRC_FACTOR_OUT,
 SRC_FACTOR_IN, WGT_FACTOR_OUT, WGT_FACTOR_IN,
 ALU_OPCODE, USE_IMM, IMM) = range(len(FIELDS))


def stream_table(stream):
    """The ``(len(FIELDS), len(stream))`` int64 table of :class:`~.stream.Stream` ``stream``;
    the immediate sign-extended (docs/isa.md §2), as the codec decodes it."""
    table = np.empty((len(FIELDS), len(stream)), np.int64)
    for row, (fmt, name) in enumerate(FIELDS):
        table[row] = stream.column(fmt, name)
    # An ALU instruction's loop fields are where its own format puts them, which on some
    # configurations is not where the GEMM format does (their widths differ).
    alu = np.flatnonzero(table[OPCODE] == Opcode.ALU)
    if alu.size:
        for row in range(RESET, SRC_FACTOR_IN + 1):
            table[row, alu] = stream.column("alu", FIELDS[row][1], alu)
    _, _, mask = stream.field_place("alu", "imm")
    sign = (int(mask) + 1) >> 1
    table[IMM] = (table[IMM] ^ sign) - sign
    return table
