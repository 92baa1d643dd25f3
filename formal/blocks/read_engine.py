"""AXI4 read engine (hw/axi/read_engine.py): the AR/R side of the memory engine.

Environment: the read client holds a command (VALID and payload) until it is taken and asks for
at least one beat (hw/mem_client.py); the AXI subordinate answers only IDs with beats still due
(the harness counts the beats issued per ID), holding each R beat until RREADY.

``ar``
    ARVALID held until ARREADY with ARADDR, ARLEN and ARID stable; every burst INCR,
    full-width, beat-aligned, at most 256 beats and inside its 4 KiB page.
``beats``
    The beats issued on AR never exceed the beats the client asked for, and equal them whenever
    the engine is idle; ``idle`` only with no beat due on any ID; every R beat goes to the client
    with its error flag (RRESP other than OKAY).

Covers: a burst that ends exactly at a 4 KiB boundary; every ID (tag-buffer slot) in flight at
once, the most commands the engine keeps in flight; idle again after a command.
"""

from amaranth.hdl import Mux, Signal

from avta.hw.axi.read_engine import ReadEngine
from avta.hw.axi.signatures import Resp, id_bits
from avta.hw.mem_client import ADDR_BITS, beat_count_bits
from avta.hw.top import READ_SLOTS

from ..harness import Check, Harness
from .axi_common import burst_rules, ends_at_page, held_until_ready

__all__ = ["checks"]

TAG_BITS = 2


class ReadEngineHarness(Harness):
    def __init__(self, cfg, faults, prop, slots=READ_SLOTS):
        super().__init__()
        self._cfg, self._faults, self._prop, self._slots = cfg, faults, prop, slots

    def properties(self, m):
        data_bits = self._cfg.axi_data_bits
        count_bits = beat_count_bits(data_bits)
        dut = ReadEngine(data_bits=data_bits, tag_shape=TAG_BITS, slots=self._slots,
                         faults=self._faults)
        m.submodules.dut = dut
        cmd, out, axi = dut.client.cmd, dut.client.data, dut.m_axi
        ids = id_bits(self._slots)

        # -- the client ----------------------------------------------------------------------
        c_valid, c_addr = self.input("cmd_valid"), self.input("cmd_addr", ADDR_BITS)
        c_beats, c_tag = self.input("cmd_beats", count_bits), self.input("cmd_tag", TAG_BITS)
        m.d.comb += [cmd.valid.eq(c_valid), cmd.p.addr.eq(c_addr), cmd.p.beats.eq(c_beats),
                     cmd.p.tag.eq(c_tag), out.ready.eq(self.input("data_ready"))]
        self.assume(m, ~c_valid | (c_beats != 0))
        was_waiting = Signal()
        before = [Signal.like(s) for s in (c_addr, c_beats, c_tag)]
        m.d.sync += [was_waiting.eq(c_valid & ~cmd.ready)]
        m.d.sync += [b.eq(s) for b, s in zip(before, (c_addr, c_beats, c_tag))]
        self.assume(m, ~was_waiting | c_valid)
        for b, s in zip(before, (c_addr, c_beats, c_tag)):
            self.assume(m, ~was_waiting | (s == b))

        # -- the subordinate -------------------------------------------------------------------
        r_valid, r_id, r_resp = self.input("rvalid"), self.input("rid", ids), self.input("rresp", 2)
        m.d.comb += [axi.arready.eq(self.input("arready")), axi.rvalid.eq(r_valid),
                     axi.rid.eq(r_id), axi.rresp.eq(r_resp), axi.rlast.eq(0),
                     axi.rdata.eq(self.input("rbit").replicate(data_bits))]
        due = [Signal(count_bits + 1, name=f"due{i}") for i in range(self._slots)]
        ar_fire, r_fire = axi.arvalid & axi.arready, axi.rvalid & axi.rready
        for i, d in enumerate(due):
            add = (ar_fire & (axi.arid == i)).as_unsigned()
            sub = (r_fire & (r_id == i)).as_unsigned()
            m.d.sync += d.eq(d + Mux(add, axi.arlen + 1, 0) - sub)
        due_of_rid = Signal(count_bits + 1)
        for i, d in enumerate(due):
            with m.If(r_id == i):
                m.d.comb += due_of_rid.eq(d)
        self.assume(m, ~r_valid | (due_of_rid != 0))
        r_waiting, r_before = Signal(), Signal(ids + 2)
        m.d.sync += [r_waiting.eq(r_valid & ~axi.rready), r_before.eq(r_id | (r_resp << ids))]
        self.assume(m, ~r_waiting | (r_valid & ((r_id | (r_resp << ids)) == r_before)))

        if self._prop == "ar":
            held_until_ready(self, m, axi.arvalid, axi.arready,
                             [axi.araddr, axi.arlen, axi.arid], name="ar")
            burst_rules(self, m, valid=axi.arvalid, addr=axi.araddr, length=axi.arlen,
                        size=axi.arsize, burst=axi.arburst, data_bits=data_bits)
            self.cover(m, axi.arvalid & ends_at_page(addr=axi.araddr, length=axi.arlen,
                                                     data_bits=data_bits))
            all_busy = Signal()
            m.d.comb += all_busy.eq(sum((d != 0).as_unsigned() for d in due) == self._slots)
            self.cover(m, all_busy)
            return

        # "beats": totals, idle, routing
        wide = count_bits + 8
        asked, issued = Signal(wide), Signal(wide)
        m.d.sync += [asked.eq(asked + Mux(cmd.valid & cmd.ready, c_beats, 0)),
                     issued.eq(issued + Mux(ar_fire, axi.arlen + 1, 0))]
        self.promise(m, issued <= asked)
        self.promise(m, ~dut.idle | (issued == asked))
        for d in due:
            self.promise(m, ~dut.idle | (d == 0))
        self.promise(m, out.valid == axi.rvalid)
        self.promise(m, ~out.valid | (out.p.err == (r_resp != Resp.OKAY)))
        worked = Signal()
        with m.If(r_fire):
            m.d.sync += worked.eq(1)
        self.cover(m, worked & dut.idle)


def checks(cfg, faults=frozenset()):
    return [
        Check("read_engine", "ar", "ARVALID held until ARREADY, payload stable; INCR, full "
              "width, ≤ 256 beats, never across 4 KiB",
              lambda: ReadEngineHarness(cfg, faults, "ar"), depth=12, prove=False,
              cover_depth=24),
        Check("read_engine", "beats", "beats issued = beats asked when idle (never more); "
              "idle only with nothing due; R beats reach the client with their error flag",
              lambda: ReadEngineHarness(cfg, faults, "beats"), depth=8, prove=False),
    ]
