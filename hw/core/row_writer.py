"""Turns memory read beats into scratchpad row writes (the load data path).

A DRAM element (one scratchpad row, or for ACC_8BIT a quarter-width row) is ``elem_bytes``
bytes; the bus carries ``bus_bytes`` per beat. Two regimes, fixed by the configuration:

narrow (``elem_bytes >= bus_bytes``)
    A row spans ``elem_bytes / bus_bytes`` beats. Each beat is written straight into its
    chunk of the row under that chunk's write enables, so beats may arrive in any order and no
    row buffer is needed. One beat per cycle.
wide (``elem_bytes < bus_bytes``)
    A beat carries ``bus_bytes / elem_bytes`` lanes. The first beat of a command may start
    ``skip`` lanes into the beat (the command starts mid-beat) and only ``limit`` elements
    belong to the command, so lanes outside ``[0, limit)`` are dropped. One group of ``ways``
    lanes per cycle (one row, or ``ways`` consecutive rows where the scratchpad is interleaved,
    hw/core/banks.py): the beat is held (``ready`` low) until its last valid lane is written.

Element ``x`` of a command goes to row ``row + x`` (modulo the depth: docs/isa.md §3 indices wrap).
Sign extension (ACC_8BIT, docs/isa.md §2) widens each DRAM byte to ``unit_bits`` row bits.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..mem_client import beat_count_bits

__all__ = ["RowWriter", "beat_layout", "ones"]


def beat_layout(*, bus_bytes, row_bits, skip_bits):
    """A beat as the row writer sees it: ``data``, ``beat``, ``row`` of element 0, ``skip``."""
    return data.StructLayout({"data": bus_bytes * 8, "beat": beat_count_bits(bus_bytes * 8),
                              "row": row_bits, "skip": skip_bits})


class RowWriter(wiring.Component):
    """Beats in, one row write per cycle out.

    Parameters
    ----------
    elem_bytes : int
        Bytes of one element in DRAM.
    bus_bytes : int
        Bytes per beat.
    unit_bits : int
        Row bits per DRAM byte: 8, or 32 to sign-extend int8 into int32 lanes (ACC_8BIT).
    row_bits : int
        Width of the target scratchpad row (``elem_bytes · unit_bits``).
    en_bits : int
        Width of the target write port's ``en`` (one per granule of the row).
    addr_bits : int
        Address width of the target scratchpad.
    limit_bits : int
        Width of ``limit``.
    limit_held : bool
        ``limit`` holds for a whole instruction and is set a cycle before its first beat
        arrives (a LOAD's ``x_size``): what the wide regime derives from it is registered.
        Otherwise (fetch's per-command count) it is derived from ``limit`` in the beat's cycle.
    ways : int
        Consecutive rows one write writes (wide regime only): the port's data holds ``ways``
        rows and ``en_bits`` (one enable per row) is ``ways``.

    Ports
    -----
    beat : In(stream.Signature(beat_layout(...)))
        Beats of the current command(s).
    limit : In(limit_bits)
        Elements in the beat's command, at least 1 (wide regime only; the client keeps it valid
        with the beat). The beats are exactly the command's: every valid beat writes a row.
    wr_addr, wr_data, wr_en : Out
        A row write this cycle when ``wr_en`` is non-zero (data replicated over every chunk;
        the enables pick the chunk). With ``ways`` > 1, rows ``wr_addr + j`` for each enable
        ``j``, from ``wr_data``'s ``j``-th row.
    """

    def __init__(self, *, elem_bytes, bus_bytes, unit_bits, row_bits, en_bits, addr_bits,
                 limit_bits, limit_held=False, ways=1):
        if elem_bytes * unit_bits != row_bits:
            raise ValueError(f"an element of {elem_bytes} bytes at {unit_bits} bits per byte "
                             f"does not fill a {row_bits}-bit row")
        self._elem_bytes, self._bus_bytes, self._unit_bits = elem_bytes, bus_bytes, unit_bits
        self._row_bits, self._en_bits = row_bits, en_bits
        self._limit_held = limit_held
        self._narrow = elem_bytes >= bus_bytes
        self._lanes = 1 if self._narrow else bus_bytes // elem_bytes
        if ways > 1 and (self._narrow or self._lanes % ways or en_bits != ways):
            raise ValueError(f"{ways} rows a write need elements narrower than the bus, "
                             f"{ways} dividing its {self._lanes} lanes and an enable a row")
        self._ways = ways
        self._skip_bits = max(1, exact_log2(self._lanes))
        super().__init__({
            "beat": In(stream.Signature(beat_layout(bus_bytes=bus_bytes, row_bits=addr_bits,
                                                    skip_bits=self._skip_bits))),
            "limit": In(limit_bits),
            "wr_addr": Out(addr_bits),
            "wr_data": Out(row_bits * ways),
            "wr_en": Out(en_bits),
        })

    @property
    def narrow(self):
        return self._narrow

    @property
    def skip_bits(self):
        return self._skip_bits

    def _expand(self, raw, nbytes):
        """``nbytes`` DRAM bytes as row bits: copied, or each sign-extended to ``unit_bits``."""
        if self._unit_bits == 8:
            return raw[:nbytes * 8]
        return Cat(_sext(raw.word_select(i, 8), self._unit_bits) for i in range(nbytes))

    def elaborate(self, platform):
        m = Module()
        beat = self.beat.payload
        if self._narrow:
            self._elaborate_narrow(m, beat)
        else:
            self._elaborate_wide(m, beat)
        return m

    def _elaborate_narrow(self, m, beat):
        chunks = self._elem_bytes // self._bus_bytes
        log_chunks = exact_log2(chunks)
        chunk_bits = self._bus_bytes * self._unit_bits
        en_per_chunk = self._en_bits * chunk_bits // self._row_bits
        if chunks > 1 and en_per_chunk < 1:
            raise ValueError(f"a {self._row_bits}-bit row with {self._en_bits} write enables "
                             f"cannot take {chunk_bits}-bit chunks")
        chunk = beat.beat[:log_chunks] if log_chunks else Const(0, 1)
        if chunks > 1:
            en_mask = Cat(Mux(chunk == i, ones(en_per_chunk), 0) for i in range(chunks))
        else:
            en_mask = ones(self._en_bits)
        m.d.comb += [
            self.beat.ready.eq(1),
            self.wr_addr.eq(beat.row + (beat.beat >> log_chunks)),
            self.wr_data.eq(self._expand(beat.data, self._bus_bytes).replicate(chunks)),
            self.wr_en.eq(Mux(self.beat.valid, en_mask, 0)),
        ]

    def _elaborate_wide(self, m, beat):
        lanes, log_lanes = self._lanes, exact_log2(self._lanes)
        # Lane j of beat k holds element x = k·lanes + j − skip. A command's elements are
        # lanes [skip, lanes) of beat 0 and on to its last element limit − 1, at lane
        # (skip + r) mod lanes of beat f + carry(skip + r), where limit − 1 = f·lanes + r.
        # Which lanes a beat holds is so decided by comparisons of the beat index alone (no
        # adder between the beat and ``ready`` or the write enables: docs/architecture.md,
        # timing on an FPGA); the memory engine sends exactly the command's beats, so every
        # lane visited belongs to it.
        limit_bits = self.limit.shape().width
        before_last = Signal(limit_bits)          # limit − 1
        m.d.comb += before_last.eq(self.limit - 1)
        quotient, rem = before_last[log_lanes:], before_last[:log_lanes]
        quotient_1 = quotient + 1
        # A command's beat index is at most f + 1: its low bits as wide as quotient_1 are the
        # whole index, so the comparisons on the ``ready`` path are that wide, not as wide as
        # any beat of a 4 GiB range (30 bits on a 64-bit bus).
        index = beat.beat[:quotient_1.shape().width]
        if self._limit_held:
            # ``limit`` holds for the instruction: register what follows from it.
            quotient, rem, quotient_1 = _registered(m, quotient, "quotient"), \
                _registered(m, rem, "rem"), _registered(m, quotient_1, "quotient_1")
        end = Signal(log_lanes + 1)               # skip + r: the last lane, and its carry
        m.d.comb += end.eq(beat.skip + rem)
        final = Mux(end[log_lanes], index == quotient_1, index == quotient)
        last_lane = Mux(final, end[:log_lanes], lanes - 1)

        # The beat's lanes are written ``ways`` at a time, in groups: group g is lanes
        # [g·ways, (g + 1)·ways), rows ``row + x`` onwards for its first lane's element x.
        ways, log_ways = self._ways, exact_log2(self._ways)
        groups = lanes // ways
        first_lane = Mux(index == 0, beat.skip, 0)
        first_group, last_group = first_lane >> log_ways, last_lane >> log_ways
        if groups > 1:
            mid = Signal()                # the current beat already wrote some groups
            group_reg = Signal(range(groups))
            group = Mux(mid, group_reg, first_group)
            last = group == last_group
            with m.If(self.beat.valid):
                with m.If(last):
                    m.d.sync += mid.eq(0)
                with m.Else():
                    m.d.sync += [mid.eq(1), group_reg.eq(group + 1)]
        else:
            group, last = Const(0, 1), Const(1, 1)
        x = Signal(beat.beat.shape().width + log_lanes + 1)
        m.d.comb += x.eq((beat.beat << log_lanes) + (group << log_ways) - beat.skip)
        if ways == 1:
            en = ones(self._en_bits)
        else:
            # Row j of the group is the command's unless it lies before the first lane (in
            # the first group) or after the last (in the last group).
            # (Row ways − 1 is never before the first lane, nor row 0 after the last.)
            en = Cat((1 if j == ways - 1 else (group != first_group)
                      | (j >= first_lane[:log_ways]))
                     & (1 if j == 0 else (group != last_group) | (j <= last_lane[:log_ways]))
                     for j in range(ways))
        elem_bits = self._elem_bytes * 8
        m.d.comb += [
            self.wr_addr.eq(beat.row + x),
            self.wr_data.eq(self._expand(beat.data.word_select(group, ways * elem_bits),
                                         ways * self._elem_bytes)),
            self.wr_en.eq(Mux(self.beat.valid, en, 0)),
            self.beat.ready.eq(last),
        ]


def _registered(m, value, name):
    """``value`` one cycle later, in a register of its own width."""
    reg = Signal(value.shape(), name=name)
    m.d.sync += reg.eq(value)
    return reg


def ones(width):
    """A ``width``-bit constant of all ones (every write enable of a row)."""
    return Const((1 << width) - 1, width)


def _sext(byte, bits):
    return Cat(byte, byte[7].replicate(bits - 8))
