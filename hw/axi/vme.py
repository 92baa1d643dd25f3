"""VME: the memory engine, one AXI4 manager shared by a read engine and a write engine.

The read side keeps several bursts outstanding and takes them back in any order through its
tag buffer (:mod:`.read_engine`); the write side streams bursts with byte strobes
(:mod:`.write_engine`). Both split at 4 KiB. AXI IDs: reads use the tag-buffer slot number,
writes use ID 0 (they complete in order).
"""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, flipped
from amaranth.utils import exact_log2

from .read_engine import ReadEngine, read_beat_layout, read_command_layout
from .signatures import AxiSignature
from .write_engine import WriteEngine, write_beat_layout, write_command_layout

__all__ = ["MemoryEngine"]


class MemoryEngine(wiring.Component):
    """The AXI4 manager of the accelerator.

    Parameters
    ----------
    data_bits : AXI data width (``cfg.axi_data_bits``).
    tag_bits : width of the read clients' tags.
    read_slots : read bursts outstanding at once (power of two; the ID width is its log2).

    Ports
    -----
    rd_cmd, rd_data : see :class:`.read_engine.ReadEngine` (``cmd``, ``data``).
    wr_cmd, wr_data, wr_done : see :class:`.write_engine.WriteEngine` (``cmd``, ``data``, ``done``).
    error : either side saw an error response (error 9 of ISA.md §3.5); ``clear`` resets it.
    idle : nothing in flight on either side.
    m_axi : the AXI4 manager port.
    """

    def __init__(self, *, data_bits, tag_bits, read_slots=8):
        self._data_bits, self._tag_bits, self._read_slots = data_bits, tag_bits, read_slots
        self._id_width = max(1, exact_log2(read_slots))
        super().__init__({
            "rd_cmd": In(stream.Signature(read_command_layout(tag_bits))),
            "rd_data": Out(stream.Signature(read_beat_layout(data_bits, tag_bits))),
            "wr_cmd": In(stream.Signature(write_command_layout())),
            "wr_data": In(stream.Signature(write_beat_layout(data_bits))),
            "wr_done": Out(1),
            "error": Out(1),
            "clear": In(1),
            "idle": Out(1),
            "m_axi": Out(AxiSignature(data_width=data_bits, id_width=self._id_width)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.reader = reader = ReadEngine(data_bits=self._data_bits,
                                                  tag_bits=self._tag_bits,
                                                  slots=self._read_slots)
        m.submodules.writer = writer = WriteEngine(data_bits=self._data_bits,
                                                   id_width=self._id_width)
        wiring.connect(m, reader.cmd, flipped(self.rd_cmd))
        wiring.connect(m, reader.data, flipped(self.rd_data))
        wiring.connect(m, writer.cmd, flipped(self.wr_cmd))
        wiring.connect(m, writer.data, flipped(self.wr_data))
        for name, member in self.m_axi.signature.members.items():
            # AR and R members start with "ar" or "r"; no AW, W or B member does.
            side = reader if name.startswith(("ar", "r")) else writer
            ours, theirs = getattr(self.m_axi, name), getattr(side.m_axi, name)
            if member.flow == wiring.Out:
                m.d.comb += ours.eq(theirs)
            else:
                m.d.comb += theirs.eq(ours)
        m.d.comb += [
            self.wr_done.eq(writer.done),
            self.error.eq(reader.error | writer.error),
            reader.clear.eq(self.clear), writer.clear.eq(self.clear),
            self.idle.eq(reader.idle & writer.idle),
        ]
        return m
