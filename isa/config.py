"""The configuration object: one hardware instance, and every width derived from it (docs/isa.md §1).

A :class:`Config` is frozen and checked when it is built: an inconsistent configuration raises
:class:`ConfigError` with one message listing every violation (the key, the value and the rule;
for instruction formats that overflow, the excess and the smallest factor restrictions that fix
them). Everything else in the tree asks the configuration for widths and depths; no width is
written down a second time.
"""

import dataclasses
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from avta.errors import UserError, read_input

from . import formats
from .enums import MemType
from .memories import SCRATCHPADS, Scratchpad, memory, row_layouts, scratchpads

__all__ = ["Config", "ConfigError", "KEYS", "INSN_QUEUE_DEPTH", "Scratchpad", "load_config",
           "shipped_configs", "fit_formats", "derived_gemm_stages",
           "MAX_DERIVED_UOP_WAYS"]

#: Every configuration key, its default, and a description of the values it allows.
KEYS = {
    "LOG_INP_WIDTH": (3, "3 (int8 inputs)"),
    "LOG_WGT_WIDTH": (3, "3 (int8 weights)"),
    "LOG_ACC_WIDTH": (5, "5 (int32 accumulators)"),
    "LOG_BATCH": (0, "0..3"),
    "LOG_BLOCK_IN": (4, "1..7"),
    "LOG_BLOCK_OUT": (4, "1..7"),
    "LOG_UOP_BUFF_SIZE": (15, "a non-negative integer giving a depth in 2..2^16"),
    "LOG_INP_BUFF_SIZE": (15, "a non-negative integer giving a depth in 2..2^16"),
    "LOG_WGT_BUFF_SIZE": (18, "a non-negative integer giving a depth in 2..2^16"),
    "LOG_ACC_BUFF_SIZE": (17, "a non-negative integer giving a depth in 2..2^16"),
    "LOG_UOP_WIDTH": (5, "5 or 6"),
    "AXI_DATA_BITS": (64, "64, 128, 256 or 512"),
    "LOG_INP_FACTOR_RESTRICT": (0, ">= 0 and < the INP index width"),
    "LOG_WGT_FACTOR_RESTRICT": (0, ">= 0 and < the WGT index width"),
    "LOG_ACC_FACTOR_RESTRICT": (0, ">= 0 and < the ACC index width"),
    "ACC_READ_PORTS": (1, "1 or 2"),
    "TOKEN_BITS": (8, "2..16"),
    "ALU_SCALE": (0, "0, 1 or 2"),
    # Optional: absent (None) means derived, and an absent key is left out of to_dict() (so of
    # CONFIG_ID); it changes the GEMM's latency, never the ISA.
    "GEMM_PIPE_STAGES": (None, "0..LOG_BLOCK_IN; absent: derived from BLOCK_IN"),
    # Optional likewise: it changes how fast a LOAD UOP writes, never the ISA.
    "UOP_WAYS": (None, "1, 2, 4, 8 or 16, at most the micro-ops a bus beat holds; absent: "
                       "derived from the bus"),
}

#: The keys that may be absent (their default is None).
_OPTIONAL = {key for key, (default, _) in KEYS.items() if default is None}

#: Keys added after configurations were first identified: at their default value they are left
#: out of to_dict() (so of CONFIG_ID), which keeps every older configuration's identity.
_OMITTED_AT_DEFAULT = {"ALU_SCALE"}


#: SCL's multiplier width in bits by the value of ``ALU_SCALE`` (docs/isa.md §3.4): none, 16
#: (a Q15 multiplier) or 24 (Q23, which holds a float32 scale's 24-bit significand to within
#: half a unit of its last place).
SCALE_BITS = {0: 0, 1: 16, 2: 24}


#: Micro-op memories a derived ``UOP_WAYS`` interleaves at most: four write a 512-bit beat's
#: sixteen 32-bit micro-ops in four cycles, which took most of what a LOAD UOP cost the layers
#: of ResNet-18 on ``huge`` (docs/architecture.md, memories), in memories a quarter as deep.
MAX_DERIVED_UOP_WAYS = 4


def derived_gemm_stages(log_block_in):
    """The GEMM's dot-product pipeline registers when ``GEMM_PIPE_STAGES`` is absent: one after
    the multipliers and one per two adder levels beyond the first two, ``ceil(LOG_BLOCK_IN /
    2)`` (1 at BLOCK_IN 4, 2 at 16, 3 at 64), which keeps the slowest stage about as long as
    an 8×8 multiplier or two adder levels (docs/architecture.md, GEMM pipeline, measured)."""
    return -(-log_block_in // 2)

_ALLOWED = {
    "LOG_INP_WIDTH": {3}, "LOG_WGT_WIDTH": {3}, "LOG_ACC_WIDTH": {5},
    "LOG_BATCH": set(range(0, 4)), "LOG_BLOCK_IN": set(range(1, 8)),
    "LOG_BLOCK_OUT": set(range(1, 8)), "LOG_UOP_WIDTH": {5, 6},
    "AXI_DATA_BITS": {64, 128, 256, 512}, "ACC_READ_PORTS": {1, 2},
    "TOKEN_BITS": set(range(2, 17)), "ALU_SCALE": {0, 1, 2}, "UOP_WAYS": {1, 2, 4, 8, 16},
}

#: Keys of upstream's and the Intel fork's ``vta_config.json`` that describe software or the
#: board rather than the accelerator; they are accepted and ignored.
_IGNORED_KEYS = {
    "TARGET", "HW_VER", "ENABLE_INSTRUCTION_CLP", "ENABLE_RUNTIME_GREEDY_UOP_LOADS",
    "ENABLE_RUNTIME_VALUE_BASED_UOP_CONSOLIDATION", "ENABLE_VTHREAD", "VTHREAD_NAME",
}

#: Entries of each stage's instruction queue in the RTL: the contract's INSN_QUEUE_DEPTH
#: (docs/isa.md §1), fixed in this tree until it becomes a configuration key.
INSN_QUEUE_DEPTH = 512

_MAX_DEPTH = 1 << formats.SRAM_ADDR_BITS     # sram_base is 16 bits wide
_MIN_DEPTH = 2
_MAX_LOG_BUFF_SIZE = 30
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: The keys a scratchpad row's width depends on (avta.isa.memories.row_layouts).
_SHAPE_KEYS = {"LOG_INP_WIDTH", "LOG_WGT_WIDTH", "LOG_ACC_WIDTH", "LOG_BATCH", "LOG_BLOCK_IN",
               "LOG_BLOCK_OUT", "LOG_UOP_WIDTH"}

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


class ConfigError(UserError, ValueError):
    """A configuration that cannot be built. ``violations`` lists one message per broken rule;
    ``fix``, when the instruction or micro-op formats are the only problem and can be made to fit,
    the keys and values that do it (what the messages suggest; :func:`fit_formats` applies it)."""

    def __init__(self, violations, *, source=None, fix=None):
        self.violations = list(violations)
        self.source = source
        self.fix = dict(fix or {})
        where = f" in {source}" if source else ""
        lines = [f"invalid VTA configuration{where} ({len(self.violations)} problem"
                 f"{'s' if len(self.violations) != 1 else ''}):"]
        lines += [f"  - {v}" for v in self.violations]
        super().__init__("\n".join(lines))


def _field(key):
    return dataclasses.field(default=KEYS[key][0])


@dataclass(frozen=True)
class Config:
    """A VTA hardware configuration (docs/isa.md §1). Keys are the upper-case YAML keys lower-cased.

    Build one with keyword arguments, :meth:`from_dict` or :func:`load_config`; all three check
    it. ``name`` labels it (for ``build/<name>/``) and does not enter :attr:`config_id`.
    """
    name: str = "custom"
    log_inp_width: int = _field("LOG_INP_WIDTH")
    log_wgt_width: int = _field("LOG_WGT_WIDTH")
    log_acc_width: int = _field("LOG_ACC_WIDTH")
    log_batch: int = _field("LOG_BATCH")
    log_block_in: int = _field("LOG_BLOCK_IN")
    log_block_out: int = _field("LOG_BLOCK_OUT")
    log_uop_buff_size: int = _field("LOG_UOP_BUFF_SIZE")
    log_inp_buff_size: int = _field("LOG_INP_BUFF_SIZE")
    log_wgt_buff_size: int = _field("LOG_WGT_BUFF_SIZE")
    log_acc_buff_size: int = _field("LOG_ACC_BUFF_SIZE")
    log_uop_width: int = _field("LOG_UOP_WIDTH")
    axi_data_bits: int = _field("AXI_DATA_BITS")
    log_inp_factor_restrict: int = _field("LOG_INP_FACTOR_RESTRICT")
    log_wgt_factor_restrict: int = _field("LOG_WGT_FACTOR_RESTRICT")
    log_acc_factor_restrict: int = _field("LOG_ACC_FACTOR_RESTRICT")
    acc_read_ports: int = _field("ACC_READ_PORTS")
    token_bits: int = _field("TOKEN_BITS")
    alu_scale: int = _field("ALU_SCALE")
    gemm_pipe_stages: int | None = _field("GEMM_PIPE_STAGES")
    uop_ways: int | None = _field("UOP_WAYS")

    def __hash__(self):
        # A configuration keys the caches of every derived quantity (scratchpads, memories,
        # codecs, plans), looked up millions of times while planning a network: its fields'
        # hash is computed once. It is left out of pickles, since a str's hash differs
        # between processes.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def __post_init__(self):
        fix = {}
        violations = _check(self, fix)
        if violations:
            raise ConfigError(violations, source=self.name if self.name != "custom" else None,
                              fix=fix)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, values, *, name="custom", source=None):
        """Build from a mapping of upper-case keys (YAML or upstream ``vta_config.json``)."""
        values = dict(values)
        violations = []
        name = values.pop("name", name)
        values.pop("description", None)
        if "LOG_BLOCK" in values:
            log_block = values.pop("LOG_BLOCK")
            for key in ("LOG_BLOCK_IN", "LOG_BLOCK_OUT"):
                if key in values and values[key] != log_block:
                    violations.append(f"LOG_BLOCK = {log_block!r} conflicts with {key} = "
                                      f"{values[key]!r}: give LOG_BLOCK or both block sizes")
                values.setdefault(key, log_block)
        kwargs = {}
        for key, value in values.items():
            if key in _IGNORED_KEYS:
                continue
            if key not in KEYS:
                violations.append(f"{key}: unknown key (known keys: {', '.join(KEYS)})")
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                violations.append(f"{key} = {value!r}: must be an integer ({KEYS[key][1]})")
                continue
            kwargs[key.lower()] = value
        fix = {}
        try:
            config = cls(name=str(name), **kwargs)
        except ConfigError as error:
            fix = error.fix if not violations else {}
            violations += error.violations
        if violations:
            raise ConfigError(violations, source=source or (name if name != "custom" else None),
                              fix=fix)
        return config

    def replace(self, **changes):
        """A checked copy with some keys changed (lower-case names)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        """The configuration keys (upper case) and their values, without derived quantities; an
        optional key that is absent, and a key of :data:`_OMITTED_AT_DEFAULT` at its default,
        are left out."""
        values = {key: getattr(self, key.lower()) for key in KEYS}
        return {key: value for key, value in values.items()
                if not (value is None and key in _OPTIONAL)
                and not (key in _OMITTED_AT_DEFAULT and value == KEYS[key][0])}

    # -- shape ----------------------------------------------------------------------------------

    batch = property(lambda self: 1 << self.log_batch)
    block_in = property(lambda self: 1 << self.log_block_in)
    block_out = property(lambda self: 1 << self.log_block_out)
    inp_width = property(lambda self: 1 << self.log_inp_width, doc="bits of an input element")
    wgt_width = property(lambda self: 1 << self.log_wgt_width, doc="bits of a weight element")
    acc_width = property(lambda self: 1 << self.log_acc_width, doc="bits of an accumulator element")
    out_width = property(lambda self: 1 << self.log_inp_width, doc="bits of an output element")
    uop_bits = property(lambda self: 1 << self.log_uop_width, doc="bits of a micro-op")

    @property
    def gemm_stages(self):
        """Pipeline registers the GEMM's dot products add: ``GEMM_PIPE_STAGES``, or when absent
        :func:`derived_gemm_stages`. Each adds a cycle to a GEMM instruction
        (:func:`avta.isa.costs.gemm_fill`)."""
        if self.gemm_pipe_stages is not None:
            return self.gemm_pipe_stages
        return derived_gemm_stages(self.log_block_in)

    @property
    def uop_write_ways(self):
        """Memories the micro-op scratchpad is interleaved over (row ``r`` in memory ``r mod
        ways``), so that a LOAD UOP writes this many micro-ops a cycle: ``UOP_WAYS``, or when
        absent the micro-ops a bus beat holds, at most :data:`MAX_DERIVED_UOP_WAYS`."""
        if self.uop_ways is not None:
            return self.uop_ways
        depth = (8 << self.log_uop_buff_size) // self.uop_bits
        return min(self.uops_per_beat, MAX_DERIVED_UOP_WAYS, max(1, depth // 2))

    @property
    def uops_per_beat(self):
        """Micro-ops one bus beat holds (1 when a micro-op is a beat wide): the most
        ``UOP_WAYS`` may be."""
        return max(1, self.axi_data_bits // self.uop_bits)

    @property
    def scale_bits(self):
        """W of docs/isa.md §3.4: the width of SCL's multiplier (0 without SCL)."""
        return SCALE_BITS[self.alu_scale]

    @property
    def scale_fraction(self):
        """The fraction bits of SCL's multiplier from an ACC row, W − 1 (0 without SCL)."""
        return max(self.scale_bits - 1, 0)

    @property
    def shape_name(self):
        """The notation of docs/isa.md §1, e.g. ``1x16x16 15/15/18/17``."""
        return (f"{self.batch}x{self.block_in}x{self.block_out} {self.log_uop_buff_size}/"
                f"{self.log_inp_buff_size}/{self.log_wgt_buff_size}/{self.log_acc_buff_size}")

    # -- tensors and scratchpads ----------------------------------------------------------------

    inp_tensor_bits = property(lambda self: self.inp.row_bits)
    wgt_tensor_bits = property(lambda self: self.wgt.row_bits)
    acc_tensor_bits = property(lambda self: self.acc.row_bits)
    out_tensor_bits = property(lambda self: self.out.row_bits)

    uop = property(lambda self: scratchpads(self)["uop"])
    inp = property(lambda self: scratchpads(self)["inp"])
    wgt = property(lambda self: scratchpads(self)["wgt"])
    acc = property(lambda self: scratchpads(self)["acc"])
    out = property(lambda self: scratchpads(self)["out"],
                   doc="OUT has the ACC depth: it mirrors the low byte of every ACC lane")

    @property
    def scratchpads(self):
        """The five :class:`~avta.isa.memories.Scratchpad` of docs/isa.md §3, in order."""
        return tuple(scratchpads(self).values())

    uop_depth = property(lambda self: self.uop.depth)
    inp_depth = property(lambda self: self.inp.depth)
    wgt_depth = property(lambda self: self.wgt.depth)
    acc_depth = property(lambda self: self.acc.depth)
    out_depth = property(lambda self: self.out.depth)
    log_uop_depth = property(lambda self: self.uop.log_depth)
    log_inp_depth = property(lambda self: self.inp.log_depth)
    log_wgt_depth = property(lambda self: self.wgt.log_depth)
    log_acc_depth = property(lambda self: self.acc.log_depth)
    log_out_depth = property(lambda self: self.out.log_depth)

    # -- DRAM element sizes (docs/isa.md §1: a DRAM element is a byte copy of the SRAM row) ----------

    uop_elem_bytes = property(lambda self: memory(self, MemType.UOP).elem_bytes)
    inp_elem_bytes = property(lambda self: memory(self, MemType.INP).elem_bytes)
    wgt_elem_bytes = property(lambda self: memory(self, MemType.WGT).elem_bytes)
    acc_elem_bytes = property(lambda self: memory(self, MemType.ACC).elem_bytes)
    out_elem_bytes = property(lambda self: memory(self, MemType.OUT).elem_bytes)
    acc8_elem_bytes = property(lambda self: memory(self, MemType.ACC_8BIT).elem_bytes,
                               doc="an ACC_8BIT element: one int8 per ACC lane")

    # -- instruction fields ---------------------------------------------------------------------

    acc_factor_bits = property(lambda self: formats.factor_bits(self)[0],
                               doc="A of docs/isa.md §2: width of the dst (and ALU src) factor fields")
    inp_factor_bits = property(lambda self: formats.factor_bits(self)[1],
                               doc="I of docs/isa.md §2: width of the GEMM src factor fields")
    wgt_factor_bits = property(lambda self: formats.factor_bits(self)[2],
                               doc="W of docs/isa.md §2: width of the GEMM wgt factor fields")
    uop_dst_bits = property(lambda self: dict(formats.uop_fields(self))["dst_idx"])
    uop_src_bits = property(lambda self: dict(formats.uop_fields(self))["src_idx"])
    uop_wgt_bits = property(lambda self: dict(formats.uop_fields(self))["wgt_idx"])

    # -- bus ------------------------------------------------------------------------------------

    axi_data_bytes = property(lambda self: self.axi_data_bits // 8)

    # -- identity -------------------------------------------------------------------------------

    @property
    def config_id(self):
        """32-bit hash of the configuration keys (CONFIG_ID register); stable across runs."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")

    def derived(self):
        """Every derived quantity of docs/isa.md §1, by name, for printing and for the JSON dump."""
        out = {"name": self.name, "shape": self.shape_name, "config_id": f"0x{self.config_id:08x}",
               "batch": self.batch, "block_in": self.block_in, "block_out": self.block_out,
               "uop_bits": self.uop_bits, "axi_data_bits": self.axi_data_bits,
               "gemm_stages": self.gemm_stages, "uop_ways": self.uop_write_ways}
        for pad in self.scratchpads:
            out[pad.name] = {"row_bits": pad.row_bits, "row_bytes": pad.row_bytes,
                             "depth": pad.depth, "log_depth": pad.log_depth,
                             "size_bytes": pad.size_bytes}
        out["acc8_elem_bytes"] = self.acc8_elem_bytes
        out["factor_bits"] = {"inp": self.inp_factor_bits, "wgt": self.wgt_factor_bits,
                              "acc": self.acc_factor_bits}
        out["uop_fields"] = {"dst_idx": self.uop_dst_bits, "src_idx": self.uop_src_bits,
                             "wgt_idx": self.uop_wgt_bits}
        return out

    def to_json(self):
        """The resolved configuration: keys and derived quantities, as ``avta gen`` writes it."""
        return json.dumps({"config": self.to_dict(), "derived": self.derived()}, indent=2)


# -- checking ----------------------------------------------------------------------------------

def _check(cfg, fix):
    """The violated rules of ``cfg``; ``fix`` (a dict) receives the keys that would make its
    formats fit when those are the only problem."""
    violations = []
    if not isinstance(cfg.name, str) or not _NAME.fullmatch(cfg.name):
        # build/<name>/ and cache folders are made from it: it must not climb out of them.
        violations.append(f"name = {cfg.name!r}: must be a plain name (letters, digits, '_', "
                          f"'-' and '.', not starting with '.' or '-')")
    bad = set()
    for key in KEYS:
        value = getattr(cfg, key.lower())
        if value is None and key in _OPTIONAL:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            violations.append(f"{key} = {value!r}: must be an integer ({KEYS[key][1]})")
            bad.add(key)
        elif key in _ALLOWED and value not in _ALLOWED[key]:
            violations.append(f"{key} = {value}: must be {KEYS[key][1]}")
            bad.add(key)
        elif value < 0:
            violations.append(f"{key} = {value}: must be {KEYS[key][1]}")
            bad.add(key)
        elif key.endswith("_BUFF_SIZE") and value > _MAX_LOG_BUFF_SIZE:
            # 2^16 rows of the widest row (a 128x128 int8 WGT row, 2^14 bytes) is 2^30 bytes.
            violations.append(f"{key} = {value}: must be at most {_MAX_LOG_BUFF_SIZE} (no row "
                              f"is wide enough for a scratchpad of 2^{value} bytes to have at "
                              f"most {_MAX_DEPTH} rows)")
            bad.add(key)
    # Every rule whose keys are sane is checked, so one message lists every violation; a rule
    # that depends on a broken key is skipped (its result would mean nothing).
    if bad & _SHAPE_KEYS:
        return violations       # no row width can be computed
    rows = row_layouts(cfg)
    log_depths = {}
    for name in (p for p in SCRATCHPADS if p != "out"):     # OUT has ACC's depth
        key = f"LOG_{name.upper()}_BUFF_SIZE"
        if key in bad:
            continue
        row_bits = rows[name].row_bits
        exact = (8 << getattr(cfg, key.lower())) / row_bits
        if _MIN_DEPTH <= exact <= _MAX_DEPTH:
            log_depths[name] = int(exact).bit_length() - 1
            continue
        bad.add(key)
        shown = f"{exact:g}" if exact < 1 else str(int(exact))
        violations.append(
            f"{key} = {getattr(cfg, key.lower())}: the {name.upper()} scratchpad depth comes "
            f"out as {shown} rows of {row_bits} bits; it must be in {_MIN_DEPTH}..{_MAX_DEPTH} "
            f"(sram_base is {formats.SRAM_ADDR_BITS} bits)")
    for name in ("inp", "wgt", "acc"):
        key = f"LOG_{name.upper()}_FACTOR_RESTRICT"
        value = getattr(cfg, key.lower())
        if key not in bad and name in log_depths and value >= log_depths[name]:
            bad.add(key)
            violations.append(f"{key} = {value}: must be < the index width {log_depths[name]} "
                              f"(a factor field needs at least one bit)")
    stages = cfg.gemm_pipe_stages
    if stages is not None and "GEMM_PIPE_STAGES" not in bad and "LOG_BLOCK_IN" not in bad \
            and stages > cfg.log_block_in:
        violations.append(f"GEMM_PIPE_STAGES = {stages}: must be at most LOG_BLOCK_IN = "
                          f"{cfg.log_block_in} (one register after the multipliers and one "
                          f"between adder levels at most); leave it out to derive it")
    ways = cfg.uop_ways
    if ways is not None and not bad & {"UOP_WAYS", "AXI_DATA_BITS", "LOG_UOP_WIDTH"}:
        per_beat = cfg.uops_per_beat
        if ways > per_beat:
            violations.append(f"UOP_WAYS = {ways}: must be at most {per_beat}, the "
                              f"{cfg.uop_bits}-bit micro-ops a {cfg.axi_data_bits}-bit beat "
                              f"holds; leave it out to derive it")
        elif "uop" in log_depths and ways > 1 << log_depths["uop"] - 1:
            violations.append(f"UOP_WAYS = {ways}: must be at most half the micro-op depth "
                              f"({1 << log_depths['uop']}): each memory holds two rows or more")
    if violations:
        return violations       # the formats need every width

    violations += _check_formats(cfg, fix)
    violations += _check_uop(cfg, fix)
    return violations


def _check_formats(cfg, fix):
    placements = formats.instruction_formats(cfg)
    overflowing = {name: p for name, p in placements.items() if p.overflow}
    if not overflowing:
        return []
    violations = [f"the {name} format needs {p.end} bits: word 1 overflows by {p.overflow} bits"
                  for name, p in overflowing.items()]
    restrictions = _smallest_restrictions(cfg)
    if restrictions is None:
        violations.append(
            f"no *_FACTOR_RESTRICT values make every format fit, because the loop fields "
            f"(uop_bgn/uop_end are {cfg.log_uop_depth}/{cfg.log_uop_depth + 1} bits) leave too "
            f"little room: use a smaller micro-op buffer (LOG_UOP_BUFF_SIZE < "
            f"{cfg.log_uop_buff_size})")
    else:
        r_inp, r_wgt, r_acc = restrictions
        violations.append(
            f"the smallest restrictions that fit every format are LOG_INP_FACTOR_RESTRICT: "
            f"{r_inp}, LOG_WGT_FACTOR_RESTRICT: {r_wgt}, LOG_ACC_FACTOR_RESTRICT: {r_acc}")
        fix.update(LOG_INP_FACTOR_RESTRICT=r_inp, LOG_WGT_FACTOR_RESTRICT=r_wgt,
                   LOG_ACC_FACTOR_RESTRICT=r_acc)
    return violations


def _smallest_restrictions(cfg):
    """The (inp, wgt, acc) restrictions with the least total that make every format fit."""
    ranges = [range(cfg.log_inp_depth), range(cfg.log_wgt_depth), range(cfg.log_acc_depth)]
    best = None
    for combo in itertools.product(*ranges):
        if best is not None and sum(combo) >= sum(best):
            continue
        if not any(p.overflow for p in formats.instruction_formats(cfg, combo).values()):
            best = combo
    return best


def _check_uop(cfg, fix):
    placement = formats.place(formats.uop_fields(cfg), unit=formats.UOP_UNIT, total=cfg.uop_bits)
    if not placement.overflow:
        return []
    message = (f"LOG_UOP_WIDTH = {cfg.log_uop_width}: the micro-op fields (dst {cfg.uop_dst_bits}, "
               f"src {cfg.uop_src_bits}, wgt {cfg.uop_wgt_bits} bits) need {placement.end} bits, "
               f"{placement.overflow} more than the {cfg.uop_bits}-bit micro-op")
    wider = formats.place(formats.uop_fields(cfg), unit=formats.UOP_UNIT, total=64)
    if cfg.log_uop_width == 5 and not wider.overflow:
        message += ": use LOG_UOP_WIDTH: 6"
        fix["LOG_UOP_WIDTH"] = 6
    else:
        message += ": use smaller scratchpads"
    return [message]


def fit_formats(values, *, name="custom"):
    """``(Config, changes)``: the configuration of ``values`` (as :meth:`Config.from_dict` takes
    them) or, when only its instruction or micro-op formats do not fit, the configuration with the
    changes its error suggests (the smallest ``*_FACTOR_RESTRICT`` values, 64-bit micro-ops),
    which ``changes`` lists. Raises the :class:`ConfigError` when nothing fits."""
    changes = {}
    for _ in range(3):          # 64-bit micro-ops change the formats: at most three steps
        try:
            return Config.from_dict(dict(values) | changes, name=name), changes
        except ConfigError as error:
            fix = {k: v for k, v in error.fix.items()
                   if values.get(k, KEYS[k][0]) != v or k in changes}
            if not fix or all(changes.get(k) == v for k, v in fix.items()):
                raise
            changes |= fix
    return Config.from_dict(dict(values) | changes, name=name), changes


# -- files -------------------------------------------------------------------------------------

def shipped_configs():
    """Names of the configurations shipped in ``configs/``."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))


def _unique(pairs):
    """A mapping of ``(key, value)`` pairs; a key given twice is a :class:`ConfigError` (the
    second would silently win)."""
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ConfigError([f"{key} is given twice; keep one"])
        seen[key] = value
    return seen


def load_yaml_unique(text):
    """``text`` parsed as YAML (safe types only) where a key given twice in one mapping is a
    :class:`ConfigError` instead of the last one winning; configurations and network files
    read YAML through it."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            return _unique((self.construct_object(k, deep=deep),
                            self.construct_object(v, deep=deep)) for k, v in node.value)

    return yaml.load(text, Loader=UniqueKeyLoader)


def _parse(text, *, json_syntax):
    """The mapping of a YAML or JSON configuration; a key given twice is an error."""
    if json_syntax:
        return json.loads(text, object_pairs_hook=_unique)
    return load_yaml_unique(text)


def load_config(spec="default"):
    """Load a configuration by shipped name (``default``, ``tiny``, …) or by YAML/JSON path.

    A ``Config`` passes through unchanged.
    """
    if isinstance(spec, Config):
        return spec
    path = Path(spec)
    if not path.suffix and not path.is_file():
        candidate = CONFIG_DIR / f"{spec}.yaml"
        if candidate.exists():          # a folder named like a shipped configuration is not one
            path = candidate
        elif not path.exists():
            raise ConfigError([f"no shipped configuration named {spec!r} (shipped: "
                               f"{', '.join(shipped_configs())}); give a name or a path"])
    try:
        text = read_input(path, "configuration file")
    except UserError as error:
        raise ConfigError([str(error)]) from None
    try:
        values = _parse(text, json_syntax=path.suffix == ".json")
    except ConfigError as error:
        raise ConfigError(error.violations, source=str(path)) from None
    except Exception as error:
        raise ConfigError([f"cannot parse {path}: {error}"]) from None
    if values is None:
        raise ConfigError([f"{path} is empty: give at least one key (e.g. LOG_BLOCK_IN: 4), "
                           f"or use the shipped configuration 'default'"])
    if not isinstance(values, dict):
        raise ConfigError([f"{path}: the top level must be a mapping of keys to values, "
                           f"not {type(values).__name__}"])
    return Config.from_dict(values, name=values.get("name", path.stem), source=str(path))
