"""AXI4 write engine: a beat-aligned write command and its data beats in, bursts out.

A command writes ``beats`` bus beats from the beat-aligned byte address ``addr``; the data
stream supplies exactly that many beats, each with its byte strobes (so a client writes
partial beats without touching the other bytes). Bursts follow the read engine's rule (at most
256 beats, never across 4 KiB). Addresses may run ahead of data, up to ``max_outstanding``
bursts awaiting their write response. ``done`` pulses when the last response of the command
has arrived (a STORE completes then, ISA.md §3); a response other than OKAY sets ``error``.
"""

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from .read_engine import ADDR_BITS, COUNT_BITS, burst_beats
from .signatures import AxiSignature, BURST_INCR, Resp

__all__ = ["WriteEngine", "write_command_layout", "write_beat_layout"]


def write_command_layout():
    return data.StructLayout({"addr": ADDR_BITS, "beats": COUNT_BITS})


def write_beat_layout(data_bits):
    return data.StructLayout({"data": data_bits, "strb": data_bits // 8})


class WriteEngine(wiring.Component):
    """One AXI4 manager write channel set serving one command at a time.

    Ports
    -----
    cmd : stream of :func:`write_command_layout` (``beats`` ≥ 1; 0 completes at once).
    data : stream of :func:`write_beat_layout`, exactly ``beats`` beats per command.
    m_axi : AW, W and B channels of an AXI4 manager (AR/R left idle here).
    done : one-cycle pulse when every burst of the command has its response.
    error : a burst answered SLVERR or DECERR; sticky until ``clear``.
    idle : no command in progress.
    """

    def __init__(self, *, data_bits, max_outstanding=16, id_width=1):
        self._data_bits, self._max_outstanding = data_bits, max_outstanding
        super().__init__({
            "cmd": In(stream.Signature(write_command_layout())),
            "data": In(stream.Signature(write_beat_layout(data_bits))),
            "m_axi": Out(AxiSignature(data_width=data_bits, id_width=id_width)),
            "done": Out(1),
            "error": Out(1),
            "clear": In(1),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        axi, beat_bytes = self.m_axi, self._data_bits // 8
        log_beat = exact_log2(beat_bytes)

        busy = Signal()             # a command is in progress
        aw_addr, aw_left = Signal(ADDR_BITS), Signal(COUNT_BITS)
        w_addr, w_left = Signal(ADDR_BITS), Signal(COUNT_BITS)
        w_in_burst = Signal(range(257))
        bursts_open = Signal(range(self._max_outstanding + 1))   # AW sent, B not yet back

        m.d.comb += self.cmd.ready.eq(~busy)
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [busy.eq(1), aw_addr.eq(self.cmd.p.addr), aw_left.eq(self.cmd.p.beats),
                         w_addr.eq(self.cmd.p.addr), w_left.eq(self.cmd.p.beats),
                         w_in_burst.eq(0)]

        # -- AW: a register loaded from the splitter (payload stable while waiting) -----------
        aw_burst = burst_beats(m, addr=aw_addr, left=aw_left, beat_bytes=beat_bytes)
        aw_valid, aw_fire, load_aw = Signal(), Signal(), Signal()
        b_fire = Signal()
        m.d.comb += [
            aw_fire.eq(aw_valid & axi.awready),
            b_fire.eq(axi.bvalid & axi.bready),
            load_aw.eq(busy & (aw_left != 0) & (~aw_valid | aw_fire) &
                       (bursts_open < self._max_outstanding)),
            axi.awvalid.eq(aw_valid), axi.awsize.eq(log_beat), axi.awburst.eq(BURST_INCR),
            axi.awcache.eq(0b0011), axi.bready.eq(1),
        ]
        with m.If(aw_fire):
            m.d.sync += aw_valid.eq(0)
        with m.If(load_aw):
            m.d.sync += [aw_valid.eq(1), axi.awaddr.eq(aw_addr), axi.awlen.eq(aw_burst - 1),
                         aw_addr.eq(aw_addr + (aw_burst << log_beat)),
                         aw_left.eq(aw_left - aw_burst)]
        m.d.sync += bursts_open.eq(bursts_open + load_aw - b_fire)

        # -- W: the same split, recomputed, marks the last beat of each burst -----------------
        w_burst = burst_beats(m, addr=w_addr, left=w_left, beat_bytes=beat_bytes)
        last = Signal()
        m.d.comb += [
            last.eq(w_in_burst + 1 == w_burst),
            axi.wvalid.eq(busy & (w_left != 0) & self.data.valid),
            axi.wdata.eq(self.data.p.data), axi.wstrb.eq(self.data.p.strb), axi.wlast.eq(last),
            self.data.ready.eq(busy & (w_left != 0) & axi.wready),
        ]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += w_in_burst.eq(w_in_burst + 1)
            with m.If(last):
                m.d.sync += [w_in_burst.eq(0), w_addr.eq(w_addr + (w_burst << log_beat)),
                             w_left.eq(w_left - w_burst)]

        # -- B: the command is done when everything is sent and every response is back ------
        with m.If(b_fire & (axi.bresp != Resp.OKAY)):
            m.d.sync += self.error.eq(1)
        finishing = Signal()
        m.d.comb += finishing.eq(busy & (aw_left == 0) & ~aw_valid & (w_left == 0) &
                                 ((bursts_open == 0) | ((bursts_open == 1) & b_fire)))
        m.d.sync += self.done.eq(0)
        with m.If(finishing):
            m.d.sync += [busy.eq(0), self.done.eq(1)]
        with m.If(self.clear):
            m.d.sync += self.error.eq(0)
        m.d.comb += self.idle.eq(~busy)
        return m
