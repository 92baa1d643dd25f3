"""AXI4 read engine: beat-aligned read commands in, tagged data beats out, bursts out of order.

A command asks for ``beats`` bus beats starting at the beat-aligned byte address ``addr``. The
engine splits it into INCR bursts of at most 256 beats that never cross a 4 KiB boundary (AMBA
AXI A3.4.1) and issues each as soon as a tag-buffer slot is free, so up to ``slots`` bursts are
outstanding at once. The AXI ID of a burst is its slot number; the slot remembers the
command's ``tag`` and the index of the burst's first beat, so data beats can come back in any
burst order (the subordinate may reorder across IDs) and still say where they belong: each
``data`` beat carries the command's ``tag`` and its ``beat`` index within the command.

A response other than OKAY sets ``error`` (sticky until ``clear``): ISA.md §3.5 error 9.
"""

from amaranth import Array, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .signatures import AxiSignature, BURST_INCR, PAGE_BYTES, Resp

__all__ = ["ReadEngine", "read_command_layout", "read_beat_layout", "burst_beats",
           "MAX_BURST_BEATS", "COUNT_BITS", "ADDR_BITS"]

#: AXI4 INCR bursts carry at most 256 beats (ARLEN is 8 bits).
MAX_BURST_BEATS = 256
ADDR_BITS = 32
#: Beats in one command: enough for the largest LOAD row of any configuration.
COUNT_BITS = 20


def burst_beats(m, *, addr, left, beat_bytes):
    """Beats of the next burst from beat-aligned ``addr`` with ``left`` beats to go: at most
    256 (AXI4 INCR) and never past the next 4 KiB boundary (AMBA AXI A3.4.1)."""
    log_beat, page_beats = exact_log2(beat_bytes), PAGE_BYTES // beat_bytes
    to_page = Signal(range(page_beats + 1))
    m.d.comb += to_page.eq(page_beats - addr[log_beat:exact_log2(PAGE_BYTES)])
    limit = Signal(range(MAX_BURST_BEATS + 1))
    m.d.comb += limit.eq(MAX_BURST_BEATS)
    with m.If(to_page < MAX_BURST_BEATS):
        m.d.comb += limit.eq(to_page)
    burst = Signal(range(MAX_BURST_BEATS + 1))
    m.d.comb += burst.eq(limit)
    with m.If(left < limit):
        m.d.comb += burst.eq(left)
    return burst


def read_command_layout(tag_bits):
    return data.StructLayout({"addr": ADDR_BITS, "beats": COUNT_BITS, "tag": tag_bits})


def read_beat_layout(data_bits, tag_bits):
    return data.StructLayout({"data": data_bits, "tag": tag_bits, "beat": COUNT_BITS})


class ReadEngine(wiring.Component):
    """One AXI4 manager read channel pair serving one command stream.

    Parameters
    ----------
    data_bits : AXI data width (64..512).
    tag_bits : width of the client's tag.
    slots : outstanding bursts (a power of two); the AXI ID width is log2(slots).

    Ports
    -----
    cmd : stream of :func:`read_command_layout` (``addr`` must be beat-aligned; ``beats`` ≥ 1).
    data : stream of :func:`read_beat_layout`; ``ready`` low holds RREADY low.
    m_axi : AR and R channels of an AXI4 manager (AW/W/B are left idle here).
    error : a burst answered SLVERR or DECERR; sticky until ``clear``.
    idle : no command is being split and no burst is outstanding.
    """

    def __init__(self, *, data_bits, tag_bits, slots=8):
        if slots < 1 or slots & (slots - 1):
            raise ValueError(f"slots must be a power of two, not {slots!r}")
        self._data_bits, self._tag_bits, self._slots = data_bits, tag_bits, slots
        super().__init__({
            "cmd": In(stream.Signature(read_command_layout(tag_bits))),
            "data": Out(stream.Signature(read_beat_layout(data_bits, tag_bits))),
            "m_axi": Out(AxiSignature(data_width=data_bits, id_width=max(1, exact_log2(slots)))),
            "error": Out(1),
            "clear": In(1),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        axi, beat_bytes = self.m_axi, self._data_bits // 8
        log_beat = exact_log2(beat_bytes)

        # -- tag buffer: one slot per outstanding burst, indexed by the AXI ID -----------------
        slot_busy = Signal(self._slots)
        slot_tag = Array(Signal(self._tag_bits, name=f"slot{i}_tag") for i in range(self._slots))
        slot_beat = Array(Signal(COUNT_BITS, name=f"slot{i}_beat") for i in range(self._slots))
        free_slot = Signal(range(self._slots))
        have_free = Signal()
        for i in reversed(range(self._slots)):
            with m.If(~slot_busy[i]):
                m.d.comb += [free_slot.eq(i), have_free.eq(1)]

        # -- splitter: the command being cut into bursts ------------------------------------
        active = Signal()
        addr = Signal(ADDR_BITS)
        left = Signal(COUNT_BITS)       # beats still to request
        issued = Signal(COUNT_BITS)     # beats requested so far (the next burst's first index)
        tag = Signal(self._tag_bits)
        m.d.comb += self.cmd.ready.eq(~active)
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [active.eq(self.cmd.p.beats != 0), addr.eq(self.cmd.p.addr),
                         left.eq(self.cmd.p.beats), issued.eq(0), tag.eq(self.cmd.p.tag)]

        burst = burst_beats(m, addr=addr, left=left, beat_bytes=beat_bytes)

        # The AR channel is a register loaded from the splitter, so its payload stays put while
        # ARVALID waits for ARREADY (AXI A3.2.1); it reloads on the cycle of a handshake, so
        # back-to-back bursts still go out one per cycle.
        ar_valid = Signal()
        ar_fire = Signal()
        load_ar = Signal()
        m.d.comb += [
            ar_fire.eq(ar_valid & axi.arready),
            load_ar.eq(active & have_free & (~ar_valid | ar_fire)),
            axi.arvalid.eq(ar_valid), axi.arsize.eq(log_beat), axi.arburst.eq(BURST_INCR),
            axi.arcache.eq(0b0011),
        ]
        with m.If(ar_fire):
            m.d.sync += ar_valid.eq(0)
        set_busy = Signal(self._slots)
        with m.If(load_ar):
            m.d.comb += set_busy.eq(1 << free_slot)
            m.d.sync += [ar_valid.eq(1), axi.arid.eq(free_slot), axi.araddr.eq(addr),
                         axi.arlen.eq(burst - 1),
                         slot_tag[free_slot].eq(tag), slot_beat[free_slot].eq(issued),
                         addr.eq(addr + (burst << log_beat)), left.eq(left - burst),
                         issued.eq(issued + burst), active.eq(left != burst)]

        # -- responses: route each beat by its ID -------------------------------------------
        clr_busy = Signal(self._slots)
        m.d.comb += [
            axi.rready.eq(self.data.ready),
            self.data.valid.eq(axi.rvalid),
            self.data.p.data.eq(axi.rdata),
            self.data.p.tag.eq(slot_tag[axi.rid]),
            self.data.p.beat.eq(slot_beat[axi.rid]),
        ]
        with m.If(axi.rvalid & axi.rready):
            m.d.sync += slot_beat[axi.rid].eq(slot_beat[axi.rid] + 1)
            with m.If(axi.rlast):
                m.d.comb += clr_busy.eq(1 << axi.rid)
            with m.If(axi.rresp != Resp.OKAY):
                m.d.sync += self.error.eq(1)
        m.d.sync += slot_busy.eq((slot_busy | set_busy) & ~clr_busy)
        with m.If(self.clear):
            m.d.sync += self.error.eq(0)
        m.d.comb += self.idle.eq(~active & ~ar_valid & (slot_busy == 0))
        return m
