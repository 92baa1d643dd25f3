"""The JSON-lines assembly format of ``avta asm`` / ``avta disasm`` and a one-line text form.

JSON form (docs/architecture.md, command line): one object per instruction with ``"op"`` (LOAD,
STORE, GEMM, FINISH, ALU) and every field of its format by its docs/isa.md §2 name, zeros included;
``memory_type`` is a number, ``imm`` is signed, and an ALU instruction has ``"alu_op"`` (MIN…MOV)
in place of ``alu_opcode`` (SCL, opcode 7, assembles at any configuration; its legality is the
configuration's, docs/isa.md §3.5). ``asm`` treats a missing field as 0. Opcodes 5..7 disassemble as
``{"op": "ILLEGAL", "opcode": N, "raw": "0x…"}``. Disassembly of an illegal instruction adds
``"error"`` (the docs/isa.md §3.5 code) and ``"reason"``.
"""

import json

from avta.errors import UserError

from .enums import AluOp, MemType, Opcode, PadValue
from .insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn
from .legality import check

__all__ = ["AsmError", "insn_to_json", "insn_from_json", "format_insn", "parse_jsonl"]


class AsmError(UserError, ValueError):
    """An assembly line that cannot be turned into an instruction."""


def insn_to_json(insn, *, with_errors=True, cfg=None):
    """The JSON object (a dict) of one instruction; ``cfg`` decides the errors it reports (SCL
    is legal only with ``ALU_SCALE`` 1 or 2; ``None``: without)."""
    if isinstance(insn, IllegalInsn):
        obj = {"op": "ILLEGAL", "opcode": insn.opcode, "raw": f"0x{insn.raw:032x}"}
    else:
        obj = {"op": insn.op.name}
        for name, value in insn.field_values().items():
            if name == "alu_opcode":
                obj["alu_op"] = AluOp(value).name if value in AluOp._value2member_map_ else value
            else:
                obj[name] = int(value)
    if with_errors:
        violation = check(insn, cfg)
        if violation is not None:
            obj["error"] = int(violation.code)
            obj["reason"] = violation.reason
    return obj


def insn_from_json(obj, *, where="instruction"):
    """An instruction from its JSON object; unknown keys and bad values raise :class:`AsmError`."""
    if not isinstance(obj, dict):
        raise AsmError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    obj = dict(obj)
    obj.pop("error", None)
    obj.pop("reason", None)
    op_name = obj.pop("op", None)
    if op_name == "ILLEGAL":
        opcode = _int(obj.get("opcode", 0), "opcode", where)
        # Without "raw" the instruction is its opcode bits and zeros elsewhere.
        raw = _int(obj.get("raw", opcode), "raw", where)
        try:
            return IllegalInsn(opcode=opcode, raw=raw)
        except ValueError as error:
            raise AsmError(f"{where}: {error}") from None
    try:
        opcode = Opcode[op_name]
    except (KeyError, TypeError):
        raise AsmError(f"{where}: \"op\" must be one of {', '.join(o.name for o in Opcode)} "
                       f"or ILLEGAL, got {op_name!r}") from None
    cls = {Opcode.LOAD: MemoryInsn, Opcode.STORE: MemoryInsn, Opcode.GEMM: GemmInsn,
           Opcode.FINISH: GemmInsn, Opcode.ALU: AluInsn}[opcode]
    if "alu_op" in obj:
        if cls is not AluInsn:
            raise AsmError(f"{where}: \"alu_op\" belongs to ALU instructions, not {op_name}")
        alu_op = obj.pop("alu_op")
        if isinstance(alu_op, str):
            try:
                alu_op = AluOp[alu_op.upper()]
            except KeyError:
                raise AsmError(f"{where}: unknown alu_op {alu_op!r} "
                               f"({', '.join(op.name for op in AluOp)})") from None
        obj["alu_opcode"] = alu_op
    if isinstance(obj.get("memory_type"), str):
        try:
            obj["memory_type"] = MemType[obj["memory_type"].upper()]
        except KeyError:
            raise AsmError(f"{where}: unknown memory_type {obj['memory_type']!r}") from None
    names = set(cls.field_names())
    unknown = sorted(set(obj) - names)
    if unknown:
        raise AsmError(f"{where}: {op_name} has no field {', '.join(map(repr, unknown))} "
                       f"(fields: {', '.join(cls.field_names()[1:])})")
    if "opcode" in obj and obj["opcode"] != opcode:
        raise AsmError(f"{where}: opcode {obj['opcode']} contradicts op {op_name}")
    values = {name: _int(value, name, where) for name, value in obj.items()}
    values["opcode"] = opcode
    return cls(**values)


def _int(value, name, where):
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int):
        raise AsmError(f"{where}: field {name} must be an integer, got {value!r}")
    return value


def parse_jsonl(text, *, source="<input>"):
    """Instructions from JSON-lines text; blank lines and lines starting with # are skipped."""
    insns = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            raise AsmError(f"{source}:{number}: not valid JSON ({error.msg})") from None
        insns.append(insn_from_json(obj, where=f"{source}:{number}"))
    return insns


def _flags(insn):
    names = [n for n, v in insn.flags.items() if v]
    return f"  [{' '.join(names)}]" if names else ""


def _name(enum_cls, value):
    return enum_cls(value).name if value in enum_cls._value2member_map_ else str(value)


def format_insn(insn):
    """A one-line, human-readable form, as ``avta disasm`` and the trace diff print it."""
    if isinstance(insn, IllegalInsn):
        return f"ILLEGAL opcode {insn.opcode}  raw 0x{insn.raw:032x}"
    if isinstance(insn, MemoryInsn):
        mem = _name(MemType, insn.memory_type)
        if insn.x_size == 0:
            return f"{insn.op.name} {mem} (no data){_flags(insn)}"
        arrow = "<-" if insn.opcode == Opcode.LOAD else "->"
        text = (f"{insn.op.name} {mem} sram {insn.sram_base} {arrow} dram {insn.dram_base:#x}  "
                f"y {insn.y_size} x {insn.x_size} stride {insn.x_stride}")
        pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
        if any(pads) or insn.pad_value:
            text += f"  pad y {pads[0]}/{pads[1]} x {pads[2]}/{pads[3]} " \
                    f"{_name(PadValue, insn.pad_value).lower()}"
        return text + _flags(insn)
    if insn.opcode == Opcode.FINISH:
        return "FINISH" + _flags(insn)
    loop = (f"uop [{insn.uop_bgn},{insn.uop_end}) iter {insn.iter_out}x{insn.iter_in}  "
            f"dst +{insn.dst_factor_out}/+{insn.dst_factor_in} "
            f"src +{insn.src_factor_out}/+{insn.src_factor_in}")
    if isinstance(insn, GemmInsn):
        head = "GEMM reset" if insn.reset else "GEMM"
        return f"{head} {loop} wgt +{insn.wgt_factor_out}/+{insn.wgt_factor_in}{_flags(insn)}"
    op = _name(AluOp, insn.alu_opcode)
    operand = f" imm {insn.imm}" if insn.use_imm else ""
    return f"ALU {op}{operand} {loop}{_flags(insn)}"
