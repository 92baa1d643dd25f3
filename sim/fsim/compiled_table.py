"""The fields of a stream's instructions as one int64 table, a row per field and a column per
instruction: what the compiled data interpreter (:mod:`.compiled_exact`) reads in place of
decoded instruction objects.

Every field is taken from every instruction, at the places the layouts give (the ones the codec
and the RTL read), the loop fields GEMM and ALU share from each one's own format
(:func:`placement`); :func:`~.compiled_checks.fill_table` fills the table from the stream's
words, and the interpreter reads the fields of each instruction's opcode. The row numbers are
named here once, for the compiled kernels (:mod:`.compiled_checks`, :mod:`.compiled_data`),
which read them as constants.
"""

import functools

import numpy as np

from .stream import fields_of

__all__ = ["FIELDS", "placement"]

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


@functools.lru_cache(maxsize=None)
def placement(cfg):
    """Where each row's field lies in an instruction's words on ``cfg``: ``(word, shift,
    mask, imm_sign)``, the first three ``(2, len(FIELDS))`` arrays whose row 0 is for every
    instruction but ALU and row 1 for ALU (the loop fields GEMM and ALU share are where each
    one's own format puts them, which on some configurations differ: their widths do), and
    ``imm_sign`` the immediate's sign bit (it is sign-extended, as the codec decodes it)."""
    formats = fields_of(cfg).formats
    places = [[formats[fmt][name] for fmt, name in FIELDS] for _ in range(2)]
    for row in range(RESET, SRC_FACTOR_IN + 1):
        places[1][row] = formats["alu"][FIELDS[row][1]]
    word = np.array([[w for w, _, _ in p] for p in places], np.int64)
    shift = np.array([[int(s) for _, s, _ in p] for p in places], np.uint64)
    mask = np.array([[int(m) for _, _, m in p] for p in places], np.uint64)
    return word, shift, mask, (int(formats["alu"]["imm"][2]) + 1) >> 1
