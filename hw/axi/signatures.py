"""Flat AXI4 and AXI4-Lite signatures.

Members are flat (``awaddr``, ``awvalid``, …), so a port named ``s_axil`` becomes
``s_axil__awaddr`` in Verilog, which cocotbext-axi matches with ``bus_separator="__"``.
Directions are those of the manager (master); a subordinate port is ``In(...)`` of it, i.e. flipped.
"""

from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

__all__ = ["AxiLiteSignature", "AxiSignature", "Resp", "Burst", "PAGE_BYTES", "id_bits"]


class Resp(enum.IntEnum, shape=2):
    """xRESP encodings (AMBA AXI A3.4.4)."""
    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


class Burst(enum.IntEnum, shape=2):
    """AxBURST encodings (AMBA AXI A3.4.1); the memory engine issues INCR only."""
    FIXED = 0
    INCR = 1
    WRAP = 2


#: A burst must not cross a 4 KiB boundary (AMBA AXI spec, A3.4.1).
PAGE_BYTES = 4096


def id_bits(slots):
    """AXI ID bits for ``slots`` commands in flight with an ID each (a power of two); at least
    one bit, as an AXI port needs."""
    return max(1, exact_log2(slots))


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite, as seen by the manager: 32-bit data unless told otherwise."""

    def __init__(self, *, addr_width=32, data_width=32):
        if data_width not in (32, 64):
            raise ValueError(f"AXI4-Lite data width must be 32 or 64, not {data_width!r}")
        self._addr_width, self._data_width = addr_width, data_width
        super().__init__({
            "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
            "wready": In(1),
            "bresp": In(Resp), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(Resp), "rvalid": In(1), "rready": Out(1),
        })

    addr_width = property(lambda self: self._addr_width)
    data_width = property(lambda self: self._data_width)

    def __eq__(self, other):
        return (isinstance(other, AxiLiteSignature) and other.addr_width == self.addr_width
                and other.data_width == self.data_width)

    def __repr__(self):
        return f"AxiLiteSignature(addr_width={self.addr_width}, data_width={self.data_width})"


class AxiSignature(wiring.Signature):
    """AXI4 (full) as seen by the manager, with the members cocotbext-axi's AxiBus requires."""

    def __init__(self, *, addr_width=32, data_width=64, id_width=4):
        if data_width not in (32, 64, 128, 256, 512, 1024):
            raise ValueError(f"AXI4 data width must be a power of two from 32 to 1024, "
                             f"not {data_width!r}")
        self._addr_width, self._data_width, self._id_width = addr_width, data_width, id_width
        super().__init__({
            "awid": Out(id_width), "awaddr": Out(addr_width), "awlen": Out(8), "awsize": Out(3),
            "awburst": Out(Burst), "awlock": Out(1), "awcache": Out(4), "awprot": Out(3),
            "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bid": In(id_width), "bresp": In(Resp), "bvalid": In(1), "bready": Out(1),
            "arid": Out(id_width), "araddr": Out(addr_width), "arlen": Out(8), "arsize": Out(3),
            "arburst": Out(Burst), "arlock": Out(1), "arcache": Out(4), "arprot": Out(3),
            "arvalid": Out(1), "arready": In(1),
            "rid": In(id_width), "rdata": In(data_width), "rresp": In(Resp), "rlast": In(1),
            "rvalid": In(1), "rready": Out(1),
        })

    addr_width = property(lambda self: self._addr_width)
    data_width = property(lambda self: self._data_width)
    id_width = property(lambda self: self._id_width)

    def __eq__(self, other):
        return (isinstance(other, AxiSignature) and
                (other.addr_width, other.data_width, other.id_width) ==
                (self.addr_width, self.data_width, self.id_width))

    def __repr__(self):
        return (f"AxiSignature(addr_width={self.addr_width}, data_width={self.data_width}, "
                f"id_width={self.id_width})")
