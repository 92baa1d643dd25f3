"""AXI4-Lite control registers (hw/axi/vcr.py; the map in docs/architecture.md, "Control
registers", from :data:`avta.isa.registers.REGISTERS`).

Environment: a host that follows AXI4-Lite: it holds AWVALID, WVALID and ARVALID with their
address, data and strobes until they are taken (AMBA AXI A3.2.1); it may send AW and W in
either order and take B and R whenever it likes. The core's status and values (busy, finish,
error, CYCLES, the counters, ERR_CODE, ERR_INSN) change freely in every cycle.

``write``
    Exactly one write response per request: B only once both AW and W of a write are taken,
    at most one write between AW/W and its B (the registers take one write at a time), and the
    B is raised the cycle after the pair is complete; BVALID and BRESP held until BREADY.
``read``
    Exactly one read response per request: RVALID exactly in the cycles between an AR and its
    R, raised the cycle after AR; RVALID, RDATA and RRESP held until RREADY.
``regs``
    The registers read back what the documentation says. One arbitrary register (the solver
    picks its word offset) is modelled: a writable register holds what was written to it,
    byte by byte under WSTRB, and nothing else changes it; every read returns, at the AR's
    cycle, the writable register's value, the core's value for CYCLES, the counters,
    ERR_CODE and ERR_INSN, CONFIG_ID and VERSION's constants, and for CTRL busy, finish and
    error at their :class:`~avta.isa.registers.Ctrl` bits with every other bit 0, answered
    OKAY; an unmapped offset answers SLVERR. A write answers OKAY to CTRL and the writable
    registers and SLVERR to the rest; a CTRL write with bit 0 set launches (one-cycle pulse)
    only when the core is not busy.
"""

from amaranth.hdl import Cat, Const, Mux, Signal

from avta.hw.axi.signatures import Resp
from avta.hw.axi.vcr import BASE_NAMES, WORD, ControlRegisters
from avta.isa.registers import COUNTER_NAMES, REGISTERS, Ctrl
from avta.version import HW_VERSION

from ..harness import Check, Harness
from .axi_common import held_until_ready

__all__ = ["checks", "WRITABLE"]

#: The registers the host writes and reads back (docs/architecture.md: access R/W, except CTRL,
#: whose write launches and whose read shows the status).
WRITABLE = ("INSN_COUNT", "INSN_ADDR") + BASE_NAMES
#: The low address bits the registers decode (a 256-byte window of 32-bit words).
WINDOW_BITS = 8
_WORD_BYTES = WORD // 8


def _word(addr):
    """The word offset inside the window (the low two address bits do not select)."""
    return addr[2:WINDOW_BITS]


class VcrHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._faults, self._prop = cfg, faults, prop

    def _host_holds(self, m, valid, ready, payload, *, name):
        """Assume (AMBA AXI A3.2.1, the host's side): once VALID is up without READY, VALID
        and the payload stay in the next cycle."""
        waiting = Signal(name=f"{name}_waiting")
        before = Signal(len(payload), name=f"{name}_before")
        m.d.sync += [waiting.eq(valid & ~ready), before.eq(payload)]
        self.assume(m, ~waiting | (valid & (payload == before)))

    def properties(self, m):
        dut = ControlRegisters(cfg=self._cfg, faults=self._faults)
        m.submodules.dut = dut
        bus = dut.s_axil
        aw_valid, aw_addr = self.input("awvalid"), self.input("awaddr", WORD)
        w_valid, w_data = self.input("wvalid"), self.input("wdata", WORD)
        w_strb = self.input("wstrb", _WORD_BYTES)
        ar_valid, ar_addr = self.input("arvalid"), self.input("araddr", WORD)
        m.d.comb += [bus.awvalid.eq(aw_valid), bus.awaddr.eq(aw_addr), bus.wvalid.eq(w_valid),
                     bus.wdata.eq(w_data), bus.wstrb.eq(w_strb), bus.arvalid.eq(ar_valid),
                     bus.araddr.eq(ar_addr), bus.bready.eq(self.input("bready")),
                     bus.rready.eq(self.input("rready"))]
        self._host_holds(m, aw_valid, bus.awready, aw_addr, name="aw")
        self._host_holds(m, w_valid, bus.wready, Cat(w_data, w_strb), name="w")
        self._host_holds(m, ar_valid, bus.arready, ar_addr, name="ar")
        status = {"busy": self.input("busy"), "finished": self.input("finished"),
                  "error": self.input("error")}
        values = {"cycles": self.input("cycles", WORD), "err_code": self.input("err_code", WORD),
                  "err_insn": self.input("err_insn", WORD)}
        counters = [self.input(f"counter{i}", WORD) for i in range(len(COUNTER_NAMES))]
        m.d.comb += [getattr(dut, name).eq(sig) for name, sig in {**status, **values}.items()]
        m.d.comb += [dut.counters[i].eq(sig) for i, sig in enumerate(counters)]

        aw_fire, w_fire = bus.awvalid & bus.awready, bus.wvalid & bus.wready
        b_fire, ar_fire = bus.bvalid & bus.bready, bus.arvalid & bus.arready
        r_fire = bus.rvalid & bus.rready
        # Requests taken and not yet answered (three bits: a wrap below zero reads 7).
        aw_open, w_open, ar_open = (Signal(3, name=n) for n in ("aw_open", "w_open", "ar_open"))
        m.d.sync += [aw_open.eq(aw_open + aw_fire - b_fire), w_open.eq(w_open + w_fire - b_fire),
                     ar_open.eq(ar_open + ar_fire - r_fire)]
        # A write whose address and data are both in, still without its response.
        pair = (aw_open == 1) & (w_open == 1) & ~bus.bvalid
        # Strengthening (so that k-induction closes): the requests the harness counts open are
        # the ones the block holds, an address or data register while it waits for its pair,
        # then BVALID.
        aw_full, w_full = dut.aw_full, dut.w_full
        self.promise(m, aw_open == (aw_full | bus.bvalid))
        self.promise(m, w_open == (w_full | bus.bvalid))
        self.promise(m, ~bus.bvalid | ~(aw_full | w_full))

        if self._prop == "write":
            self.promise(m, (aw_open <= 1) & (w_open <= 1))
            self.promise(m, ~bus.bvalid | ((aw_open == 1) & (w_open == 1)))
            was_pair = Signal()
            m.d.sync += was_pair.eq(pair)
            self.promise(m, ~(was_pair & pair))
            held_until_ready(self, m, bus.bvalid, bus.bready, [bus.bresp], name="b")
            self.cover(m, (w_open == 1) & (aw_open == 0))       # W before AW
            self.cover(m, (aw_open == 1) & (w_open == 0))       # AW before W
            b_waited = Signal()
            m.d.sync += b_waited.eq(bus.bvalid & ~bus.bready)
            self.cover(m, b_waited & b_fire)                    # B held, then taken
        elif self._prop == "read":
            self.promise(m, ar_open <= 1)
            self.promise(m, bus.rvalid == (ar_open == 1))
            held_until_ready(self, m, bus.rvalid, bus.rready, [bus.rdata, bus.rresp], name="r")
            r_waited = Signal()
            m.d.sync += r_waited.eq(bus.rvalid & ~bus.rready)
            self.cover(m, r_waited & r_fire)                    # R held, then taken
            answered = Signal()
            with m.If(r_fire):
                m.d.sync += answered.eq(1)
            self.cover(m, answered & r_fire)                    # a second read answered
        else:
            self._registers(m, dut, bus, pair, status, values, counters,
                            aw_fire=aw_fire, w_fire=w_fire, ar_fire=ar_fire)

    def _registers(self, m, dut, bus, pair, status, values, counters, *, aw_fire,
                   w_fire, ar_fire):
        cfg = self._cfg
        words = {name: offset // _WORD_BYTES for name, offset in REGISTERS.items()}
        # The host's write as the harness saw it taken (the pair completes it).
        wr_word, wr_data = Signal(WINDOW_BITS - 2), Signal(WORD)
        wr_strb = Signal(_WORD_BYTES)
        with m.If(aw_fire):
            m.d.sync += wr_word.eq(_word(bus.awaddr))
        with m.If(w_fire):
            m.d.sync += [wr_data.eq(bus.wdata), wr_strb.eq(bus.wstrb)]
        # Strengthening: what the block holds of a waiting write is what the host sent.
        self.promise(m, ~dut.aw_full | (_word(dut.aw_addr) == wr_word))
        self.promise(m, ~dut.w_full | ((dut.w_data == wr_data) & (dut.w_strb == wr_strb)))

        # The tracked register: its value as the documentation says it must be.
        track = self.constant(m, "track", WINDOW_BITS - 2)
        model = Signal(WORD)
        with m.If(pair & (wr_word == track)):
            for byte in range(_WORD_BYTES):
                with m.If(wr_strb[byte]):
                    m.d.sync += model.word_select(byte, 8).eq(wr_data.word_select(byte, 8))
        for name in WRITABLE:
            self.promise(m, (track != words[name]) | (getattr(dut, name.lower()) == model))

        # Write responses and launch, one cycle after the pair is complete.
        writable = Cat(wr_word == words[n] for n in WRITABLE + ("CTRL",)).any()
        want_bresp = Signal(2)
        launch_bit = Ctrl.LAUNCH.position
        want_launch = Signal()
        m.d.sync += want_launch.eq(pair & (wr_word == words["CTRL"]) & wr_strb[launch_bit // 8]
                                   & wr_data[launch_bit] & ~status["busy"])
        with m.If(pair):
            m.d.sync += want_bresp.eq(Mux(writable, Resp.OKAY, Resp.SLVERR))
        self.promise(m, dut.launch == want_launch)
        self.promise(m, ~bus.bvalid | (bus.bresp == want_bresp))

        # Read data: each register's value in the AR's cycle.
        ctrl = Signal(WORD)
        for bit, name in ((Ctrl.BUSY, "busy"), (Ctrl.FINISH, "finished"), (Ctrl.ERROR, "error")):
            m.d.comb += ctrl[bit.position].eq(status[name])
        shown = {words["CTRL"]: ctrl, words["CYCLES"]: values["cycles"],
                 words["ERR_CODE"]: values["err_code"], words["ERR_INSN"]: values["err_insn"],
                 words["CONFIG_ID"]: Const(cfg.config_id, WORD),
                 words["VERSION"]: Const(HW_VERSION, WORD)}
        shown.update({words["COUNTERS"] + i: sig for i, sig in enumerate(counters)})
        shown.update({words[name]: getattr(dut, name.lower()) for name in WRITABLE})
        want_rdata, want_rresp = Signal(WORD), Signal(2)
        with m.If(ar_fire):
            m.d.sync += want_rresp.eq(Resp.SLVERR)
            with m.Switch(_word(bus.araddr)):
                for word, value in shown.items():
                    with m.Case(word):
                        m.d.sync += [want_rdata.eq(value), want_rresp.eq(Resp.OKAY)]
        self.promise(m, ~bus.rvalid | (bus.rresp == want_rresp))
        self.promise(m, ~bus.rvalid | (bus.rresp != Resp.OKAY) | (bus.rdata == want_rdata))

        # Covers: the tracked register written in part and read back; a launch; a launch
        # refused while busy; a write to a read-only register refused.
        read_track = Signal()
        m.d.sync += read_track.eq(ar_fire & (_word(bus.araddr) == track))
        partial = Signal()
        with m.If(pair & (wr_word == track) & (wr_strb != 0) & (wr_strb != 0b1111)):
            m.d.sync += partial.eq(1)
        self.cover(m, partial & (track == words["INSN_ADDR"]) & read_track & (model != 0))
        self.cover(m, dut.launch)
        self.cover(m, pair & (wr_word == words["CTRL"]) & wr_data[launch_bit]
                   & wr_strb[launch_bit // 8] & status["busy"])
        self.cover(m, bus.bvalid & (bus.bresp == Resp.SLVERR))


def checks(cfg, faults=frozenset()):
    return [
        Check("vcr", "write", "one B per AW + W, the cycle after both are in; one write at a "
              "time; BVALID and BRESP held until BREADY",
              lambda: VcrHarness(cfg, faults, "write"), depth=8),
        Check("vcr", "read", "one R per AR, the cycle after it; RVALID, RDATA and RRESP held "
              "until RREADY", lambda: VcrHarness(cfg, faults, "read"), depth=8),
        Check("vcr", "regs", "registers read back as documented: writes land byte by byte, "
              "read-only values and IDs, CTRL status bits and launch only when idle, SLVERR "
              "for the rest", lambda: VcrHarness(cfg, faults, "regs"), depth=8),
    ]
