"""Scratchpad geometry shared by the units that read and write them (docs/isa.md §1, §3).

The scratchpads themselves are ``amaranth.lib.memory.Memory`` instances created by
:class:`avta.hw.core.core.Core` under the names of :data:`SCRATCHPADS`; the units reach them
through read and write ports whose signatures come from here, so every address width, row width
and write granularity is derived once from the configuration.

Write granularity: a load whose DRAM element is wider than the bus writes a row one beat at a
time, so that row's write port has one enable per bus-width chunk (``granularity`` = bus bits,
or 4× for ACC_8BIT, whose bytes widen to 32-bit lanes). OUT mirrors ACC (docs/isa.md §3) with the
same enables over lanes a quarter as wide.
"""

from amaranth.hdl import signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory, ReadPort, WritePort

__all__ = ["SCRATCHPADS", "Geometry", "geometry", "make_memory", "read_signature",
           "write_signature", "inp_row", "wgt_row", "acc_row", "out_row", "inventory"]

#: The scratchpads, by the names the Core gives their ``Memory`` submodules (``<name>_mem``).
SCRATCHPADS = ("uop", "inp", "wgt", "acc", "out")


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

    def __init__(self, name, row_bits, depth, granularity):
        self.name = name
        self.row_bits = row_bits
        self.depth = depth
        self.addr_bits = depth.bit_length() - 1
        self.granularity = granularity
        self.en_bits = row_bits // granularity if granularity else 1

    def __repr__(self):
        return (f"Geometry({self.name!r}, row_bits={self.row_bits}, depth={self.depth}, "
                f"granularity={self.granularity})")


def _chunked(row_bytes, bus_bytes):
    return bus_bytes * 8 if row_bytes > bus_bytes else None


def geometry(cfg, name):
    """The :class:`Geometry` of scratchpad ``name`` (one of :data:`SCRATCHPADS`)."""
    bus = cfg.axi_data_bytes
    if name == "uop":
        return Geometry(name, cfg.uop_bits, cfg.uop_depth, _chunked(cfg.uop_elem_bytes, bus))
    if name == "inp":
        return Geometry(name, cfg.inp.row_bits, cfg.inp_depth, _chunked(cfg.inp_elem_bytes, bus))
    if name == "wgt":
        return Geometry(name, cfg.wgt.row_bits, cfg.wgt_depth, _chunked(cfg.wgt_elem_bytes, bus))
    if name in ("acc", "out"):
        # ACC rows are written per beat by LOAD ACC (B bytes = B/4 lanes) and by LOAD ACC_8BIT
        # (B int8 lanes = 4B bytes, a multiple); OUT keeps one enable per ACC enable.
        g = _chunked(cfg.acc_elem_bytes, bus)
        if name == "acc":
            return Geometry(name, cfg.acc.row_bits, cfg.acc_depth, g)
        return Geometry(name, cfg.out.row_bits, cfg.out_depth,
                        g * cfg.out_width // cfg.acc_width if g else None)
    raise ValueError(f"unknown scratchpad {name!r}; expected one of {SCRATCHPADS}")


def make_memory(cfg, name):
    """A zero-initialized ``Memory`` for scratchpad ``name`` (docs/isa.md §3: zero after reset)."""
    geo = geometry(cfg, name)
    return Memory(shape=unsigned(geo.row_bits), depth=geo.depth, init=[])


def read_signature(geo):
    """Signature of a synchronous read port of ``geo``; a unit that reads has ``In(...)`` of it."""
    return ReadPort.Signature(addr_width=geo.addr_bits, shape=unsigned(geo.row_bits))


def write_signature(geo):
    """Signature of the write port of ``geo``; a unit that writes has ``In(...)`` of it."""
    return WritePort.Signature(addr_width=geo.addr_bits, shape=unsigned(geo.row_bits),
                               granularity=geo.granularity)


# Row layouts (docs/isa.md §3): INP [b][k] int8, WGT [o][k] int8, ACC [b][o] int32, OUT [b][o] int8.

def inp_row(cfg):
    return data.ArrayLayout(data.ArrayLayout(signed(cfg.inp_width), cfg.block_in), cfg.batch)


def wgt_row(cfg):
    return data.ArrayLayout(data.ArrayLayout(signed(cfg.wgt_width), cfg.block_in), cfg.block_out)


def acc_row(cfg):
    return data.ArrayLayout(data.ArrayLayout(signed(cfg.acc_width), cfg.block_out), cfg.batch)


def out_row(cfg):
    return data.ArrayLayout(data.ArrayLayout(signed(cfg.out_width), cfg.block_out), cfg.batch)


def inventory(cfg):
    """The scratchpads of ``cfg`` as ``{"<name>_mem": (row_bits, depth)}`` (for floorplanning)."""
    return {f"{name}_mem": (geometry(cfg, name).row_bits, geometry(cfg, name).depth)
            for name in SCRATCHPADS}
