"""C header generator: upstream ``hw_spec.h`` constant names, plus this project's additions.

Every value comes from the configuration object and the layouts; a test compiles the header with
``gcc`` and checks each macro against them.
"""

from . import formats
from .enums import ErrorCode, MemType, Opcode, PadValue
from .layout import layouts
from .legality import alu_ops
from .memories import SCRATCHPADS
from .registers import COUNTER_NAMES, REGISTERS, Ctrl

__all__ = ["c_header", "header_macros"]

def header_macros(cfg):
    """``[(name, value, comment)]`` of every macro the header defines, in order."""
    from avta.version import HW_VERSION
    m = []

    def add(name, value, comment=""):
        m.append((name, int(value), comment))

    add("VTA_LOG_INP_WIDTH", cfg.log_inp_width)
    add("VTA_INP_WIDTH", cfg.inp_width, "bits of an input element")
    add("VTA_LOG_WGT_WIDTH", cfg.log_wgt_width)
    add("VTA_WGT_WIDTH", cfg.wgt_width)
    add("VTA_LOG_ACC_WIDTH", cfg.log_acc_width)
    add("VTA_ACC_WIDTH", cfg.acc_width)
    add("VTA_LOG_OUT_WIDTH", cfg.log_inp_width)
    add("VTA_OUT_WIDTH", cfg.out_width)
    add("VTA_LOG_BATCH", cfg.log_batch)
    add("VTA_BATCH", cfg.batch)
    add("VTA_LOG_BLOCK_IN", cfg.log_block_in)
    add("VTA_BLOCK_IN", cfg.block_in)
    add("VTA_LOG_BLOCK_OUT", cfg.log_block_out)
    add("VTA_BLOCK_OUT", cfg.block_out)
    if cfg.log_block_in == cfg.log_block_out:
        add("VTA_LOG_BLOCK", cfg.log_block_in, "upstream's single block size")
        add("VTA_BLOCK", cfg.block_in)
    add("VTA_LOG_UOP_WIDTH", cfg.log_uop_width)
    add("VTA_UOP_WIDTH", cfg.uop_bits)
    add("VTA_INS_WIDTH", formats.INSN_BITS)
    add("VTA_LOG_BUS_WIDTH", cfg.axi_data_bits.bit_length() - 1)
    add("VTA_BUS_WIDTH", cfg.axi_data_bits)
    for pad in (p for p in SCRATCHPADS if p != "out"):    # OUT follows from ACC, below
        key = pad.upper()
        add(f"VTA_LOG_{key}_BUFF_SIZE", getattr(cfg, f"log_{pad}_buff_size"))
        add(f"VTA_{key}_BUFF_SIZE", 1 << getattr(cfg, f"log_{pad}_buff_size"), "bytes")
    add("VTA_LOG_OUT_BUFF_SIZE", cfg.log_acc_buff_size + cfg.log_inp_width - cfg.log_acc_width)
    add("VTA_OUT_BUFF_SIZE", cfg.out.size_bytes)
    add("VTA_INP_MATRIX_WIDTH", cfg.inp_tensor_bits, "bits of one INP row")
    add("VTA_WGT_MATRIX_WIDTH", cfg.wgt_tensor_bits)
    add("VTA_ACC_MATRIX_WIDTH", cfg.acc_tensor_bits)
    add("VTA_OUT_MATRIX_WIDTH", cfg.out_tensor_bits)
    for name, bits in (("INP", cfg.inp_tensor_bits), ("WGT", cfg.wgt_tensor_bits),
                       ("ACC", cfg.acc_tensor_bits), ("OUT", cfg.out_tensor_bits)):
        if bits >= cfg.axi_data_bits:
            add(f"VTA_{name}_MAT_AXI_RATIO", bits // cfg.axi_data_bits, "bus beats per row")
    add("VTA_INS_ELEM_BYTES", formats.INSN_BITS // 8)
    add("VTA_UOP_ELEM_BYTES", cfg.uop_elem_bytes)
    add("VTA_INP_ELEM_BYTES", cfg.inp_elem_bytes)
    add("VTA_WGT_ELEM_BYTES", cfg.wgt_elem_bytes)
    add("VTA_ACC_ELEM_BYTES", cfg.acc_elem_bytes)
    add("VTA_OUT_ELEM_BYTES", cfg.out_elem_bytes)
    add("VTA_ACC_8BIT_ELEM_BYTES", cfg.acc8_elem_bytes, "an ACC_8BIT element in DRAM")
    for pad in cfg.scratchpads:
        key = pad.name.upper()
        add(f"VTA_LOG_{key}_BUFF_DEPTH", pad.log_depth)
        add(f"VTA_{key}_BUFF_DEPTH", pad.depth, "rows")
    add("VTA_OPCODE_BIT_WIDTH", formats.OPCODE_BITS)
    add("VTA_ALU_OPCODE_BIT_WIDTH", formats.ALU_OPCODE_BITS)
    for op in Opcode:
        add(f"VTA_OPCODE_{op.name}", op.value)
    for op in alu_ops(cfg):     # SCL only where ALU_SCALE is 1 or 2 (docs/isa.md §3.4)
        add(f"VTA_ALU_OPCODE_{op.name}", op.value)
    add("VTA_MEMOP_ID_BIT_WIDTH", formats.MEMORY_TYPE_BITS)
    add("VTA_MEMOP_SRAM_ADDR_BIT_WIDTH", formats.SRAM_ADDR_BITS)
    add("VTA_MEMOP_DRAM_ADDR_BIT_WIDTH", formats.DRAM_ADDR_BITS)
    add("VTA_MEMOP_SIZE_BIT_WIDTH", formats.SIZE_BITS)
    add("VTA_MEMOP_STRIDE_BIT_WIDTH", formats.STRIDE_BITS)
    add("VTA_MEMOP_PAD_BIT_WIDTH", formats.PAD_BITS)
    add("VTA_MEMOP_PAD_VAL_BIT_WIDTH", formats.PAD_VALUE_BITS)
    add("VTA_LOOP_ITER_WIDTH", formats.ITER_BITS)
    add("VTA_ALUOP_IMM_BIT_WIDTH", formats.IMM_BITS)
    add("VTA_SHR_ARG_BIT_WIDTH", cfg.log_acc_width)
    add("VTA_MUL_ARG_BIT_WIDTH", cfg.inp_width)
    for mem in MemType:
        add(f"VTA_MEM_ID_{mem.name}", mem.value)
    for pad_value in PadValue:
        add(f"VTA_PAD_VALUE_{pad_value.name}", pad_value.value)
    add("VTA_INP_FACTOR_WIDTH", cfg.inp_factor_bits, "GEMM src factor fields")
    add("VTA_WGT_FACTOR_WIDTH", cfg.wgt_factor_bits, "GEMM wgt factor fields")
    add("VTA_ACC_FACTOR_WIDTH", cfg.acc_factor_bits, "dst factors, and ALU src factors")
    add("VTA_LOG_INP_FACTOR_RESTRICT", cfg.log_inp_factor_restrict)
    add("VTA_LOG_WGT_FACTOR_RESTRICT", cfg.log_wgt_factor_restrict)
    add("VTA_LOG_ACC_FACTOR_RESTRICT", cfg.log_acc_factor_restrict)
    add("VTA_ACC_READ_PORTS", cfg.acc_read_ports)
    add("VTA_ALU_SCALE", cfg.alu_scale, "1 or 2: the ALU has SCL, opcode 7; 0: it has not")
    if cfg.alu_scale:
        add("VTA_ALU_SCALE_BITS", cfg.scale_bits,
            "W: SCL's multiplier width, (A * m) >> (W - 1) from an ACC row")
    add("VTA_TOKEN_BITS", cfg.token_bits)
    add("VTA_GEMM_PIPE_STAGES", cfg.gemm_stages, "GEMM dot-product pipeline registers")
    add("VTA_UOP_WAYS", cfg.uop_write_ways, "micro-ops a LOAD UOP writes a cycle")
    add("VTA_CONFIG_ID", cfg.config_id, "CONFIG_ID register value")
    add("VTA_HW_VERSION", HW_VERSION, "VERSION register value")
    # Field positions, so C code can pack instructions without bit-field structs.
    lay = layouts(cfg)
    for fmt, layout in (("MEM", lay.memory), ("GEM", lay.gemm), ("ALU", lay.alu),
                        ("UOP", lay.uop)):
        for name, offset, width in lay.fields(layout):
            add(f"AVTA_{fmt}_{name.upper()}_SHIFT", offset)
            add(f"AVTA_{fmt}_{name.upper()}_BITS", width)
    for name, offset in REGISTERS.items():
        add(f"AVTA_REG_{name}", offset, "control register byte offset")
    for index, name in enumerate(COUNTER_NAMES):
        add(f"AVTA_REG_{name}", REGISTERS["COUNTERS"] + 4 * index)
    for name, bit in Ctrl.__members__.items():
        add(f"AVTA_CTRL_{name}", bit, "CTRL register bit")
    for code in ErrorCode:
        add(f"AVTA_ERR_{code.name}", code.value)
    return m


def c_header(cfg):
    """The text of ``vta_hw_spec.h`` for ``cfg``."""
    guard = "AVTA_HW_SPEC_H_"
    lines = [
        f"/* Generated by avta for configuration {cfg.name!r} ({cfg.shape_name}). Do not edit:",
        f" * regenerate with `avta gen --config {cfg.name}`. Upstream hw_spec.h names (VTA_*) plus",
        " * this project's additions (AVTA_*: field positions, registers and CTRL bits, error",
        " * codes). */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
    ]
    for name, value, comment in header_macros(cfg):
        suffix = "u" if value >= 1 << 31 else ""
        text = f"#define {name} {value}{suffix}"
        lines.append(f"{text:<56} /* {comment} */" if comment else text)
    lines += ["", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)
