"""AXI4 write engine (hw/axi/write_engine.py): the AW/W/B side of the memory engine.

Environment: the write client holds a command until it is taken, asks for at least one beat and
offers beats freely; the AXI subordinate answers a B only for a burst whose address it has
taken.

``aw``
    AWVALID held until AWREADY with AWADDR and AWLEN stable; every burst INCR, full-width,
    beat-aligned, at most 256 beats and inside its 4 KiB page; never more than
    ``max_outstanding`` bursts between AW and B. Proven by k-induction with invariants over the
    engine's state (read-only attributes of :class:`WriteEngine`): the AW splitter's address is
    beat-aligned, and its open-burst count is the bursts past AW plus the one waiting in AW.
``w``
    Each burst gets exactly AWLEN + 1 W beats with WLAST on the last one only: one arbitrary
    burst (the solver picks which) is tracked from its AW to its last W beat.

Covers: a burst that ends exactly at a 4 KiB boundary; two bursts awaiting their response.
"""

from amaranth.hdl import Signal
from amaranth.utils import exact_log2

from avta.hw.axi.write_engine import WriteEngine
from avta.hw.mem_client import ADDR_BITS, beat_count_bits

from ..harness import Check, Harness
from .axi_common import burst_rules, ends_at_page, held_until_ready

__all__ = ["checks"]

#: Bursts between AW and B the engine is built with for the check (the core's engine allows 16;
#: the limit logic is the same comparison at any value, and 2 is reached in a few cycles).
MAX_OUTSTANDING = 2
#: Width of the burst ranks the ``w`` check counts (the tracked burst is among the first 2^n).
RANK_BITS = 4


class WriteEngineHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._faults, self._prop = cfg, faults, prop

    def properties(self, m):
        data_bits = self._cfg.axi_data_bits
        dut = WriteEngine(data_bits=data_bits, max_outstanding=MAX_OUTSTANDING,
                          faults=self._faults)
        m.submodules.dut = dut
        cmd, beats, resp, axi = dut.client.cmd, dut.client.data, dut.client.resp, dut.m_axi

        c_valid, c_addr = self.input("cmd_valid"), self.input("cmd_addr", ADDR_BITS)
        c_beats = self.input("cmd_beats", beat_count_bits(data_bits))
        m.d.comb += [cmd.valid.eq(c_valid), cmd.p.addr.eq(c_addr), cmd.p.beats.eq(c_beats),
                     beats.valid.eq(self.input("data_valid")),
                     beats.p.data.eq(self.input("data_bit").replicate(data_bits)),
                     beats.p.strb.eq(-1), resp.ready.eq(self.input("resp_ready")),
                     axi.awready.eq(self.input("awready")), axi.wready.eq(self.input("wready"))]
        self.assume(m, ~c_valid | (c_beats != 0))
        was_waiting, before = Signal(), [Signal.like(c_addr), Signal.like(c_beats)]
        m.d.sync += [was_waiting.eq(c_valid & ~cmd.ready), before[0].eq(c_addr),
                     before[1].eq(c_beats)]
        self.assume(m, ~was_waiting | (c_valid & (c_addr == before[0]) &
                                       (c_beats == before[1])))

        b_valid = self.input("bvalid")
        m.d.comb += [axi.bvalid.eq(b_valid), axi.bresp.eq(self.input("bresp", 2))]
        open_bursts = Signal(8)
        aw_fire, b_fire = axi.awvalid & axi.awready, axi.bvalid & axi.bready
        m.d.sync += open_bursts.eq(open_bursts + aw_fire - b_fire)
        self.assume(m, ~b_valid | (open_bursts != 0))

        if self._prop == "aw":
            held_until_ready(self, m, axi.awvalid, axi.awready, [axi.awaddr, axi.awlen],
                             name="aw")
            burst_rules(self, m, valid=axi.awvalid, addr=axi.awaddr, length=axi.awlen,
                        size=axi.awsize, burst=axi.awburst, data_bits=data_bits)
            self.promise(m, open_bursts <= MAX_OUTSTANDING)
            # Induction invariants over the engine's state (read-only attributes): the AW
            # splitter's address stays beat-aligned, and the engine counts a burst as open
            # from the cycle it is loaded into AW.
            log_beat = exact_log2(data_bits // 8)
            self.promise(m, dut.aw_addr[:log_beat] == 0)
            self.promise(m, dut.bursts_open == open_bursts + axi.awvalid)
            self.promise(m, dut.bursts_open <= MAX_OUTSTANDING)
            self.cover(m, axi.awvalid & ends_at_page(addr=axi.awaddr, length=axi.awlen,
                                                     data_bits=data_bits))
            self.cover(m, open_bursts == MAX_OUTSTANDING)
            return

        # "w": the tracked burst's W beats
        track = self.constant(m, "track", RANK_BITS)
        aws, ws = Signal(RANK_BITS + 1), Signal(RANK_BITS + 1)
        w_fire = axi.wvalid & axi.wready
        with m.If(aw_fire & ~aws[-1]):
            m.d.sync += aws.eq(aws + 1)
        with m.If(w_fire & axi.wlast & ~ws[-1]):
            m.d.sync += ws.eq(ws + 1)
        length, known = Signal(8), Signal()
        with m.If(aw_fire & (aws == track)):
            m.d.sync += [length.eq(axi.awlen), known.eq(1)]
        sent = Signal(9)        # W beats of the tracked burst so far
        in_tracked = ws == track
        with m.If(w_fire & in_tracked):
            m.d.sync += sent.eq(sent + 1)
        # W may run ahead of AW (AXI allows it): a beat after the AW is checked against AWLEN
        # at once, the beats before it when the AW comes.
        self.promise(m, ~(w_fire & in_tracked & known) | (axi.wlast == (sent == length)))
        aw_tracked = aw_fire & (aws == track)
        done = ws > track
        self.promise(m, ~(aw_tracked & done) | (sent == axi.awlen + 1))
        self.promise(m, ~(aw_tracked & ~done) | (sent <= axi.awlen))
        self.cover(m, w_fire & in_tracked & axi.wlast & (length != 0))


def checks(cfg, faults=frozenset()):
    return [
        Check("write_engine", "aw", "AWVALID held until AWREADY, payload stable; INCR, full "
              f"width, ≤ 256 beats, never across 4 KiB; ≤ max_outstanding ({MAX_OUTSTANDING}) "
              "bursts awaiting B",
              lambda: WriteEngineHarness(cfg, faults, "aw"), depth=12, cover_depth=12),
        Check("write_engine", "w", "exactly AWLEN + 1 W beats per burst, WLAST on the last only "
              "(one arbitrary burst tracked)",
              lambda: WriteEngineHarness(cfg, faults, "w"), depth=12, prove=False),
    ]
