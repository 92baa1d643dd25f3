"""AXI4 read engine: serves one read client (:class:`avta.hw.mem_client.ReadClientSignature`).

Each accepted command takes a slot of the tag buffer; the slot number is the AXI ID of every
burst of that command. AXI keeps the beats of one ID in order, so a command's beats come back in
order (``beat`` counts up, as the client interface promises), while different commands, having
different IDs, may complete out of order when the subordinate reorders. The slot remembers the
command's ``tag``, the next ``beat`` index and the beats still due; it frees after the last one.

Commands are split into INCR bursts of at most 256 beats that never cross a 4 KiB boundary
(AMBA AXI A3.4.1), issued one per cycle while a command has bursts left; the next command is
taken as soon as the previous one has issued its last burst and a slot is free, so up to
``slots`` commands are in flight. A beat answered other than OKAY has ``err`` set (docs/isa.md §3.5
error 9); the client decides what to do with it.
"""

from amaranth import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.faults import FaultName
from ..mem_client import ADDR_BITS, ReadClientSignature, beat_count_bits
from .signatures import PAGE_BYTES, AxiSignature, Burst, Resp, id_bits

__all__ = ["ReadEngine", "burst_beats", "MAX_BURST_BEATS", "CACHE_NORMAL"]

#: AXI4 INCR bursts carry at most 256 beats (AxLEN is 8 bits).
MAX_BURST_BEATS = 256
#: AxCACHE "normal non-cacheable bufferable", as upstream VTA's shell drives it.
CACHE_NORMAL = 0b0011


def burst_beats(m, *, addr, left, beat_bytes, page_limit=True):
    """Beats of the next burst from beat-aligned ``addr`` with ``left`` beats to go: at most
    256 (AXI4 INCR) and never past the next 4 KiB boundary (AMBA AXI A3.4.1). ``page_limit``
    off is the planted ``axi-burst-4k`` bug (tests only)."""
    log_beat, page_beats = exact_log2(beat_bytes), PAGE_BYTES // beat_bytes
    to_page = Signal(range(page_beats + 1))
    m.d.comb += to_page.eq(page_beats - addr[log_beat:exact_log2(PAGE_BYTES)])
    limit = Signal(range(MAX_BURST_BEATS + 1))
    m.d.comb += limit.eq(MAX_BURST_BEATS)
    with m.If((to_page < MAX_BURST_BEATS) & page_limit):
        m.d.comb += limit.eq(to_page)
    burst = Signal(range(MAX_BURST_BEATS + 1))
    m.d.comb += burst.eq(limit)
    with m.If(left < limit):
        m.d.comb += burst.eq(left)
    return burst


class ReadEngine(wiring.Component):
    """AXI4 AR/R channels serving one read client.

    Parameters
    ----------
    data_bits : AXI data width.
    tag_shape : the client's tag shape.
    slots : commands in flight at once (a power of two); the AXI ID width is its log2.
    faults : a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).

    Ports
    -----
    client : the read client (``cmd`` in, ``data`` out).
    m_axi : AXI4 manager; only AR and R are driven (AW/W/B stay idle).
    idle : nothing accepted is still waiting for data.
    """

    def __init__(self, *, data_bits, tag_shape, slots=8, faults=frozenset()):
        if slots < 1 or slots & (slots - 1):
            raise ValueError(f"slots must be a power of two, not {slots!r}")
        self._data_bits, self._slots = data_bits, slots
        self._faults = faults
        super().__init__({
            "client": In(ReadClientSignature(data_bits=data_bits, tag_shape=tag_shape)),
            "m_axi": Out(AxiSignature(data_width=data_bits, id_width=id_bits(slots))),
            "idle": Out(1),
        })
        # The engine's state, created here so that the proofs (avta.formal.blocks.read_engine)
        # can state their induction invariants over it; read-only there, and not ports, so the
        # generated Verilog is unchanged. Per slot (AXI ID): busy, the command's tag, the next
        # beat index and the beats still due; the splitter: ``active`` (a command has bursts
        # left), its ``slot``, the next burst's ``addr`` and the beats ``left`` to issue.
        count_bits = beat_count_bits(data_bits)
        self.slot_busy = Signal(slots, name="slot_busy")
        self.slot_tag = [Signal(tag_shape, name=f"slot{i}_tag") for i in range(slots)]
        self.slot_beat = [Signal(count_bits, name=f"slot{i}_beat") for i in range(slots)]
        self.slot_due = [Signal(count_bits, name=f"slot{i}_due") for i in range(slots)]
        self.active = Signal(name="active")
        self.slot = Signal(range(slots), name="slot")
        self.addr = Signal(ADDR_BITS, name="addr")
        self.left = Signal(count_bits, name="left")

    def elaborate(self, platform):
        m = Module()
        axi, cmd, out = self.m_axi, self.client.cmd, self.client.data
        beat_bytes = self._data_bits // 8
        log_beat = exact_log2(beat_bytes)

        # -- tag buffer: one slot per command in flight, indexed by the AXI ID --------------
        slot_busy = self.slot_busy
        slot_tag, slot_beat = Array(self.slot_tag), Array(self.slot_beat)
        slot_due = Array(self.slot_due)
        free_slot = Signal(range(self._slots))
        have_free = Signal()
        # Planted bug (avta.hw.core.faults), for testing the verification tools only.
        reuse = FaultName.AXI_READ_ID_REUSE in self._faults
        for i in reversed(range(self._slots)):
            with m.If(~slot_busy[i] | (reuse and i == 0)):
                m.d.comb += [free_slot.eq(i), have_free.eq(1)]

        # -- splitter: the command whose bursts are being issued ---------------------------
        active, slot, addr, left = self.active, self.slot, self.addr, self.left
        set_busy, clr_busy = Signal(self._slots), Signal(self._slots)
        m.d.comb += cmd.ready.eq(~active & have_free)
        with m.If(cmd.valid & cmd.ready):
            m.d.comb += set_busy.eq(1 << free_slot)
            m.d.sync += [active.eq(1), slot.eq(free_slot),
                         addr.eq(cmd.p.addr & ~(beat_bytes - 1)), left.eq(cmd.p.beats),
                         slot_tag[free_slot].eq(cmd.p.tag), slot_beat[free_slot].eq(0),
                         slot_due[free_slot].eq(cmd.p.beats)]
        # Planted bug (avta.hw.core.faults), for testing the verification tools only.
        burst = burst_beats(m, addr=addr, left=left, beat_bytes=beat_bytes,
                            page_limit=FaultName.AXI_BURST_4K not in self._faults)

        # The AR channel is a register loaded from the splitter, so its payload stays put while
        # ARVALID waits (AXI A3.2.1); it reloads on a handshake, so bursts go out one per cycle.
        ar_valid, ar_fire, load_ar = Signal(), Signal(), Signal()
        m.d.comb += [
            ar_fire.eq(ar_valid & axi.arready),
            load_ar.eq(active & (~ar_valid | ar_fire)),
            axi.arvalid.eq(ar_valid), axi.arsize.eq(log_beat), axi.arburst.eq(Burst.INCR),
            axi.arcache.eq(CACHE_NORMAL),
        ]
        # Planted bug (avta.hw.core.faults), for testing the verification tools only.
        dropped = ar_valid if FaultName.AXI_VALID_DROP in self._faults else ar_fire
        with m.If(dropped):
            m.d.sync += ar_valid.eq(0)
        with m.If(load_ar):
            m.d.sync += [ar_valid.eq(1), axi.arid.eq(slot), axi.araddr.eq(addr),
                         axi.arlen.eq(burst - 1), addr.eq(addr + (burst << log_beat)),
                         left.eq(left - burst), active.eq(left != burst)]

        # -- responses: route each beat by its ID -------------------------------------------
        m.d.comb += [
            axi.rready.eq(out.ready),
            out.valid.eq(axi.rvalid),
            out.p.data.eq(axi.rdata),
            out.p.tag.eq(slot_tag[axi.rid]),
            out.p.beat.eq(slot_beat[axi.rid]),
            out.p.err.eq(axi.rresp != Resp.OKAY),
        ]
        with m.If(axi.rvalid & axi.rready):
            m.d.sync += [slot_beat[axi.rid].eq(slot_beat[axi.rid] + 1),
                         slot_due[axi.rid].eq(slot_due[axi.rid] - 1)]
            with m.If(slot_due[axi.rid] == 1):
                m.d.comb += clr_busy.eq(1 << axi.rid)
        m.d.sync += slot_busy.eq((slot_busy | set_busy) & ~clr_busy)
        m.d.comb += self.idle.eq(~active & ~ar_valid & (slot_busy == 0))
        return m
