"""The memory-engine client interface: how the core reads and writes DRAM.

The core never drives AXI itself. Each of its memory users (fetch, the load stage, the compute
stage's loads, the store stage) is a *client* of the memory engine (VME, docs/architecture.md) through
one of the two signatures below; the VME turns client commands into AXI4 bursts and arbitrates
between clients. In simulation a Python model serves the same streams
(:mod:`avta.sim.amaranth.dram`).

Read client (:class:`ReadClientSignature`, seen from the client):

``cmd`` (out, stream of :func:`read_cmd_layout`)
    ``addr`` is a byte address; the command asks for ``beats`` bus beats, beat ``k`` holding the
    bus-aligned bytes ``[align(addr) + k·B, align(addr) + (k+1)·B)`` where ``B`` is the bus width
    in bytes and ``align`` clears the low ``log2 B`` bits. ``beats`` is at least 1. ``tag`` is
    opaque to the VME: the client chooses it to say where the data goes, and gets it back with
    every beat.
``data`` (in, stream of :func:`read_beat_layout`)
    One transfer per beat: ``data`` (bus-width, byte ``i`` of the beat in bits ``[8i+8:8i]``,
    little-endian as on AXI), the command's ``tag``, ``beat`` (``k`` above) and ``err`` (an AXI
    error response for this beat: docs/isa.md §3.5 error 9). Beats of one command arrive in order
    (``beat`` counts up from 0); beats of *different* commands may arrive interleaved and out of
    order, so the client places data from ``tag`` and ``beat`` alone. A client may hold ``ready``
    low; the VME must then keep the beat (clients that need it say so, e.g. a load unpacking
    several rows from one beat takes one cycle per row).

Write client (:class:`WriteClientSignature`, seen from the client):

``cmd`` (out, stream of :func:`write_cmd_layout`)
    ``addr`` and ``beats`` as for reads: the command writes ``beats`` bus-aligned beats from
    ``align(addr)``.
``data`` (out, stream of :func:`write_beat_layout`)
    The beats of the commands, in command order: ``data`` and one byte strobe per byte lane
    (``strb``); only strobed bytes change in DRAM.
``resp`` (in, stream of :func:`write_resp_layout`)
    One transfer per command, in command order, after all its beats are written: ``err`` says
    that some beat got an AXI error response (error 9). A STORE completes when its last response
    has arrived (docs/isa.md §3).

Widths come from the configuration: data is ``cfg.axi_data_bits`` wide, addresses are
:data:`ADDR_BITS`, and ``beats``/``beat`` are wide enough for any 32-bit byte range.
"""

from amaranth.hdl import ShapeCastable, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

__all__ = ["ADDR_BITS", "beat_count_bits", "read_cmd_layout", "read_beat_layout",
           "write_cmd_layout", "write_beat_layout", "write_resp_layout",
           "ReadClientSignature", "WriteClientSignature"]

#: Byte addresses are 32 bits (docs/isa.md §3: DRAM addresses wrap modulo 2^32).
ADDR_BITS = 32


def beat_count_bits(data_bits):
    """Width of ``beats`` and ``beat``: enough beats to cover 2^32 bytes on a ``data_bits`` bus."""
    return ADDR_BITS - exact_log2(data_bits // 8) + 1


def _check_data_bits(data_bits):
    if not isinstance(data_bits, int) or data_bits < 8 or data_bits & (data_bits - 1):
        raise ValueError(f"the bus width must be a power of two of at least 8 bits, "
                         f"not {data_bits!r}")


def read_cmd_layout(*, data_bits, tag_shape):
    """Payload of a read command: ``addr``, ``beats``, ``tag``."""
    return data.StructLayout({"addr": ADDR_BITS, "beats": beat_count_bits(data_bits),
                              "tag": tag_shape})


def read_beat_layout(*, data_bits, tag_shape):
    """Payload of a read data beat: ``data``, ``tag``, ``beat``, ``err``."""
    return data.StructLayout({"data": data_bits, "tag": tag_shape,
                              "beat": beat_count_bits(data_bits), "err": 1})


def write_cmd_layout(*, data_bits):
    """Payload of a write command: ``addr``, ``beats``."""
    return data.StructLayout({"addr": ADDR_BITS, "beats": beat_count_bits(data_bits)})


def write_beat_layout(*, data_bits):
    """Payload of a write data beat: ``data`` and a byte strobe per lane, ``strb``."""
    return data.StructLayout({"data": data_bits, "strb": data_bits // 8})


def write_resp_layout():
    """Payload of a write response: ``err``."""
    return data.StructLayout({"err": 1})


class ReadClientSignature(wiring.Signature):
    """A read client of the memory engine, seen from the client (module docstring).

    Parameters
    ----------
    data_bits : int
        Bus width (``cfg.axi_data_bits``).
    tag_shape : shape-castable
        What the client puts in ``tag``; the VME only stores and returns it.
    """

    def __init__(self, *, data_bits, tag_shape):
        _check_data_bits(data_bits)
        if not isinstance(tag_shape, ShapeCastable):
            tag_shape = unsigned(tag_shape) if isinstance(tag_shape, int) else tag_shape
        self._data_bits = data_bits
        self._tag_shape = tag_shape
        super().__init__({
            "cmd": Out(stream.Signature(read_cmd_layout(data_bits=data_bits,
                                                        tag_shape=tag_shape))),
            "data": In(stream.Signature(read_beat_layout(data_bits=data_bits,
                                                         tag_shape=tag_shape))),
        })

    @property
    def data_bits(self):
        return self._data_bits

    @property
    def tag_shape(self):
        return self._tag_shape

    def __eq__(self, other):
        return (isinstance(other, ReadClientSignature) and other.data_bits == self.data_bits
                and other.tag_shape == self.tag_shape)

    def __repr__(self):
        return f"ReadClientSignature(data_bits={self.data_bits}, tag_shape={self.tag_shape!r})"


class WriteClientSignature(wiring.Signature):
    """A write client of the memory engine, seen from the client (module docstring).

    Parameters
    ----------
    data_bits : int
        Bus width (``cfg.axi_data_bits``).
    """

    def __init__(self, *, data_bits):
        _check_data_bits(data_bits)
        self._data_bits = data_bits
        super().__init__({
            "cmd": Out(stream.Signature(write_cmd_layout(data_bits=data_bits))),
            "data": Out(stream.Signature(write_beat_layout(data_bits=data_bits))),
            "resp": In(stream.Signature(write_resp_layout())),
        })

    @property
    def data_bits(self):
        return self._data_bits

    def __eq__(self, other):
        return isinstance(other, WriteClientSignature) and other.data_bits == self.data_bits

    def __repr__(self):
        return f"WriteClientSignature(data_bits={self.data_bits})"
