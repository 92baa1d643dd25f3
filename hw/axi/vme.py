"""VME: the memory engine, one AXI4 manager for every memory client of the core.

Read clients (fetch, loads, …) share one :class:`.read_engine.ReadEngine` through a round-robin
:class:`.read_arbiter.ReadArbiter`, their commands and their beats each one cycle later through a
:class:`.stream_register.StreamRegister`; the write client (the store stage) has the
:class:`.write_engine.WriteEngine`. Both split bursts at 4 KiB; reads keep several commands in
flight and complete out of order across commands (AXI IDs are tag-buffer slots); writes use ID 0.
"""

from amaranth import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, flipped

from ..mem_client import ReadClientSignature, WriteClientSignature
from .stream_register import StreamRegister
from .read_arbiter import ReadArbiter, shared_tag_layout
from .read_engine import ReadEngine
from .signatures import AxiSignature, id_bits
from .write_engine import WriteEngine

__all__ = ["MemoryEngine"]


class MemoryEngine(wiring.Component):
    """The AXI4 manager of the accelerator.

    Parameters
    ----------
    data_bits : AXI data width (``cfg.axi_data_bits``).
    read_clients : ``{name: tag_shape}``; each becomes a read-client port of that name.
    read_slots : read commands in flight at once (power of two; the AXI ID width is its log2).
    faults : set of :data:`avta.hw.core.faults.FAULTS` names (tests only).

    Ports
    -----
    <name> : one :class:`avta.hw.mem_client.ReadClientSignature` port per read client.
    write : the :class:`avta.hw.mem_client.WriteClientSignature` port.
    idle : nothing in flight on either side.
    m_axi : the AXI4 manager port.
    """

    def __init__(self, *, data_bits, read_clients, read_slots=8, faults=frozenset()):
        if not read_clients:
            raise ValueError("the memory engine needs at least one read client")
        self._data_bits, self._read_slots = data_bits, read_slots
        self._faults = faults
        self._read_clients = dict(read_clients)
        self._id_width = id_bits(read_slots)
        members = {name: In(ReadClientSignature(data_bits=data_bits, tag_shape=shape))
                   for name, shape in self._read_clients.items()}
        members.update({
            "write": In(WriteClientSignature(data_bits=data_bits)),
            "idle": Out(1),
            "m_axi": Out(AxiSignature(data_width=data_bits, id_width=self._id_width)),
        })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        shapes = list(self._read_clients.values())
        m.submodules.arbiter = arbiter = ReadArbiter(data_bits=self._data_bits,
                                                     tag_shapes=shapes)
        m.submodules.reader = reader = ReadEngine(data_bits=self._data_bits,
                                                  tag_shape=shared_tag_layout(shapes),
                                                  slots=self._read_slots,
                                                  faults=self._faults)
        m.submodules.writer = writer = WriteEngine(data_bits=self._data_bits,
                                                   id_width=self._id_width,
                                                   faults=self._faults)
        # Each client's commands pass a register on their way to the arbiter (its grant sees
        # flip-flops only), and the beats one on their way back (the clients' row arithmetic
        # starts at a flip-flop, and RREADY is a flip-flop, not the clients' ready):
        # docs/architecture.md, timing on an FPGA.
        cmds_held = []
        for index, name in enumerate(self._read_clients):
            port, client = getattr(self, name), arbiter.client(index)
            cmds = StreamRegister(port.cmd.payload.shape())
            m.submodules[f"{name}_cmds"] = cmds
            wiring.connect(m, cmds.i, flipped(port.cmd))
            wiring.connect(m, cmds.o, client.cmd)
            wiring.connect(m, client.data, flipped(port.data))
            cmds_held.append(cmds.o.valid)
        # The beats' data is read through a pointer of its own: the clients' ready depends on
        # the beat's tag and index only, so its path ends at few flip-flops and starts at few
        # multiplexers; the client a beat is for is a register, so every client's valid is
        # one decode of flip-flops, as behind an output register (stream_register.py).
        m.submodules.beats = beats = StreamRegister(reader.client.data.payload.shape(),
                                                    registered_ready=True, bulk=("data",),
                                                    head=("tag.client",))
        m.d.comb += [reader.client.cmd.valid.eq(arbiter.engine.cmd.valid),
                     reader.client.cmd.payload.eq(arbiter.engine.cmd.payload),
                     arbiter.engine.cmd.ready.eq(reader.client.cmd.ready)]
        wiring.connect(m, reader.client.data, beats.i)
        wiring.connect(m, beats.o, arbiter.engine.data)
        wiring.connect(m, writer.client, flipped(self.write))
        for name, member in self.m_axi.signature.members.items():
            # AR and R members start with "ar" or "r"; no AW, W or B member does.
            side = reader if name.startswith(("ar", "r")) else writer
            ours, theirs = getattr(self.m_axi, name), getattr(side.m_axi, name)
            if member.flow == wiring.Out:
                m.d.comb += ours.eq(theirs)
            else:
                m.d.comb += theirs.eq(ours)
        m.d.comb += self.idle.eq(reader.idle & writer.idle & ~Cat(cmds_held).any())
        return m
