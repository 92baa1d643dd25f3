"""AXI4 write engine: serves one write client (:class:`avta.hw.mem_client.WriteClientSignature`).

A command writes ``beats`` bus-aligned beats from ``align(addr)``; the client's data stream
supplies exactly that many beats with their byte strobes, so partial beats leave the other bytes
alone. Bursts follow the read engine's rule (≤ 256 beats, never across 4 KiB). Addresses may
run ahead of data, up to ``max_outstanding`` bursts awaiting their response. One ``resp``
transfer per command follows its last write response, with ``err`` set if any burst was
answered other than OKAY (docs/isa.md §3.5 error 9); a STORE completes then (docs/isa.md §3).
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.faults import FaultName
from ..mem_client import ADDR_BITS, WriteClientSignature, beat_count_bits
from .read_engine import CACHE_NORMAL, MAX_BURST_BEATS, burst_beats
from .signatures import PAGE_BYTES, AxiSignature, Burst, Resp

__all__ = ["WriteEngine"]


class WriteEngine(wiring.Component):
    """AXI4 AW/W/B channels serving one write client, one command at a time.

    ``faults``: a set of :data:`avta.hw.core.faults.FAULTS` names (tests only).

    Ports
    -----
    client : the write client (``cmd`` and ``data`` in, ``resp`` out).
    m_axi : AXI4 manager; only AW, W and B are driven (AR/R stay idle). Writes use ID 0.
    idle : no command in progress.
    """

    def __init__(self, *, data_bits, max_outstanding=16, id_width=1, faults=frozenset()):
        self._data_bits, self._max_outstanding = data_bits, max_outstanding
        self._faults = faults
        super().__init__({
            "client": In(WriteClientSignature(data_bits=data_bits)),
            "m_axi": Out(AxiSignature(data_width=data_bits, id_width=id_width)),
            "idle": Out(1),
        })
        # The engine's state, created here so that the proofs (avta.formal.blocks.write_engine)
        # can state their induction invariants over it; read-only there, and not ports, so the
        # generated Verilog is unchanged: ``busy`` (a command in progress), the AW and W
        # splitters' next address and beats left, and the bursts between AW and B.
        count_bits = beat_count_bits(data_bits)
        self.busy = Signal(name="busy")
        self.aw_addr, self.aw_left = Signal(ADDR_BITS, name="aw_addr"), Signal(count_bits,
                                                                            name="aw_left")
        self.w_addr, self.w_left = Signal(ADDR_BITS, name="w_addr"), Signal(count_bits,
                                                                         name="w_left")
        self.w_in_burst = Signal(range(MAX_BURST_BEATS + 1), name="w_in_burst")
        self.bursts_open = Signal(range(max_outstanding + 1), name="bursts_open")

    def elaborate(self, platform):
        m = Module()
        axi, cmd, beats_in, resp = (self.m_axi, self.client.cmd, self.client.data,
                                    self.client.resp)
        beat_bytes = self._data_bits // 8
        log_beat = exact_log2(beat_bytes)

        busy = self.busy                # a command is in progress (until its resp is taken)
        aw_addr, aw_left, w_addr, w_left = self.aw_addr, self.aw_left, self.w_addr, self.w_left
        w_in_burst = self.w_in_burst
        bursts_open = self.bursts_open  # AW loaded, B not yet back
        err = Signal()

        m.d.comb += cmd.ready.eq(~busy)
        with m.If(cmd.valid & cmd.ready):
            aligned = cmd.p.addr & ~(beat_bytes - 1)
            m.d.sync += [busy.eq(1), aw_addr.eq(aligned), aw_left.eq(cmd.p.beats),
                         w_addr.eq(aligned), w_left.eq(cmd.p.beats), w_in_burst.eq(0),
                         err.eq(0)]

        # -- AW: a register loaded from the splitter (payload stable while waiting) -----------
        aw_burst = burst_beats(m, addr=aw_addr, left=aw_left, beat_bytes=beat_bytes)
        aw_valid, aw_fire, load_aw, b_fire = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            aw_fire.eq(aw_valid & axi.awready),
            b_fire.eq(axi.bvalid & axi.bready),
            load_aw.eq(busy & (aw_left != 0) & (~aw_valid | aw_fire) &
                       (bursts_open < self._max_outstanding)),
            axi.awvalid.eq(aw_valid), axi.awsize.eq(log_beat), axi.awburst.eq(Burst.INCR),
            axi.awcache.eq(CACHE_NORMAL), axi.bready.eq(1),
        ]
        with m.If(aw_fire):
            m.d.sync += aw_valid.eq(0)
        aw_next = aw_addr + (aw_burst << log_beat)
        if FaultName.VME_WRITE_PAGE in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            page = exact_log2(PAGE_BYTES)
            aw_next = Cat(aw_next[:page], aw_addr[page:])
        with m.If(load_aw):
            m.d.sync += [aw_valid.eq(1), axi.awaddr.eq(aw_addr), axi.awlen.eq(aw_burst - 1),
                         aw_addr.eq(aw_next), aw_left.eq(aw_left - aw_burst)]
        m.d.sync += bursts_open.eq(bursts_open + load_aw - b_fire)

        # -- W: the same split, recomputed, marks the last beat of each burst -----------------
        w_burst = burst_beats(m, addr=w_addr, left=w_left, beat_bytes=beat_bytes)
        last = Signal()
        m.d.comb += last.eq(w_in_burst + 1 == w_burst)
        if FaultName.AXI_WLAST_EARLY in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            m.d.comb += last.eq((w_in_burst + 2 == w_burst) | (w_burst == 1))
        m.d.comb += [
            axi.wvalid.eq(busy & (w_left != 0) & beats_in.valid),
            axi.wdata.eq(beats_in.p.data), axi.wstrb.eq(beats_in.p.strb), axi.wlast.eq(last),
            beats_in.ready.eq(busy & (w_left != 0) & axi.wready),
        ]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += w_in_burst.eq(w_in_burst + 1)
            with m.If(last):
                m.d.sync += [w_in_burst.eq(0), w_addr.eq(w_addr + (w_burst << log_beat)),
                             w_left.eq(w_left - w_burst)]

        # -- B, then one response per command --------------------------------------------------
        with m.If(b_fire & (axi.bresp != Resp.OKAY)):
            m.d.sync += err.eq(1)
        all_back = Signal()
        m.d.comb += [
            all_back.eq(busy & (aw_left == 0) & ~aw_valid & (w_left == 0) &
                        (bursts_open == 0)),
            resp.valid.eq(all_back),
            resp.p.err.eq(err),
        ]
        with m.If(resp.valid & resp.ready):
            m.d.sync += busy.eq(0)
        m.d.comb += self.idle.eq(~busy)
        return m
