"""An avta program made ready for upstream VTA's simulator, and the check that it means the same
there.

**Rebasing.** avta's DRAM starts at address 0 and a ``dram_base`` counts elements of its memory
type from there (docs/isa.md §3, DRAM addresses). Upstream's simulator has no DRAM of its own:
``VTAMemAlloc`` hands out buffers at *physical* addresses (pages after a first one that is never
used), and a LOAD or STORE reads element ``dram_base`` of its type at physical byte address
``dram_base · element_bytes``. The harness copies avta's whole image into one such buffer, so
element n of type T at avta address ``n · element_bytes(T)`` is at physical address
``base + n · element_bytes(T)``: each ``dram_base`` grows by ``base / element_bytes(T)``, which
is exact when ``base`` is a multiple of every element size (upstream's buffers start on 4 KiB
pages; the largest element, a WGT row at ``default``, is 256 bytes).

**Meaning the same.** docs/isa.md (compatibility) lists where avta's semantics differ from
upstream's simulator; :func:`upstream_differences` finds each instruction of a program that
could meet one of them, or that upstream does not have at all: an ALU operation upstream lacks
(CLP, MOV, SCL), MUL (avta's is the 8-bit product), an ALU immediate whose source row is not its
destination row (avta reads ACC[src], upstream ACC[dst]), SHR by an amount outside −31..31 or
taken from data, and a LOAD padding with a pad value other than zero (upstream pads with zero).
"""

from avta.errors import UserError
from avta.isa.encoding import EncodeError, codec
from avta.isa.enums import AluOp, MemType, Opcode, PadValue
from avta.isa.insn import AluInsn, MemoryInsn
from avta.isa.memories import elem_bytes

__all__ = ["rebase_stream", "upstream_differences", "upstream_alu_ops"]


def rebase_stream(cfg, stream, base):
    """The instruction stream ``stream`` (bytes, avta's encoding) with every LOAD's and STORE's
    ``dram_base`` moved to an image that starts at physical byte address ``base``."""
    if base < 0:
        raise UserError(f"a physical base address cannot be negative: {base}")
    program = codec(cfg).decode_program(bytes(stream))
    moved = []
    for index, insn in enumerate(program):
        if isinstance(insn, MemoryInsn):
            size = elem_bytes(cfg, MemType(insn.memory_type))
            if base % size:
                raise UserError(f"the image's physical address 0x{base:x} is not a multiple of "
                                f"the {size}-byte {MemType(insn.memory_type).name} element of "
                                f"instruction {index}; it cannot be rebased")
            insn = insn.replace(dram_base=insn.dram_base + base // size)
        moved.append(insn)
    try:
        return codec(cfg).encode_program(moved)
    except EncodeError as error:
        raise UserError(f"the image at physical address 0x{base:x} puts a dram_base past the "
                        f"field's 32 bits: {error}") from None


def upstream_alu_ops(header_texts):
    """The ALU operations upstream defines: those whose ``VTA_ALU_OPCODE_<NAME>`` its headers
    (``header_texts``) ``#define``."""
    text = "\n".join(header_texts)
    return frozenset(op for op in AluOp if f"#define VTA_ALU_OPCODE_{op.name} " in text)


def upstream_differences(program, alu_ops):
    """``[(instruction index, why)]`` of the instructions of ``program`` (a
    :class:`~avta.runtime.program.Program`) whose result on upstream's simulator may differ
    from avta's, given the ALU operations upstream has (``alu_ops``,
    :func:`upstream_alu_ops`); an empty list means the program means the same on both."""
    found = []
    uop_memory = {}                         # UOP scratchpad row -> micro-op, as the loads leave it
    for index, insn in enumerate(program.insns):
        if isinstance(insn, MemoryInsn) and insn.opcode == Opcode.LOAD:
            if insn.memory_type == MemType.UOP:
                _load_uops(program, insn, uop_memory)
            elif insn.pad_value != PadValue.ZERO and (insn.x_pad_0 or insn.x_pad_1
                                                      or insn.y_pad_0 or insn.y_pad_1):
                found.append((index, f"LOAD pads with {PadValue(insn.pad_value).name}; "
                                     f"upstream pads with zero"))
        elif isinstance(insn, AluInsn):
            why = _alu_difference(insn, alu_ops, uop_memory)
            if why:
                found.append((index, why))
    return found


def _load_uops(program, insn, uop_memory):
    """Record which micro-ops a LOAD UOP leaves in which rows (its ``dram_base`` counts from
    the program's micro-op buffer, not yet linked)."""
    row = insn.sram_base + insn.y_pad_0 * (insn.x_size + insn.x_pad_0 + insn.x_pad_1)
    for y in range(insn.y_size):
        row += insn.x_pad_0
        for x in range(insn.x_size):
            source = insn.dram_base + y * insn.x_stride + x
            uop_memory[row] = program.uops[source] if source < len(program.uops) else None
            row += 1
        row += insn.x_pad_1


def _alu_difference(insn, alu_ops, uop_memory):
    op = AluOp(insn.alu_opcode)
    if op not in alu_ops:
        return f"ALU {op.name}: upstream has no such operation"
    if op == AluOp.MUL:
        return "ALU MUL: avta's is the 8-bit product of the operands' low bytes, upstream's " \
               "the full 32-bit one"
    if op == AluOp.SHR and not insn.use_imm:
        return "ALU SHR by amounts from data: avta reduces them to -32..31, upstream does not"
    if op == AluOp.SHR and not -31 <= insn.imm <= 31:
        return f"ALU SHR by {insn.imm}: avta reduces the amount to -32..31, upstream does not"
    if insn.use_imm and insn.iter_out and insn.iter_in:
        factors_differ = ((insn.iter_out > 1 and insn.src_factor_out != insn.dst_factor_out)
                          or (insn.iter_in > 1 and insn.src_factor_in != insn.dst_factor_in))
        rows_differ = any(uop_memory.get(u) is None or uop_memory[u].src_idx
                          != uop_memory[u].dst_idx for u in range(insn.uop_bgn, insn.uop_end))
        if factors_differ or rows_differ:
            return f"ALU {op.name} with an immediate and src != dst: avta reads ACC[src], " \
                   f"upstream ACC[dst]"
    return None
