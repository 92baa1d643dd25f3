"""The generated tables of the documentation, and the tool that keeps them current.

Every table in ``docs/`` that restates something the code defines (field positions, enums,
configuration keys, shipped configurations, golden vectors, the register map) is rendered
here from the code itself and pasted between two marker lines::

    <!-- BEGIN GENERATED: fields-default-gemm -->
    | field | bits | width |
    ...
    <!-- END GENERATED: fields-default-gemm -->

Everything outside the markers is prose and is never touched.

``python -m avta.isa.doc_tables`` rewrites the regions of every ``docs/*.md`` file in place;
``python -m avta.isa.doc_tables --check`` changes nothing, names each region whose text differs
from what the code gives (or that no document contains) and exits 1 when there is one.
Exit status 2 means a document's markers are malformed (an unknown name, a BEGIN without its END,
a region inside a region).

From Python: :func:`tables` gives every region's markdown by name, :func:`check` the list of
stale regions of a docs folder and :func:`rewrite` rewrites them.
"""

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import formats
from .config import KEYS, load_config, shipped_configs
from .encoding import codec, finish
from .enums import AluOp, ErrorCode, MemType, Opcode, PadValue
from .insn import AluInsn, GemmInsn, MemoryInsn, Uop
from .layout import layouts
from .registers import (BYTE_COUNTERS, COUNTER_NAMES, CYCLE_COUNTERS, REGISTERS, STEP_COUNTERS,
                        counter_offset)

__all__ = ["DOCS_DIR", "DocTablesError", "Stale", "tables", "check", "rewrite", "main"]

#: The documentation folder of the repository this package was imported from (``isa/`` is the
#: package ``avta.isa``, so its parent is the repository root).
DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"

_MARKER = re.compile(r"^<!-- (BEGIN|END) GENERATED: ([A-Za-z0-9_.-]+) -->$")


class DocTablesError(ValueError):
    """A document whose markers cannot be processed; the message names the file and line."""


@dataclass(frozen=True)
class Stale:
    """A region whose text is not what the code gives: ``path`` (None when no document has
    it), region ``name`` and ``reason`` (``differs`` or ``missing``)."""
    path: Path
    name: str
    reason: str

    def __str__(self):
        if self.path is None:
            return f"{self.name}: no document has this region ({self.reason})"
        return f"{_shown(self.path)}: {self.name} ({self.reason})"


def _shown(path):
    """``path`` relative to the working directory when it is below it (shorter messages)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd())
    except ValueError:
        return path


# -- markdown helpers ----------------------------------------------------------------------------

def _table(header, rows):
    """A markdown table; ``|`` inside a cell is escaped so a cell never splits."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])


def _bits(offset, width):
    return f"[{offset + width - 1}:{offset}]"


# -- instruction and micro-op layouts ----------------------------------------------------------

#: Which layout of :class:`~avta.isa.layout.IsaLayouts` each format table shows.
FORMATS = {"memory": "LOAD/STORE", "gemm": "GEMM/FINISH", "alu": "ALU", "uop": "micro-op"}
#: The configurations whose layouts the ISA reference prints in full.
LAYOUT_CONFIGS = ("default", "tiny")


def field_table(cfg, layout_name):
    """Field, bits ``[hi:lo]`` and width of every field of one format of ``cfg``, with the bits
    the packing rule skips shown as unused rows (they are 0 when encoded, ignored when decoded)."""
    lay = layouts(cfg)
    layout = getattr(lay, layout_name)
    rows, at = [], 0
    for name, offset, width in lay.fields(layout):
        if offset > at:
            rows.append(("*(unused)*", _bits(at, offset - at), offset - at))
        rows.append((f"`{name}`", _bits(offset, width), width))
        at = offset + width
    if at < layout.size:
        rows.append(("*(unused)*", _bits(at, layout.size - at), layout.size - at))
    return _table(("field", "bits", "width"), rows)


# -- enumerations --------------------------------------------------------------------------------

# The meaning of each member. Every member must have one (a new member without a meaning makes
# the generator fail), so the enum tables can never silently lose a row.
_MEANINGS = {
    Opcode: {
        "LOAD": "2-D load from DRAM into a scratchpad (§3.1); stage by `memory_type`",
        "STORE": "2-D store of OUT rows to DRAM (§3.2); store stage",
        "GEMM": "matrix multiply-accumulate over a micro-op loop nest (§3.3); compute stage",
        "FINISH": "ends the run (GEMM format, every other field 0); compute stage",
        "ALU": "element-wise ALU operation over a micro-op loop nest (§3.4); compute stage",
    },
    MemType: {
        "UOP": "micro-ops; LOAD only (compute stage)",
        "WGT": "weights, `[o][k]` int8; LOAD only (load stage)",
        "INP": "inputs, `[b][k]` int8; LOAD only (load stage)",
        "ACC": "accumulators, `[b][o]` int32; LOAD only (compute stage)",
        "OUT": "outputs, `[b][o]` int8; STORE only (a LOAD of OUT is error 3)",
        "ACC_8BIT": "int8 elements in DRAM sign-extended into ACC rows; LOAD only (compute "
                    "stage); element `BATCH·BLOCK_OUT` bytes, addressed through ACC_BASE",
    },
    AluOp: {
        "MIN": "min(A, B), signed",
        "MAX": "max(A, B), signed",
        "ADD": "A + B, wrapping",
        "SHR": "s = B[5:0] as a signed 6-bit amount: A >> s (arithmetic) if s ≥ 0, else "
               "A << −s (wrapping)",
        "MUL": "sext(A[7:0]) · sext(B[7:0]) (the Intel Labs 8-bit product)",
        "CLP": "max(min(A, B), −B): clip A to [−B, B] (extension)",
        "MOV": "B (extension; with two operands only ACC[src] is read)",
        "SCL": "(A · sext(B[W−1:0])) >> (W−1) (arithmetic), wrapping, W = 16 or 24 by "
               "`ALU_SCALE`; an immediate is B = sext(imm) · 2^(W−16): a fixed-point scale "
               "rounding down (extension; only with `ALU_SCALE` 1 or 2, else error 2)",
    },
    PadValue: {
        "ZERO": "padding rows hold 0",
        "MIN": "the most negative value of each lane's element type (−128 for INP/WGT, −2^31 "
               "for ACC and ACC_8BIT)",
        "MAX": "the most positive value of each lane's element type (127 for INP/WGT, 2^31 − 1 "
               "for ACC and ACC_8BIT)",
    },
    ErrorCode: {
        "NONE": "no error (ERR_CODE after a run that finished)",
        "ILLEGAL_OPCODE": "decode: opcode 5, 6 or 7",
        "ILLEGAL_ALU_OPCODE": "decode: ALU `alu_opcode` 7 (SCL) where `ALU_SCALE` is 0",
        "ILLEGAL_MEMORY_TYPE": "decode: LOAD with `memory_type` 4 (OUT), 6 or 7",
        "ILLEGAL_PAD_VALUE": "decode: LOAD with `pad_value` 3",
        "ILLEGAL_STORE": "decode: STORE with `x_size` > 0 and a memory type other than OUT, or "
                         "a non-zero pad or `pad_value`",
        "TOKEN_WRONG_STAGE": "decode: a load-stage instruction with `pop_prev`/`push_prev`, or a "
                             "store-stage one with `pop_next`/`push_next`",
        "TOKEN_OVERFLOW": "execution: a push onto a full token counter",
        "FINISH_WITH_TOKEN": "decode: FINISH with any token flag set",
        "DRAM_OUT_OF_RANGE": "execution: a DRAM access outside memory, or an AXI error response",
        "SRAM_OUT_OF_RANGE": "execution: a scratchpad index past the end (fsim strict mode only)",
        "UNALIGNED_BASE": "launch: a base register not a multiple of min(element bytes, bus "
                          "bytes); the index is 0",
    },
}

# Values a field can hold that have no member, and what decoding them does.
_ILLEGAL = {
    Opcode: "illegal: error 1",
    MemType: "illegal: error 3 on LOAD, error 5 on a STORE with `x_size` > 0",
    AluOp: "illegal: error 2",
    PadValue: "illegal on LOAD: error 4",
}

#: Region name → enum, for the enum tables.
ENUMS = {"opcode": Opcode, "memtype": MemType, "aluop": AluOp, "padvalue": PadValue,
         "errorcode": ErrorCode}


def _ranges(values):
    """``[5, 6, 7]`` → ``"5–7"``; ``[6, 7]`` → ``"6, 7"``."""
    values = sorted(values)
    if len(values) > 2 and values[-1] - values[0] == len(values) - 1:
        return f"{values[0]}–{values[-1]}"
    return ", ".join(map(str, values))


def _require_meanings(names, meanings, what, table):
    """A new name with no hand-written meaning must not slip into the documents unexplained."""
    missing = [name for name in names if name not in meanings]
    if missing:
        raise DocTablesError(f"{what}(s) {', '.join(missing)} have no meaning in "
                             f"avta.isa.doc_tables.{table}; add one")


def enum_table(enum):
    """Value, name and meaning of every member of ``enum``, then the unassigned values."""
    meanings = _MEANINGS[enum]
    _require_meanings([m.name for m in enum], meanings, f"{enum.__name__} member", "_MEANINGS")
    rows = [(m.value, f"`{m.name}`", meanings[m.name]) for m in enum]
    if enum in _ILLEGAL:
        free = [v for v in range(1 << _field_bits(enum)) if v not in enum._value2member_map_]
        if free:
            rows.append((_ranges(free), "—", _ILLEGAL[enum]))
    return _table(("value", "name", "meaning"), rows)


def _field_bits(enum):
    """Bits of the instruction field that holds ``enum``."""
    return {Opcode: formats.OPCODE_BITS, MemType: formats.MEMORY_TYPE_BITS,
            AluOp: formats.ALU_OPCODE_BITS, PadValue: formats.PAD_VALUE_BITS}[enum]


# -- configuration ------------------------------------------------------------------------------

_KEY_MEANINGS = {
    "LOG_INP_WIDTH": "log2 bits of an input element",
    "LOG_WGT_WIDTH": "log2 bits of a weight element",
    "LOG_ACC_WIDTH": "log2 bits of an accumulator element",
    "LOG_BATCH": "log2 of BATCH, the rows of the input tensor",
    "LOG_BLOCK_IN": "log2 of BLOCK_IN, the GEMM reduction width",
    "LOG_BLOCK_OUT": "log2 of BLOCK_OUT, the GEMM output width",
    "LOG_UOP_BUFF_SIZE": "log2 bytes of the micro-op scratchpad",
    "LOG_INP_BUFF_SIZE": "log2 bytes of the input scratchpad",
    "LOG_WGT_BUFF_SIZE": "log2 bytes of the weight scratchpad",
    "LOG_ACC_BUFF_SIZE": "log2 bytes of the accumulator scratchpad (OUT has the ACC depth)",
    "LOG_UOP_WIDTH": "log2 bits of a micro-op (5: 32-bit, 6: 64-bit)",
    "AXI_DATA_BITS": "width of the AXI4 data bus",
    "LOG_INP_FACTOR_RESTRICT": "bits removed from the GEMM `src_factor_*` fields (I)",
    "LOG_WGT_FACTOR_RESTRICT": "bits removed from the GEMM `wgt_factor_*` fields (W)",
    "LOG_ACC_FACTOR_RESTRICT": "bits removed from the `dst_factor_*` fields and the ALU "
                               "`src_factor_*` fields (A)",
    "ACC_READ_PORTS": ("ACC read ports: 1, a two-operand ALU step takes 2 cycles (1 when it "
                       "reuses the src row of the step before, §3.4); 2, it takes 1"),
    "TOKEN_BITS": "width of each dependency-token counter",
    "ALU_SCALE": "1 or 2: the ALU has ALU opcode 7, SCL, with a multiplier per lane of W = 16 "
                 "bits (1: 32×16) or W = 24 bits (2: 32×24) (§3.4); 0: opcode 7 is error 2, as "
                 "upstream. Left out of CONFIG_ID's hash at 0",
    "GEMM_PIPE_STAGES": "pipeline registers in the GEMM's dot product (each adds a cycle to a "
                        "GEMM instruction; not part of the ISA); absent: `ceil(LOG_BLOCK_IN / 2)`",
    "UOP_WAYS": "interleaved banks of the micro-op scratchpad: a LOAD UOP writes this many "
                "micro-ops a cycle (not part of the ISA); absent: the micro-ops a bus beat "
                "holds, at most 4, at most half the micro-op depth",
}


def config_keys_table():
    """Every key of :data:`avta.isa.config.KEYS`: its default, the values allowed, meaning."""
    _require_meanings(KEYS, _KEY_MEANINGS, "configuration key", "_KEY_MEANINGS")
    rows = [(f"`{key}`", "absent" if default is None else default, allowed, _KEY_MEANINGS[key])
            for key, (default, allowed) in KEYS.items()]
    return _table(("key", "default", "allowed", "meaning"), rows)


def shipped_configs_table():
    """One row per configuration in ``configs/``: shape, bus, depths, widths, CONFIG_ID."""
    rows = []
    for name in shipped_configs():
        cfg = load_config(name)
        restrict = (cfg.log_inp_factor_restrict, cfg.log_wgt_factor_restrict,
                    cfg.log_acc_factor_restrict)
        rows.append((
            f"`{name}`", cfg.shape_name, cfg.axi_data_bits,
            "/".join(str(p.depth) for p in (cfg.uop, cfg.inp, cfg.wgt, cfg.acc)),
            cfg.uop_bits, f"{cfg.acc_factor_bits}/{cfg.inp_factor_bits}/{cfg.wgt_factor_bits}",
            "/".join(map(str, restrict)), f"`0x{cfg.config_id:08x}`"))
    return _table(("name", "shape", "AXI bits", "depth uop/inp/wgt/acc", "micro-op bits",
                   "factor bits A/I/W", "restrict inp/wgt/acc", "CONFIG_ID"), rows)


# -- golden vectors ------------------------------------------------------------------------------

LOAD, STORE = Opcode.LOAD, Opcode.STORE

#: (description, configuration, instruction or micro-op): the encodings of docs/isa.md §2.
GOLDEN = [
    ("LOAD INP pop_next push_next, sram 0, dram 0x100, y 1, x 16, stride 16", "default",
     MemoryInsn(opcode=LOAD, pop_next=1, push_next=1, memory_type=MemType.INP, dram_base=0x100,
                y_size=1, x_size=16, x_stride=16)),
    ("LOAD INP sram 5, dram 0x12345678, y 4, x 4, stride 16, all four pads 1", "default",
     MemoryInsn(opcode=LOAD, memory_type=MemType.INP, sram_base=5, dram_base=0x12345678,
                y_size=4, x_size=4, x_stride=16, y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=1)),
    ("STORE OUT pop_prev push_prev, sram 0, dram 0x200, y 1, x 8, stride 8", "default",
     MemoryInsn(opcode=STORE, pop_prev=1, push_prev=1, memory_type=MemType.OUT, dram_base=0x200,
                y_size=1, x_size=8, x_stride=8)),
    ("GEMM pop_prev push_prev, uop [0,1), iter_out 4, iter_in 16, dst_out 1, src_out 1, "
     "wgt_in 1", "default",
     GemmInsn(pop_prev=1, push_prev=1, uop_bgn=0, uop_end=1, iter_out=4, iter_in=16,
              dst_factor_out=1, src_factor_out=1, wgt_factor_in=1)),
    ("GEMM reset, uop [2,3), iter_out 1, iter_in 16, dst_in 1", "default",
     GemmInsn(reset=1, uop_bgn=2, uop_end=3, iter_out=1, iter_in=16, dst_factor_in=1)),
    ("ALU SHR use_imm imm −3, push_next, uop [0,1), iter_out 1, iter_in 64, dst_in 1, src_in 1",
     "default",
     AluInsn(alu_opcode=AluOp.SHR, use_imm=1, imm=-3, push_next=1, uop_bgn=0, uop_end=1,
             iter_out=1, iter_in=64, dst_factor_in=1, src_factor_in=1)),
    ("FINISH", "default", finish()),
    ("micro-op dst 1, src 2, wgt 3", "default", Uop(dst_idx=1, src_idx=2, wgt_idx=3)),
    ("GEMM uop [0,1), iter_out 1, iter_in 1, dst_factor_out 1", "tiny",
     GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, dst_factor_out=1)),
    ("micro-op dst 1, src 2, wgt 3 (64-bit micro-ops, ACC depth 8192)", "big_acc",
     Uop(dst_idx=1, src_idx=2, wgt_idx=3)),
]


def golden_words():
    """``[(description, config, word0, word1)]`` of :data:`GOLDEN`, encoded by
    :mod:`avta.isa.encoding`; a micro-op has one word (``word1`` None)."""
    out = []
    for description, name, value in GOLDEN:
        c = codec(load_config(name))
        if isinstance(value, Uop):
            out.append((description, name, c.encode_uop(value), None))
        else:
            out.append((description, name, *c.words(value)))
    return out


def golden_table():
    """The golden vectors as a table: instruction, configuration, word0, word1."""
    rows = []
    for description, name, word0, word1 in golden_words():
        if word1 is None:
            bits = load_config(name).uop_bits
            rows.append((description, f"`{name}`", f"`0x{word0:0{bits // 4}x}` ({bits}-bit)", ""))
        else:
            rows.append((description, f"`{name}`", f"`0x{word0:016x}`", f"`0x{word1:016x}`"))
    return _table(("instruction", "configuration", "word0", "word1"), rows)


# -- control registers ---------------------------------------------------------------------------

_REGISTER_MEANINGS = {
    "CTRL": ("R/W", "write bit 0 = 1 to launch (ignored while busy); read: bit 0 busy, "
                    "bit 1 finish, bit 2 error (finish and error are cleared at launch)"),
    "CYCLES": ("R", "cycles from launch to finish or error"),
    "INSN_COUNT": ("R/W", "number of instructions to fetch"),
    "INSN_ADDR": ("R/W", "byte address of the first instruction (16-byte aligned)"),
    "UOP_BASE": ("R/W", "byte offset added to every UOP DRAM address (0 by default)"),
    "INP_BASE": ("R/W", "byte offset added to every INP DRAM address (0 by default)"),
    "WGT_BASE": ("R/W", "byte offset added to every WGT DRAM address (0 by default)"),
    "ACC_BASE": ("R/W", "byte offset added to every ACC and ACC_8BIT DRAM address (0 by "
                        "default)"),
    "OUT_BASE": ("R/W", "byte offset added to every OUT DRAM address (0 by default)"),
    "COUNTERS": ("R", "the performance counters, one 32-bit register each (table below)"),
    "ERR_CODE": ("R", "the §3.5 error code of the run, 0 = none"),
    "ERR_INSN": ("R", "index in the stream of the instruction that raised the error"),
    "CONFIG_ID": ("R", "32-bit hash of the configuration keys; the runtime refuses a mismatch"),
    "VERSION": ("R", "ISA/hardware version, 0x00MMmmpp (major, minor, patch)"),
}


def register_table():
    """The control registers of :data:`avta.isa.registers.REGISTERS`: offset, name, access."""
    _require_meanings(REGISTERS, _REGISTER_MEANINGS, "register", "_REGISTER_MEANINGS")
    rows = []
    for name, offset in sorted(REGISTERS.items(), key=lambda item: item[1]):
        access, meaning = _REGISTER_MEANINGS[name]
        if name == "COUNTERS":
            last = counter_offset(COUNTER_NAMES[-1])
            where = f"0x{offset:02X}–0x{last:02X}"
            name = f"{len(COUNTER_NAMES)} counters"
        else:
            where = f"0x{offset:02X}"
            name = f"`{name}`"
        rows.append((where, name, access, meaning))
    return _table(("offset", "name", "access", "meaning"), rows)


_COUNTER_MEANINGS = {
    "ACC_WR": "cycles in which an ACC row is written",
    "ACC_LD": "bytes loaded into ACC (ACC and ACC_8BIT, counted in DRAM bytes)",
    "INP_LD": "bytes loaded into INP",
    "WGT_LD": "bytes loaded into WGT",
    "UOP_LD": "bytes loaded into UOP",
    "OUT_ST": "bytes stored from OUT",
    "ALU_STEPS": "ALU micro-op steps executed",
    "GEMM_STEPS": "GEMM micro-op steps executed (reset GEMMs included)",
    "IDLE_LD": "cycles the load stage had no instruction",
    "IDLE_ST": "cycles the store stage had no instruction",
    "IDLE_CP": "cycles the compute stage had no instruction",
    "STALL_LD": "cycles the load stage held an instruction waiting on a token",
    "STALL_ST": "cycles the store stage held an instruction waiting on a token",
    "STALL_CP": "cycles the compute stage held an instruction waiting on a token",
}


def counter_table():
    """The performance counters: index, offset, name, kind (exact or cycle count), meaning."""
    _require_meanings(COUNTER_NAMES, _COUNTER_MEANINGS, "counter", "_COUNTER_MEANINGS")
    rows = []
    for i, name in enumerate(COUNTER_NAMES):
        if name in BYTE_COUNTERS:
            kind = "exact (bytes)"
        elif name in STEP_COUNTERS:
            kind = "exact (steps)"
        elif name in CYCLE_COUNTERS:
            kind = "cycles (fsim: estimate)"
        else:
            raise DocTablesError(f"counter {name} is in no class of avta.isa.registers")
        rows.append((i, f"0x{counter_offset(name):02X}", f"`{name}`", kind,
                     _COUNTER_MEANINGS[name]))
    return _table(("i", "offset", "name", "kind", "meaning"), rows)


# -- all regions ----------------------------------------------------------------------------------

def _generators():
    gens = {"config-keys": config_keys_table, "shipped-configs": shipped_configs_table,
            "golden-vectors": golden_table, "registers": register_table,
            "counters": counter_table}
    for name, enum in ENUMS.items():
        gens[f"enum-{name}"] = lambda enum=enum: enum_table(enum)
    for config in LAYOUT_CONFIGS:
        for layout_name in FORMATS:
            gens[f"fields-{config}-{layout_name}"] = (
                lambda config=config, layout_name=layout_name:
                field_table(load_config(config), layout_name))
    return gens


def tables():
    """Every generated region's markdown, by region name."""
    return {name: generate() for name, generate in _generators().items()}


# -- rewriting documents ----------------------------------------------------------------------------

def _update(text, generated, where):
    """``(new text, [(name, changed)])`` of one document: each region replaced by
    ``generated[name]``."""
    lines = text.split("\n")
    out, found, body = [], [], []
    open_name, open_line = None, None
    for number, line in enumerate(lines, 1):
        match = _MARKER.match(line.strip())
        if match is None:
            if open_name is None:
                out.append(line)
            else:
                body.append(line)
            continue
        kind, name = match.groups()
        if kind == "BEGIN":
            if open_name is not None:
                raise DocTablesError(f"{where}:{number}: region {name!r} begins inside region "
                                     f"{open_name!r} (opened on line {open_line})")
            if name not in generated:
                raise DocTablesError(f"{where}:{number}: unknown generated region {name!r} "
                                     f"(known: {', '.join(sorted(generated))})")
            open_name, open_line, body = name, number, []
            out.append(line)
        else:
            if open_name != name:
                raise DocTablesError(f"{where}:{number}: END of region {name!r} without its "
                                     f"BEGIN" + (f" (region {open_name!r} is open)"
                                                 if open_name else ""))
            fresh = generated[name].split("\n")
            found.append((name, body != fresh))
            out.extend(fresh)
            out.append(line)
            open_name = None
    if open_name is not None:
        raise DocTablesError(f"{where}:{open_line}: region {open_name!r} has no END marker")
    return "\n".join(out), found


def _documents(docs_dir):
    return sorted(Path(docs_dir).glob("*.md"))


def _scan(docs_dir):
    """``([(path, old text, new text, [(name, changed)])], tables())`` for every document."""
    generated = tables()
    scanned = []
    for path in _documents(docs_dir):
        text = path.read_text()
        scanned.append((path, text, *_update(text, generated, _shown(path))))
    return scanned, generated


def check(docs_dir=DOCS_DIR):
    """The :class:`Stale` regions of the documents in ``docs_dir``: regions whose text is not
    what the code gives, and regions that no document contains. Empty when all are current."""
    scanned, generated = _scan(docs_dir)
    stale, seen = [], set()
    for path, _, _, found in scanned:
        for name, changed in found:
            seen.add(name)
            if changed:
                stale.append(Stale(path, name, "differs"))
    stale += [Stale(None, name, "missing") for name in sorted(set(generated) - seen)]
    return stale


def rewrite(docs_dir=DOCS_DIR):
    """Rewrite every region of the documents in ``docs_dir`` that is not current; the list of
    ``(path, region name)`` rewritten. Files without a changed region are not written."""
    scanned, _ = _scan(docs_dir)
    rewritten = []
    for path, old, new, found in scanned:
        if new != old:
            path.write_text(new)
        rewritten += [(path, name) for name, changed in found if changed]
    return rewritten


def main(argv=None):
    """``python -m avta.isa.doc_tables [--check] [--docs DIR]``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m avta.isa.doc_tables",
        description="Regenerate the tables of docs/*.md from the code (or, with --check, say "
                    "which are stale).")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 and name each stale region")
    parser.add_argument("--docs", default=str(DOCS_DIR), metavar="DIR",
                        help="documentation folder (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = check(args.docs)
            for item in stale:
                print(f"stale: {item}")
            if stale:
                print(f"{len(stale)} generated region(s) are stale; run "
                      f"`python -m avta.isa.doc_tables` to regenerate them", file=sys.stderr)
                return 1
            print("every generated region is current")
            return 0
        stale = [s for s in check(args.docs) if s.path is None]
        for path, name in rewrite(args.docs):
            print(f"rewrote {_shown(path)}: {name}")
        for item in stale:
            print(f"warning: {item}", file=sys.stderr)
        return 1 if stale else 0
    except DocTablesError as error:
        print(f"doc_tables: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
