"""Every memory of the machine, written down once (docs/isa.md §1–§3; docs/architecture.md,
control registers).

Two tables, and everything that reads or writes a memory asks them:

* the five **scratchpads** (``uop``, ``inp``, ``wgt``, ``acc``, ``out``): a :class:`Scratchpad`
  is a depth and a :class:`RowLayout`, and the row layout yields the Amaranth layout the RTL
  computes with, the numpy dtype and shape the model and the runtime use, and the lane names the
  trace diff prints;
* the six **memory types** of LOAD and STORE (:class:`~avta.isa.enums.MemType`): a
  :class:`MemoryInfo` says which scratchpad a type reaches, what one DRAM element is (its row
  layout and bytes), which base register offsets its addresses, which byte counter counts it and
  which stage executes it.

A DRAM element is a byte copy of a scratchpad row (docs/isa.md §1), except for ACC_8BIT, whose
element holds one int8 per ACC lane and is sign-extended into the ACC row.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np
from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from .enums import MemType, PadValue, Stage

__all__ = ["DRAM_PAGE_BYTES", "SCRATCHPADS", "BANKS", "INTERLEAVED", "RowLayout", "Scratchpad", "MemoryInfo", "scratchpad", "scratchpads",
           "memory", "memories", "row_layouts", "elem_bytes", "LOADABLE", "BASE_KEYS", "base_alignment", "unaligned_bases", "scratchpad_of", "stage_of",
           "stage_types",
           "writer_stage"]

#: DRAM comes in whole pages of this many bytes (docs/isa.md §3): the RTL reads whole bus beats
#: and AXI bursts never cross a 4 KiB boundary, so a DRAM that ends on a page ends on a beat, and
#: fsim and tsim agree on every access at its very end.
DRAM_PAGE_BYTES = 4096

#: The scratchpads in the order of docs/isa.md §3 (and of their ``Memory`` instances in the RTL).
SCRATCHPADS = ("uop", "inp", "wgt", "acc", "out")

#: Banks of the scratchpads that the GEMM and the detached ALU write at once (docs/architecture.md,
#: memories). A bank is a memory with one write and one read port, so a block RAM or an SRAM
#: macro can be it; the top bits of a row index pick the bank. The compute stage runs a GEMM
#: beside an ALU instruction only on banks the ALU does not use. The micro-op scratchpad is
#: banked too, by the low bits of a row index (:attr:`Config.uop_write_ways
#: <avta.isa.config.Config.uop_write_ways>` banks, *interleaved*): any run of that many
#: consecutive rows lies in different banks, so a LOAD UOP writes them in one cycle.
BANKS = {"acc": 2, "out": 2}
#: The scratchpads banked by the low bits of a row index.
INTERLEAVED = ("uop",)


def _copies(cfg, name):
    # A reader that may read in the same cycle as another reader of the scratchpad gets a copy
    # of its own, which every write also writes (hw/core/sram.py assigns the readers): the
    # ALU's micro-op reads beside the GEMM's, and the ALU's second ACC operand.
    return {"uop": 2, "acc": cfg.acc_read_ports}.get(name, 1)

#: Memory type → (scratchpad, base register key, byte counter, stage that executes it). This is the
#: only place the mapping is written; docs/isa.md §2 (types), §3.1 (stages), docs/architecture.md
#: (base registers, counters).
_ROUTES = {
    MemType.UOP: ("uop", "UOP", "UOP_LD", Stage.COMPUTE),
    MemType.WGT: ("wgt", "WGT", "WGT_LD", Stage.LOAD),
    MemType.INP: ("inp", "INP", "INP_LD", Stage.LOAD),
    MemType.ACC: ("acc", "ACC", "ACC_LD", Stage.COMPUTE),
    MemType.OUT: ("out", "OUT", "OUT_ST", Stage.STORE),
    MemType.ACC_8BIT: ("acc", "ACC", "ACC_LD", Stage.COMPUTE),
}

#: Memory types a LOAD may name (docs/isa.md §3.5: OUT, 6 and 7 are error 3).
LOADABLE = tuple(t for t in MemType if t != MemType.OUT)

#: The base registers' keys, in register-map order (``"UOP"`` names the UOP_BASE register): one
#: per scratchpad a memory type reaches. Hosts pass base values as ``bases={"OUT": …}``.
BASE_KEYS = tuple(dict.fromkeys(route[1] for route in
                                sorted(_ROUTES.values(), key=lambda r: SCRATCHPADS.index(r[0]))))


@dataclass(frozen=True)
class RowLayout:
    """One scratchpad row (or DRAM element) as a little-endian array of integer lanes.

    ``axes`` are ``(letter, size)`` pairs, outermost first: INP ``[b][k]``, WGT ``[o][k]``,
    ACC and OUT ``[b][o]`` (docs/isa.md §3). A micro-op row has no axes: one unsigned word.
    """
    axes: tuple
    lane_bits: int
    signed: bool = True

    # Cached: planners and fsim ask for these sizes millions of times (a frozen dataclass keeps
    # them in its __dict__; equality and hashing still read only the fields).
    @functools.cached_property
    def shape(self):
        """The lane array's shape, outermost axis first (``()`` for a micro-op word)."""
        return tuple(size for _, size in self.axes)

    @functools.cached_property
    def lanes(self):
        return math.prod(self.shape)

    @functools.cached_property
    def row_bits(self):
        return self.lanes * self.lane_bits

    @functools.cached_property
    def row_bytes(self):
        return self.row_bits // 8

    @functools.cached_property
    def dtype(self):
        """The numpy dtype of one lane (little-endian)."""
        return np.dtype(f"<{'i' if self.signed else 'u'}{self.lane_bits // 8}")

    @property
    def lane_names(self):
        """A name per lane in memory order, e.g. ``"b0 k3"`` (``"uop"`` for a micro-op word)."""
        if not self.axes:
            return ["uop"]
        names = [""]
        for letter, size in self.axes:
            names = [f"{n} {letter}{i}".strip() for n in names for i in range(size)]
        return names

    @property
    def layout(self):
        """The Amaranth shape of a row: nested ``ArrayLayout``s of signed lanes, outermost axis
        first (so ``view[b][k]``), or ``unsigned(bits)`` for a micro-op word."""
        shape = signed(self.lane_bits) if self.signed else unsigned(self.lane_bits)
        for _, size in reversed(self.axes):
            shape = data.ArrayLayout(shape, size)
        return shape

    def view(self, raw):
        """Typed lanes ``(n, *shape)`` of ``raw``, an ``(n, row_bytes)`` uint8 array (no copy)."""
        return raw.view(self.dtype).reshape(raw.shape[0], *self.shape)

    def lane_value(self, pad_value):
        """The value every lane of a padding row holds (docs/isa.md §3.1)."""
        pad_value = PadValue(pad_value)
        if pad_value == PadValue.ZERO or not self.signed:
            return 0
        half = 1 << (self.lane_bits - 1)
        return -half if pad_value == PadValue.MIN else half - 1

    def fill(self, value):
        """The bytes of one row whose every lane is ``value`` (wrapped to the lane width)."""
        mask = (1 << self.lane_bits) - 1
        lane = (value & mask).to_bytes(self.lane_bits // 8, "little")
        return lane * self.lanes


@dataclass(frozen=True)
class Scratchpad:
    """One on-chip memory: ``depth`` rows of layout ``row``, built (hw/core/banks.py) from
    ``banks`` memories of ``depth / banks`` rows (a row's bank is its index's top bits, or when
    ``interleaved`` its low bits), each held ``copies`` times (one per reader that may read
    beside another)."""
    name: str
    row: RowLayout
    depth: int
    banks: int = 1
    copies: int = 1
    interleaved: bool = False

    row_bits = property(lambda self: self.row.row_bits)
    row_bytes = property(lambda self: self.row.row_bytes)
    size_bytes = property(lambda self: self.depth * self.row_bytes)

    @property
    def log_depth(self):
        return self.depth.bit_length() - 1

    @property
    def bank_rows(self):
        """Rows of one bank (the whole depth when the scratchpad is not banked)."""
        return self.depth // self.banks

    @property
    def bank_row_bits(self):
        """Bits of a row index within its bank: the index's other bits pick the bank."""
        return self.bank_rows.bit_length() - 1

    @property
    def write_rows(self):
        """Consecutive rows one write may write: the banks of an interleaved scratchpad, else 1."""
        return self.banks if self.interleaved else 1

    def bank_of(self, row):
        """The bank that holds ``row``: its index's top bits (low bits when interleaved)."""
        return row % self.banks if self.interleaved else row // self.bank_rows

    def locate(self, row):
        """``(bank, index within the bank)`` of ``row``."""
        if self.interleaved:
            return row % self.banks, row // self.banks
        return divmod(row, self.bank_rows)


@dataclass(frozen=True)
class MemoryInfo:
    """What a LOAD or STORE of one memory type reaches and moves.

    Attributes
    ----------
    type : MemType
    scratchpad : Scratchpad
        The scratchpad the type's rows live in (ACC_8BIT widens into ACC).
    element : RowLayout
        One element in DRAM; ``elem_bytes`` is its size, the unit ``dram_base`` counts in.
    base : str
        The key of the base register added to its DRAM addresses (``"ACC"``: ACC_BASE).
    counter : str
        The byte counter of its LOADs or STOREs (``"ACC_LD"``).
    stage : Stage
        The stage that executes it.
    """
    type: MemType
    scratchpad: Scratchpad
    element: RowLayout
    base: str
    counter: str
    stage: Stage

    name = property(lambda self: self.type.name)
    elem_bytes = property(lambda self: self.element.row_bytes)
    base_register = property(lambda self: f"{self.base}_BASE", doc="e.g. ``ACC_BASE``")

    def pad_row(self, pad_value):
        """The bytes of a padding row of a LOAD (docs/isa.md §3.1): zero, or every lane of the
        scratchpad row at its type's most negative or positive value. Micro-op padding is always
        zero words."""
        row = self.scratchpad.row
        return row.fill(row.lane_value(pad_value))


# -- construction ------------------------------------------------------------------------------

def row_layouts(cfg):
    """The row layout of every scratchpad (docs/isa.md §3, row layouts), by name. Only the
    element widths, LOG_BATCH, the block sizes and LOG_UOP_WIDTH enter: it can be asked of a
    configuration still being checked."""
    b, k, o = ("b", cfg.batch), ("k", cfg.block_in), ("o", cfg.block_out)
    return {
        "uop": RowLayout((), cfg.uop_bits, signed=False),
        "inp": RowLayout((b, k), cfg.inp_width),
        "wgt": RowLayout((o, k), cfg.wgt_width),
        "acc": RowLayout((b, o), cfg.acc_width),
        "out": RowLayout((b, o), cfg.out_width),
    }


def _depth(cfg, name, row):
    # docs/isa.md §1: depth = 8·2^LOG_X_BUFF_SIZE / row bits; OUT has the ACC depth.
    if name == "out":
        return _depth(cfg, "acc", row_layouts(cfg)["acc"])
    return (8 << getattr(cfg, f"log_{name}_buff_size")) // row.row_bits


@functools.lru_cache(maxsize=None)
def scratchpads(cfg):
    """The five :class:`Scratchpad` of ``cfg``, by name, in :data:`SCRATCHPADS` order."""
    out = {}
    for name, row in row_layouts(cfg).items():
        depth = _depth(cfg, name, row)
        interleaved = name in INTERLEAVED       # the micro-ops, over UOP_WAYS banks
        banks = cfg.uop_write_ways if interleaved else min(BANKS.get(name, 1), depth)
        out[name] = Scratchpad(name, row, depth, banks, _copies(cfg, name), interleaved)
    return out


def scratchpad(cfg, name):
    """The :class:`Scratchpad` called ``name`` (one of :data:`SCRATCHPADS`)."""
    pads = scratchpads(cfg)
    if name not in pads:
        raise KeyError(f"no scratchpad {name!r}; the scratchpads are {', '.join(SCRATCHPADS)}")
    return pads[name]


@functools.lru_cache(maxsize=None)
def memories(cfg):
    """The :class:`MemoryInfo` of every memory type of ``cfg``, by type, in type order."""
    pads = scratchpads(cfg)
    out = {}
    for mtype, (pad, base, counter, stage) in _ROUTES.items():
        row = pads[pad].row
        # docs/isa.md §1: an ACC_8BIT element is one int8 per ACC lane.
        element = RowLayout(row.axes, cfg.out_width) if mtype == MemType.ACC_8BIT else row
        out[mtype] = MemoryInfo(mtype, pads[pad], element, base, counter, stage)
    return out


#: Each memory type by its number (what a decoded instruction's ``memory_type`` holds).
_TYPE_BY_NUMBER = {int(t): t for t in MemType}


def memory(cfg, mtype):
    """The :class:`MemoryInfo` of memory type ``mtype`` (a :class:`MemType` or its number)."""
    try:
        # MemType(...) is slow (Amaranth's enum metaclass), and planners and fsim ask often.
        key = mtype if type(mtype) is MemType else _TYPE_BY_NUMBER.get(mtype)
        return memories(cfg)[MemType(mtype) if key is None else key]
    except (ValueError, TypeError):
        raise ValueError(f"memory type {mtype!r} does not exist; the types are "
                         f"{', '.join(f'{t.name} {t.value}' for t in MemType)}") from None


def elem_bytes(cfg, mtype):
    """Bytes of one DRAM element of memory type ``mtype`` on ``cfg``."""
    return memory(cfg, mtype).elem_bytes


def _route(mtype):
    # MemType(...) is slow (see memory()); a decoded instruction holds a plain number.
    key = mtype if type(mtype) is MemType else _TYPE_BY_NUMBER.get(mtype)
    return _ROUTES[MemType(mtype) if key is None else key]


def scratchpad_of(mtype):
    """The name of the scratchpad a LOAD or STORE of memory type ``mtype`` reaches (no
    configuration needed)."""
    return _route(mtype)[0]


def stage_of(mtype):
    """The stage that executes a LOAD or STORE of memory type ``mtype`` (no configuration
    needed)."""
    return _route(mtype)[3]


def base_alignment(cfg, key):
    """The alignment in bytes the base register ``key`` (``"ACC"``: ACC_BASE) must have
    (docs/isa.md §3.5, error 11): min(element bytes, bus bytes) of each memory type that uses it,
    the strictest of them (ACC_BASE serves ACC and ACC_8BIT)."""
    return max(min(info.elem_bytes, cfg.axi_data_bytes)
               for info in memories(cfg).values() if info.base == key)


def unaligned_bases(cfg, bases):
    """The keys of ``bases`` (key → value) whose value breaks :func:`base_alignment`."""
    return [key for key, value in bases.items() if value % base_alignment(cfg, key)]


def stage_types(stage):
    """The memory types whose LOADs ``stage`` executes (docs/isa.md §3.1)."""
    return tuple(t for t in LOADABLE if _ROUTES[t][3] == Stage(stage))


def writer_stage(name):
    """The stage whose LOADs (and, for ACC, GEMM and ALU) write scratchpad ``name``; OUT is
    written only as ACC's mirror (docs/isa.md §3), by the compute stage."""
    stages = {_ROUTES[t][3] for t in LOADABLE if _ROUTES[t][0] == name}
    return stages.pop() if stages else Stage.COMPUTE
