"""AXI4 read engine (hw/axi/read_engine.py): the AR/R side of the memory engine.

Environment: the read client holds a command (VALID and payload) until it is taken and asks for
at least one beat (hw/mem_client.py); the AXI subordinate answers only IDs with beats still due
(the harness counts the beats issued per ID), holding each R beat until RREADY.

``ar``
    ARVALID held until ARREADY with ARADDR, ARLEN and ARID stable; every burst INCR,
    full-width, beat-aligned, at most 256 beats and inside its 4 KiB page. Proven by
    k-induction with two invariants over the splitter (read-only attributes of
    :class:`ReadEngine`): its next address is beat-aligned, and a command being split has
    beats left.
``beats``
    The beats issued on AR never exceed the beats the client asked for, and equal them whenever
    the engine is idle; ``idle`` only with no beat due on any ID; every R beat goes to the client
    with its error flag (RRESP other than OKAY). Proven by k-induction (k = 2, on z3: yices
    did not finish the induction step in 10 minutes) with invariants over the engine's state:
    the beats asked and not issued are the splitter's ``left`` plus the burst waiting in AR;
    per ID, the beats the slot still expects (``slot_due``) are those issued and not back plus
    those not issued; a slot is busy exactly while it expects beats.
``order``
    IDs in flight unique: a command's first burst takes an ID on which no command is in flight,
    and all its bursts use that ID and add up to exactly its beats; at most two commands are
    taken ahead of their first AR; every R beat arrives on an ID in flight and reaches the
    client with that command's tag and the next beat index (0, 1, ... in order within the
    command); ``idle`` only with nothing queued or in flight. Covers: two commands in flight
    on different IDs, a later beat of one delivered; a command completed. Proven by
    k-induction (k = 2, z3; the base case checked to depth 6 first) with invariants tying the
    harness's queued commands, the command being issued and the commands in flight to the
    splitter, the AR register and the tag-buffer slots (``_order_invariants``).

Covers (``ar``, ``beats``): a burst that ends exactly at a 4 KiB boundary; every ID (tag-buffer slot) in flight at
once, the most commands the engine keeps in flight; idle again after a command.
"""

from amaranth.hdl import Array, Mux, Signal
from amaranth.utils import exact_log2

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
            # Induction invariants over the splitter (read-only attributes): its next burst
            # address stays beat-aligned, and a command being split has beats left.
            self.promise(m, dut.addr[:exact_log2(data_bits // 8)] == 0)
            self.promise(m, ~dut.active | (dut.left != 0))
            self.cover(m, axi.arvalid & ends_at_page(addr=axi.araddr, length=axi.arlen,
                                                     data_bits=data_bits))
            all_busy = Signal()
            m.d.comb += all_busy.eq(sum((d != 0).as_unsigned() for d in due) == self._slots)
            self.cover(m, all_busy)
            return

        if self._prop == "order":
            self._order(m, dut, ar_fire, r_fire, c_tag, c_beats, count_bits, due)
            return

        # "beats": totals, idle, routing. ``pending`` = beats asked − beats issued on AR, one
        # bit wider than it can grow (two commands' beats): "never more issued than asked" is
        # "pending never below 0", which a wrap would show as a value above the bound.
        wide = count_bits + 2
        pending = Signal(wide)
        m.d.sync += pending.eq(pending + Mux(cmd.valid & cmd.ready, c_beats, 0)
                               - Mux(ar_fire, axi.arlen + 1, 0))
        self.promise(m, pending < 2 << count_bits)
        self.promise(m, ~dut.idle | (pending == 0))
        for d in due:
            self.promise(m, ~dut.idle | (d == 0))
        self.promise(m, out.valid == axi.rvalid)
        # Induction invariants over the engine's state (read-only attributes): the beats not yet
        # issued are the splitter's ``left`` plus the burst waiting in AR; per ID, the beats
        # the slot still expects are those issued and not yet back (the subordinate's ``due``)
        # plus those not yet issued; a slot is busy exactly while it expects beats.
        in_ar = Mux(axi.arvalid, axi.arlen + 1, 0)
        self.promise(m, dut.active == (dut.left != 0))
        self.promise(m, pending == dut.left + in_ar)
        for i, d in enumerate(due):
            unissued = (Mux(dut.active & (dut.slot == i), dut.left, 0)
                        + Mux(axi.arvalid & (axi.arid == i), axi.arlen + 1, 0))
            self.promise(m, dut.slot_due[i] == d + unissued)
            self.promise(m, dut.slot_busy[i] == (dut.slot_due[i] != 0))
        self.promise(m, ~out.valid | (out.p.err == (r_resp != Resp.OKAY)))
        worked = Signal()
        with m.If(r_fire):
            m.d.sync += worked.eq(1)
        self.cover(m, worked & dut.idle)

    def _order(self, m, dut, ar_fire, r_fire, c_tag, c_beats, count_bits, due):
        """Each command's bursts on one ID that no other command in flight has, its beats
        delivered with its tag, numbered 0, 1, ... in order, exactly as many as it asked."""
        cmd, out, axi = dut.client.cmd, dut.client.data, dut.m_axi
        # Commands taken whose first burst has not gone out on AR yet: at most two (the
        # engine takes the next command once the previous one's last burst is loaded into AR,
        # which may still wait for ARREADY behind an older one).
        q_valid = [Signal(name=f"q{j}_valid") for j in range(2)]
        q_tag = [Signal(TAG_BITS, name=f"q{j}_tag") for j in range(2)]
        q_beats = [Signal(count_bits, name=f"q{j}_beats") for j in range(2)]
        issuing_left = Signal(count_bits)     # beats of the command on AR still to go out
        issuing_id = Signal.like(axi.arid)
        # Per ID: the command in flight on it (tag, next beat, beats still to come).
        flight_tag = [Signal(TAG_BITS, name=f"id{i}_tag") for i in range(self._slots)]
        flight_beat = [Signal(count_bits, name=f"id{i}_beat") for i in range(self._slots)]
        flight_left = [Signal(count_bits, name=f"id{i}_left") for i in range(self._slots)]

        beats = axi.arlen + 1
        first = ar_fire & (issuing_left == 0)      # the burst starts the oldest queued command
        push = cmd.valid & cmd.ready
        self.promise(m, ~first | q_valid[0])
        self.promise(m, ~first | (beats <= q_beats[0]))
        self.promise(m, ~(ar_fire & ~first) | ((axi.arid == issuing_id) &
                                               (beats <= issuing_left)))
        kept = [Mux(first, q_valid[1], q_valid[0]), Mux(first, 0, q_valid[1])]
        kept_tag = [Mux(first, q_tag[1], q_tag[0]), q_tag[1]]
        kept_beats = [Mux(first, q_beats[1], q_beats[0]), q_beats[1]]
        self.promise(m, ~push | ~kept[1])          # never a third command ahead of AR
        m.d.sync += [q_valid[0].eq(kept[0] | push), q_valid[1].eq(kept[1] | (push & kept[0])),
                     q_tag[0].eq(Mux(kept[0], kept_tag[0], c_tag)),
                     q_beats[0].eq(Mux(kept[0], kept_beats[0], c_beats)),
                     q_tag[1].eq(Mux(kept[1], kept_tag[1], c_tag)),
                     q_beats[1].eq(Mux(kept[1], kept_beats[1], c_beats))]
        with m.If(first):
            m.d.sync += [issuing_left.eq(q_beats[0] - beats), issuing_id.eq(axi.arid)]
        with m.Elif(ar_fire):
            m.d.sync += issuing_left.eq(issuing_left - beats)

        for i in range(self._slots):
            start_i = first & (axi.arid == i)
            beat_i = r_fire & (axi.rid == i)
            # The ID a new command takes has no command in flight (IDs in flight unique).
            self.promise(m, ~start_i | (flight_left[i] == 0))
            # A beat arrives only on an ID in flight and reaches the client as that command's
            # next beat, with its tag.
            self.promise(m, ~beat_i | ((flight_left[i] != 0) & (out.p.tag == flight_tag[i]) &
                                       (out.p.beat == flight_beat[i])))
            with m.If(start_i):
                m.d.sync += [flight_tag[i].eq(q_tag[0]), flight_beat[i].eq(0),
                             flight_left[i].eq(q_beats[0])]
            with m.Elif(beat_i):
                m.d.sync += [flight_beat[i].eq(flight_beat[i] + 1),
                             flight_left[i].eq(flight_left[i] - 1)]
        nothing = ~q_valid[0] & (issuing_left == 0)
        for left in flight_left:
            nothing &= left == 0
        self.promise(m, ~dut.idle | nothing)

        self._order_invariants(m, dut, q_valid, q_tag, q_beats, issuing_left, issuing_id,
                               flight_tag, flight_beat, flight_left, due)

        # Two commands in flight on different IDs, the second's beats before the first's last.
        two = Signal()
        m.d.comb += two.eq(sum((left != 0).as_unsigned() for left in flight_left) >= 2)
        later_beat = Signal()
        for i in range(self._slots):
            with m.If(r_fire & (axi.rid == i) & (flight_beat[i] != 0)):
                m.d.comb += later_beat.eq(1)
        self.cover(m, two & later_beat)
        self.cover(m, dut.idle & (flight_tag[1] != 0) & (flight_beat[1] == 2))

    def _order_invariants(self, m, dut, q_valid, q_tag, q_beats, left_to_issue, issuing_id,
                          flight_tag, flight_beat, flight_left, due):
        """Induction invariants of ``order``: the harness's commands ahead of AR, the command
        being issued and the commands in flight are the engine's splitter, AR register and
        tag-buffer slots (read-only attributes), case by case on what the AR register holds."""
        axi = dut.m_axi
        active, slot, left = dut.active, dut.slot, dut.left
        ar_valid, ar_id, ar_beats = axi.arvalid, axi.arid, axi.arlen + 1
        slot_tag, slot_beat = Array(dut.slot_tag), Array(dut.slot_beat)
        slot_due = Array(dut.slot_due)
        first_in_ar = ar_valid & (left_to_issue == 0)   # the first burst of queued command 0
        self.promise(m, active == (left != 0))
        self.promise(m, ~q_valid[1] | q_valid[0])
        # AR empty: the splitter holds queued command 0 untouched, or the rest of the command
        # being issued, or nothing.
        self.promise(m, ar_valid | (active & q_valid[0] & ~q_valid[1] & (left == q_beats[0]) &
                                    (left_to_issue == 0))
                     | (active & ~q_valid[0] & (left_to_issue == left) & (issuing_id == slot))
                     | (~active & ~q_valid[0] & (left_to_issue == 0)))
        # AR holds the first burst of queued command 0: the splitter holds the rest of it, or
        # queued command 1 untouched, or nothing.
        self.promise(m, ~first_in_ar | (q_valid[0] & (
            (active & (slot == ar_id) & ~q_valid[1] & (left + ar_beats == q_beats[0]))
            | (active & (slot != ar_id) & q_valid[1] & (left == q_beats[1]) &
               (ar_beats == q_beats[0]))
            | (~active & ~q_valid[1] & (ar_beats == q_beats[0])))))
        # AR holds a later burst of the command being issued: the splitter holds the rest of
        # it, or queued command 0 untouched, or nothing.
        self.promise(m, ~(ar_valid & ~first_in_ar) | ((ar_id == issuing_id) & (
            (active & (slot == issuing_id) & ~q_valid[0] & (left + ar_beats == left_to_issue))
            | (active & (slot != issuing_id) & q_valid[0] & ~q_valid[1] &
               (left == q_beats[0]) & (left_to_issue == ar_beats))
            | (~active & ~q_valid[0] & (left_to_issue == ar_beats)))))
        # The queued commands' slots: taken, untouched, with their tag and beats.
        q_slot = [Mux(first_in_ar, ar_id, slot), slot]
        for j in range(2):
            self.promise(m, ~q_valid[j] | ((slot_tag[q_slot[j]] == q_tag[j]) &
                                           (slot_due[q_slot[j]] == q_beats[j]) &
                                           (slot_beat[q_slot[j]] == 0)))
        for i, d in enumerate(due):
            busy = dut.slot_busy[i]
            self.promise(m, busy == (dut.slot_due[i] != 0))
            in_flight = flight_left[i] != 0
            self.promise(m, ~in_flight | (busy & (dut.slot_tag[i] == flight_tag[i]) &
                                          (dut.slot_beat[i] == flight_beat[i]) &
                                          (dut.slot_due[i] == flight_left[i])))
            # Beats still to come = beats on AR not back + beats not yet on AR.
            issuing = (left_to_issue != 0) & (issuing_id == i)
            self.promise(m, flight_left[i] == d + Mux(issuing, left_to_issue, 0))
            queued = (q_valid[0] & (q_slot[0] == i)) | (q_valid[1] & (q_slot[1] == i))
            self.promise(m, (busy & ~in_flight) == queued)


def checks(cfg, faults=frozenset()):
    return [
        Check("read_engine", "ar", "ARVALID held until ARREADY, payload stable; INCR, full "
              "width, ≤ 256 beats, never across 4 KiB",
              lambda: ReadEngineHarness(cfg, faults, "ar"), depth=12, cover_depth=24),
        Check("read_engine", "beats", "beats issued = beats asked when idle (never more); "
              "idle only with nothing due; R beats reach the client with their error flag",
              lambda: ReadEngineHarness(cfg, faults, "beats"), depth=2, cover_depth=8,
              solver="z3"),
        Check("read_engine", "order", "IDs in flight unique; each R beat on an ID in flight "
              "goes to its command with its tag and the next beat index; each command gets "
              "exactly its beats, in order", lambda: ReadEngineHarness(cfg, faults, "order"),
              depth=2, base_depth=6, cover_depth=14, solver="z3",
              # CPU seconds: 513-860 s of wall clock measured on tiny (docs/formal.md).
              budget=1800),
    ]
