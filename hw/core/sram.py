"""Scratchpad geometry shared by the units that read and write them (docs/isa.md §1, §3).

The scratchpads themselves are :class:`~.banks.BankedScratchpad` submodules of
:class:`avta.hw.core.core.Core` (:func:`scratchpad_ports`), each built from memories of one write
and one read port; the units reach them through logical read and write ports whose signatures
come from here, so every address width, row width and write granularity is derived once from the
configuration.

Write granularity: a load whose DRAM element is wider than the bus writes a row one beat at a
time, so that row's write port has one enable per bus-width chunk (``granularity`` = bus bits,
or 4× for ACC_8BIT, whose bytes widen to 32-bit lanes). OUT mirrors ACC (docs/isa.md §3) with the
same enables over lanes a quarter as wide. The micro-op scratchpad is interleaved over banks
(:mod:`avta.isa.memories`): its write port writes ``write_rows`` consecutive rows, one enable
each, so that a LOAD UOP writes that many micro-ops of a beat in a cycle.
"""

from amaranth.hdl import unsigned
from amaranth.lib.memory import Memory, ReadPort, WritePort

from avta.isa.memories import SCRATCHPADS, scratchpad

__all__ = ["SCRATCHPADS", "Geometry", "geometry", "make_memory", "read_signature",
           "write_signature", "row_layout", "scratchpad_ports"]


class Geometry:
    """Row width, depth and write granularity of one scratchpad.

    Attributes
    ----------
    name : str
    row_bits, depth, addr_bits : int
    granularity : int or None
        Bits per write enable (``None``: one enable for the whole row).
    en_bits : int
        Width of the write port's ``en``.
    """

    def __init__(self, name, row_bits, depth, granularity, write_rows=1):
        if granularity and write_rows > 1:
            raise ValueError(f"{name}: a write of {write_rows} rows writes whole rows")
        self.name = name
        self.row_bits = row_bits
        self.depth = depth
        self.addr_bits = depth.bit_length() - 1
        self.granularity = granularity
        self.write_rows = write_rows
        self.write_bits = row_bits * write_rows
        self.en_bits = row_bits // granularity if granularity else write_rows

    def __repr__(self):
        return (f"Geometry({self.name!r}, row_bits={self.row_bits}, depth={self.depth}, "
                f"granularity={self.granularity}, write_rows={self.write_rows})")


def geometry(cfg, name):
    """The :class:`Geometry` of scratchpad ``name`` (one of :data:`SCRATCHPADS`)."""
    pad = scratchpad(cfg, name)
    bus_bits = cfg.axi_data_bits
    # A row wider than the bus is written one beat at a time. ACC rows are written per beat by
    # LOAD ACC (B bytes = B/4 lanes) and by LOAD ACC_8BIT (B int8 lanes = 4B bytes, a multiple);
    # OUT keeps one enable per ACC enable, over lanes a quarter as wide.
    source = scratchpad(cfg, "acc") if name == "out" else pad
    granularity = bus_bits if source.row_bits > bus_bits else None
    if granularity and name == "out":
        granularity = granularity * pad.row.lane_bits // source.row.lane_bits
    return Geometry(name, pad.row_bits, pad.depth, granularity, pad.write_rows)


def make_memory(cfg, name):
    """A zero-initialized ``Memory`` for scratchpad ``name`` (docs/isa.md §3: zero after reset)."""
    geo = geometry(cfg, name)
    return Memory(shape=unsigned(geo.row_bits), depth=geo.depth, init=[])


def scratchpad_ports(m, cfg):
    """The scratchpads of :class:`~avta.hw.core.core.Core`, added to ``m`` as submodules
    ``<name>_mem`` (:class:`~.banks.BankedScratchpad`), and the ports its units use:
    ``(scratchpads, write_ports, read_ports)``, dicts by name (``alu_acc``, ``alu_out``,
    ``alu_uop``, ``alu_acc_b`` for the ALU's own, ``load_acc`` for the compute stage's loader,
    hw/core/compute.py). The compute stage's formal
    check (formal/blocks/compute.py) builds its scratchpads here too, so it sees the very ports
    and forwarding of the core.

    Every memory has one write and one read port (hw/core/banks.py). The ALU runs beside the
    GEMM on ports of its own: ACC and OUT are banked (the GEMM and the ALU write different
    banks), UOP has a copy for the ALU's micro-op reads, and ACC a copy per bank for the ALU's
    second operand when ``ACC_READ_PORTS`` is 2. ACC reads see the GEMM's and the ALU's writes
    of the same cycle (they forward through them); the loader's they need not see."""
    from .banks import BankedScratchpad
    acc_readers = {"acc": 0, "alu_acc": 0}
    if cfg.acc_read_ports == 2:
        acc_readers["alu_acc_b"] = 1
    plans = {
        "uop": dict(writers=("uop",), readers={"uop": 0, "alu_uop": 1}),
        "inp": dict(writers=("inp",), readers={"inp": 0}),
        "wgt": dict(writers=("wgt",), readers={"wgt": 0}),
        # The compute stage's loader writes ACC on a port of its own, last in priority and not
        # forwarded: a LOAD never runs beside a reader of ACC (hw/core/compute.py).
        "acc": dict(writers=("acc", "alu_acc", "load_acc"), readers=acc_readers,
                    forward=("acc", "alu_acc")),
        "out": dict(writers=("out", "alu_out"), readers={"out": 0}),
    }
    pads, wr, rd = {}, {}, {}
    for name in SCRATCHPADS:
        pads[name] = pad = BankedScratchpad(cfg, name, **plans[name])
        # The copies are avta.isa.memories' fact (the floorplan and area count them there).
        assert pad.copies == scratchpad(cfg, name).copies, (name, pad.copies)
        m.submodules[f"{name}_mem"] = pad
        wr |= {w: getattr(pad, f"wr_{w}") for w in plans[name]["writers"]}
        rd |= {r: getattr(pad, f"rd_{r}") for r in plans[name]["readers"]}
    return pads, wr, rd


def read_signature(geo):
    """Signature of a synchronous read port of ``geo``; a unit that reads has ``In(...)`` of it."""
    return ReadPort.Signature(addr_width=geo.addr_bits, shape=unsigned(geo.row_bits))


def write_signature(geo):
    """Signature of the write port of ``geo``; a unit that writes has ``In(...)`` of it. Where
    one write writes ``write_rows`` consecutive rows (an interleaved scratchpad,
    :mod:`avta.isa.memories`), ``data`` holds them lowest first and enable ``j`` writes row
    ``addr + j`` (modulo the depth)."""
    if geo.write_rows > 1:
        return WritePort.Signature(addr_width=geo.addr_bits, shape=unsigned(geo.write_bits),
                                   granularity=geo.row_bits)
    return WritePort.Signature(addr_width=geo.addr_bits, shape=unsigned(geo.row_bits),
                               granularity=geo.granularity)


def row_layout(cfg, name):
    """The Amaranth layout of a row of scratchpad ``name`` (:mod:`avta.isa.memories`)."""
    return scratchpad(cfg, name).row.layout
