"""The memory-macro inventory of a VTA configuration.

Each scratchpad (docs/isa.md §1) is a row width x depth memory, which the RTL builds from banks and
copies (docs/architecture.md, scratchpad memories; :class:`avta.isa.memories.Scratchpad`). It is
cut into legal SRAM macros of the technology: the depth into word ranges (at least the RTL's
banks, each within ``max_words``), each range held once per RTL copy, so ``banks`` macros per
column (word ranges × copies), and ``columns`` macros wide (each ``row_bits / columns`` bits). The row of every scratchpad is made
of *lanes*, the bits that feed or hold one output channel, so a column of macros can be handed to
the part of the datapath that uses it (the ACC-centric tiling of the Intel Labs paper, §IV.B):

=====  =====================================  ============================================
name   lane (bits)                            lanes
=====  =====================================  ============================================
uop    the micro-op                           1
inp    one int8 input element                 batch x block_in (every lane feeds all GEMM
                                              outputs, so INP is never tiled)
wgt    the block_in int8 weights of one        block_out
       output channel
acc    the batch int32 accumulators of one     block_out
       output channel
out    the batch int8 outputs of one channel   block_out
=====  =====================================  ============================================

Columns are the widest power of two that is a legal macro (no wider than a tile's share of the
row, when tiles are asked for). The same inventory serves both floorplan styles, so they compare
the same macros placed differently.
"""

from dataclasses import dataclass

from avta.isa.memories import scratchpads

__all__ = ["MemoryPlan", "MacroSlot", "Inventory", "plan_inventory", "TILED"]

#: Scratchpads split between the ACC-centric tiles; the others are shared by all tiles.
TILED = ("wgt", "acc")


@dataclass(frozen=True)
class MacroSlot:
    """One macro of a scratchpad: which column (bit slice) and bank (word range) it holds."""
    memory: str
    column: int
    bank: int
    words: int
    bits: int

    @property
    def name(self):
        return f"{self.memory}_c{self.column}_b{self.bank}"


@dataclass(frozen=True)
class MemoryPlan:
    """How one scratchpad is cut: ``columns`` x ``banks`` macros of ``words`` x ``bits``, the
    ``banks`` of a column being ``banks / copies`` word ranges, each held ``copies`` times."""
    memory: str
    row_bits: int
    depth: int
    lane_bits: int
    lanes: int
    columns: int
    banks: int
    master: object
    copies: int = 1

    words = property(lambda self: self.depth * self.copies // self.banks)
    bits = property(lambda self: self.row_bits // self.columns)
    count = property(lambda self: self.columns * self.banks)

    @property
    def lanes_per_column(self):
        """Output lanes held by one column of macros (a fraction when a lane spans columns)."""
        return self.bits / self.lane_bits

    def slots(self, columns=None):
        """The macros of ``columns`` (default all), column by column, banks inside."""
        columns = range(self.columns) if columns is None else columns
        return [MacroSlot(self.memory, c, b, self.words, self.bits)
                for c in columns for b in range(self.banks)]


@dataclass(frozen=True)
class Inventory:
    """Every scratchpad's plan, and the number of ACC-centric tiles it supports."""
    plans: dict
    tiles: int

    def __getitem__(self, memory):
        return self.plans[memory]

    @property
    def macro_count(self):
        return sum(p.count for p in self.plans.values())

    def columns_per_tile(self, memory):
        plan = self.plans[memory]
        return plan.columns // self.tiles if memory in TILED else plan.columns

    def table(self):
        """Rows for a report: memory, macro size, columns, banks, count, master."""
        return [{"memory": p.memory, "row_bits": p.row_bits, "depth": p.depth,
                 "words": p.words, "bits": p.bits, "columns": p.columns, "banks": p.banks,
                 "macros": p.count, "master": p.master.name} for p in self.plans.values()]


def _lanes(cfg):
    """``(lane bits, lanes, depth)`` of each scratchpad, a lane being the bits of one output
    channel (the row layout's inner axes) or, for INP, one element."""
    out = {}
    for name, pad in scratchpads(cfg).items():
        axes = dict(pad.row.axes)
        # WGT, ACC, OUT: one lane per output channel; UOP (one word) and INP (every element
        # feeds every output): one lane per row element.
        lanes = axes["o"] if "o" in axes else pad.row.lanes
        out[name] = (pad.row_bits // lanes, lanes, pad.depth)
    return out


def _split(memory, lane_bits, lanes, depth, technology, *, max_bits, cfg):
    row_bits = lane_bits * lanes
    pad = scratchpads(cfg)[memory]
    if pad.bank_rows < technology.min_words:
        raise ValueError(f"{memory}: a bank of {pad.bank_rows} words is shallower than the "
                         f"{technology.min_words}-word minimum macro of {technology.name}; it "
                         f"needs flip-flops, not SRAM")
    banks = pad.banks           # a macro never spans two of the RTL's banks
    while depth // banks > technology.max_words:
        banks *= 2
    words = depth // banks
    bits = 1 << (min(row_bits, max_bits).bit_length() - 1)
    while bits and (row_bits % bits or technology.sram_problem(words, bits)):
        bits //= 2
    if not bits:
        raise ValueError(f"{memory}: no legal macro holds a {words}-word slice of its {row_bits}-"
                         f"bit row in {technology.name}: "
                         f"{technology.sram_problem(words, 1) or 'no width divides the row'}")
    return MemoryPlan(memory, row_bits, depth, lane_bits, lanes, row_bits // bits,
                      banks * pad.copies, technology.sram(words, bits), pad.copies)


def plan_inventory(cfg, technology, *, tiles=None):
    """The :class:`Inventory` of ``cfg``: each scratchpad cut into legal macros.

    ``tiles`` (a power of two dividing block_out) asks for that many ACC-centric tiles; WGT and
    ACC are then cut at least that finely. By default it is the most tiles for which no WGT or
    ACC macro is shared between two tiles.
    """
    lanes = _lanes(cfg)
    natural = {m: _split(m, *lanes[m], technology, max_bits=technology.max_bits, cfg=cfg)
               for m in lanes}
    if tiles is None:
        lanes_per_tile = max(1, *(int(natural[m].lanes_per_column) for m in TILED))
        tiles = cfg.block_out // lanes_per_tile
    if (isinstance(tiles, bool) or not isinstance(tiles, int) or tiles < 1
            or tiles & (tiles - 1) or cfg.block_out % tiles):
        raise ValueError(f"tiles = {tiles!r}: must be a power of two dividing block_out "
                         f"({cfg.block_out})")
    plans = dict(natural)
    for memory in TILED:
        lane_bits, count, depth = lanes[memory]
        share = lane_bits * count // tiles
        plans[memory] = _split(memory, lane_bits, count, depth, technology,
                               max_bits=min(technology.max_bits, share), cfg=cfg)
    return Inventory(plans, tiles)

