"""Fetch and decode (hw/core/fetch.py, hw/core/decode.py): the instruction stream, checked and
dispatched to the stages' queues (docs/isa.md §3, §3.5).

``decode``
    :class:`InsnDecode` alone, for every 128-bit instruction: its error is the lowest code of
    the decode rules of docs/isa.md §3.5 (1 illegal opcode 5–7, 2 ALU ``alu_opcode`` 7, 3, 4,
    5, 6, 8), or NONE, and a legal instruction goes to the stage docs/isa.md §3 names (a LOAD
    by its memory type, STORE to store, GEMM, ALU and FINISH to compute); against the
    reference of :mod:`avta.formal.reference`. Covers: every code, every stage.
``dispatch``
    The whole :class:`Fetch` (its memory side, ring buffer, decode and dispatch) at a small
    ring (:data:`RING` slots, :data:`BURST` instructions per read command: the logic is the
    same at the core's 32 and 8). Environment: one run from power-on at an arbitrary 16-byte
    aligned INSN_ADDR and an arbitrary INSN_COUNT; ``scan`` may rise at any time and then
    stays; the queues take entries whenever they like; the memory is free data under the
    memory-engine client's rules (:mod:`avta.hw.mem_client`): it answers only commands it
    took, each with exactly its beats, in order within the command, with the command's tag,
    commands interleaved and completed in any order, each beat held until taken, any beat may
    carry an error. One arbitrary instruction index k (the solver picks it) has arbitrary
    contents, the same in every read of its address. Promises: at most one dispatch per cycle;
    the instructions are dispatched in program order, each exactly once (the n-th dispatch
    carries index n), none in scan mode and none after an error; when fetch says it has
    checked the stream without error or scan, all INSN_COUNT were dispatched; instruction k,
    when dispatched, carries the instruction read from INSN_ADDR + 16k to the queue of the
    stage the reference names, and is legal; when fetch stops at k, the code is 9 if a beat
    of k had an error, else the reference's decode error (never NONE).
``order``
    The same harness without the tracked instruction: at most one dispatch per cycle, the n-th
    dispatch carries index n, none in scan mode or after an error, all INSN_COUNT when fetch
    has checked the stream without error or scan, and a stopped fetch names the next index.
    Proven by k-induction with invariants over fetch's own pointers (``head``, ``d_valid``,
    ``d_index``, ``q_valid``, ``q_index``, ``stopped``, ``running``: what was taken from the
    ring less the ones in decode and in the dispatch register is what was dispatched). ``dispatch`` is only bounded: its promise about k's
    contents would need invariants over the ring's memory, which a harness cannot name.
"""

from amaranth.hdl import Cat, Mux, Signal
from amaranth.utils import exact_log2

from avta.hw.core.decode import InsnDecode
from avta.hw.core.fetch import Fetch
from avta.hw.core.queue import INDEX_BITS
from avta.hw.mem_client import ADDR_BITS
from avta.isa.encoding import INSN_BYTES
from avta.isa.enums import ErrorCode, Stage
from avta.isa.formats import ALU_OPCODE_BITS, INSN_BITS
from avta.isa.layout import layouts
from avta.isa.legality import alu_ops

from ..harness import Check, Harness
from ..reference import insn_error, insn_stage
from .read_memory import serve_reads

__all__ = ["checks", "RING", "BURST"]

#: Fetch's ring buffer and read-command size in the check (the core uses 32 and 8).
RING, BURST = 4, 2
#: The decode-time codes (docs/isa.md §3.5) the ``decode`` covers reach.
DECODE_CODES = (ErrorCode.ILLEGAL_OPCODE, ErrorCode.ILLEGAL_ALU_OPCODE,
                ErrorCode.ILLEGAL_MEMORY_TYPE, ErrorCode.ILLEGAL_PAD_VALUE,
                ErrorCode.ILLEGAL_STORE, ErrorCode.TOKEN_WRONG_STAGE,
                ErrorCode.FINISH_WITH_TOKEN)


def decode_codes(cfg):
    """The decode errors an instruction can have at ``cfg``: :data:`DECODE_CODES`, less code 2
    where every ALU opcode is legal (``ALU_SCALE`` 1 or 2, docs/isa.md §3.5)."""
    every_alu_op = len(alu_ops(cfg)) == 1 << ALU_OPCODE_BITS
    return tuple(code for code in DECODE_CODES
                 if not (every_alu_op and code == ErrorCode.ILLEGAL_ALU_OPCODE))


class DecodeHarness(Harness):
    def __init__(self, cfg, faults):
        super().__init__()
        self._cfg, self._faults = cfg, faults

    def properties(self, m):
        m.submodules.dut = dut = InsnDecode(cfg=self._cfg, faults=self._faults)
        insn = self.input("insn", INSN_BITS)
        m.d.comb += dut.insn.eq(insn)
        view = layouts(self._cfg).insn(insn)
        error, stage = insn_error(m, view, name="ref_error", cfg=self._cfg), insn_stage(m, view, name="ref_stage")
        self.promise(m, dut.error == error)
        self.promise(m, (error != ErrorCode.NONE) | (dut.stage == stage))
        for code in decode_codes(self._cfg):
            self.cover(m, dut.error == code)
        for s in Stage:
            self.cover(m, (dut.error == ErrorCode.NONE) & (dut.stage == s))


class FetchHarness(Harness):
    def __init__(self, cfg, faults, prop):
        super().__init__()
        self._cfg, self._faults, self._prop = cfg, faults, prop

    def properties(self, m):
        cfg = self._cfg
        dut = Fetch(cfg=cfg, ring=RING, burst=BURST, faults=self._faults)
        m.submodules.dut = dut
        bus = cfg.axi_data_bytes
        log_bus, log_insn = exact_log2(bus), exact_log2(INSN_BYTES)

        # -- one run from power-on ----------------------------------------------------------------
        first = ~self.started(m)
        insn_addr = self.constant(m, "insn_addr", ADDR_BITS)
        count = self.constant(m, "insn_count", INDEX_BITS)
        # (each read command carries at least one instruction: at most RING commands are open)
        self.assume(m, insn_addr[:log_insn] == 0)
        scan, scanned = self.input("scan"), Signal()
        m.d.sync += scanned.eq(scanned | scan)
        self.assume(m, ~scanned | scan)
        m.d.comb += [dut.start.eq(first), dut.insn_addr.eq(insn_addr), dut.insn_count.eq(count),
                     dut.scan.eq(scan)]
        ports = {Stage.LOAD: dut.ld_insn, Stage.COMPUTE: dut.cp_insn, Stage.STORE: dut.st_insn}
        for stage, port in ports.items():
            m.d.comb += port.ready.eq(self.input(f"{stage.name.lower()}_ready"))

        fired = {stage: port.valid & port.ready for stage, port in ports.items()}
        any_fired = Cat(*fired.values()).any()
        dispatched = Signal(INDEX_BITS + 1)      # instructions dispatched so far
        m.d.sync += dispatched.eq(dispatched + any_fired)
        if self._prop == "order":
            serve_reads(self, m, dut.mem, data_bits=cfg.axi_data_bits, slots=RING)
            self._order(m, dut, ports, fired, any_fired, dispatched, count, scan,
                        scanned, first)
            return

        # -- the tracked instruction: index k, arbitrary contents ---------------------------------
        k = self.constant(m, "k", INDEX_BITS)
        track = self.constant(m, "track_insn", INSN_BITS)
        track_addr = Signal(ADDR_BITS)
        m.d.comb += track_addr.eq(insn_addr + (k << log_insn))

        # -- memory: free data under the read client's rules, instruction k at its address ------
        def fill(m, beat_addr, data):
            if bus < INSN_BYTES:
                for j in range(INSN_BYTES // bus):
                    with m.If(beat_addr == track_addr + j * bus):
                        m.d.comb += [data.eq(track.word_select(j, bus * 8)), hit.eq(1)]
            else:
                with m.If(beat_addr == (track_addr & ~(bus - 1))):
                    m.d.comb += [data.word_select(track_addr[log_insn:log_bus], INSN_BITS)
                                 .eq(track), hit.eq(1)]

        hit = Signal()                   # this beat carries (part of) instruction k
        memory = serve_reads(self, m, dut.mem, data_bits=cfg.axi_data_bits, slots=RING,
                             fill=fill)
        track_err = Signal()
        with m.If(memory.taken & hit & memory.err):
            m.d.sync += track_err.eq(1)

        # -- promises -----------------------------------------------------------------------------
        view = layouts(cfg).insn(track)
        ref_error = insn_error(m, view, name="ref_error", cfg=cfg)
        ref_stage = insn_stage(m, view, name="ref_stage")
        self.promise(m, sum(f.as_unsigned() for f in fired.values()) <= 1)
        for stage, port in ports.items():
            entry = port.payload
            self.promise(m, ~fired[stage] | (entry.index == dispatched))
            mine = fired[stage] & (entry.index == k)
            self.promise(m, ~mine | ((entry.insn.as_value() == track) & (ref_stage == stage)
                                     & (ref_error == ErrorCode.NONE) & ~track_err))
            self.cover(m, mine & (k != 0))
        self.promise(m, ~(any_fired & (scan | dut.error)))
        self.promise(m, ~dut.error | scanned | (dut.error_index == dispatched))
        want = Mux(track_err, ErrorCode.DRAM_OUT_OF_RANGE, ref_error)
        stopped_at_k = dut.error & (dut.error_index == k)
        self.promise(m, ~stopped_at_k | ((dut.error_code == want)
                                         & (dut.error_code != ErrorCode.NONE)))
        self.promise(m, ~(dut.checked & ~dut.error & ~scanned) | (dispatched == count))

        # -- covers: the ring wraps; k stops fetch with codes 1, 2 and 9; a queue makes it wait --
        self.cover(m, any_fired & (k == RING) & (ports[Stage.COMPUTE].payload.index == k))
        for code in (ErrorCode.ILLEGAL_OPCODE, ErrorCode.ILLEGAL_ALU_OPCODE,
                     ErrorCode.DRAM_OUT_OF_RANGE):
            if code not in decode_codes(cfg) + (ErrorCode.DRAM_OUT_OF_RANGE,):
                continue                # no illegal ALU opcode with ALU_SCALE 1 or 2
            self.cover(m, stopped_at_k & (dut.error_code == code) & (k != 0))
        self.cover(m, dut.checked & ~dut.error & ~scanned & (count == 3))


    def _order(self, m, dut, ports, fired, any_fired, dispatched, count, scan, scanned,
               first):
        """Program order, exactly once, nothing after an error or in scan mode, everything
        when checked; with the invariants over fetch's pointers that let induction close."""
        self.promise(m, sum(f.as_unsigned() for f in fired.values()) <= 1)
        for stage, port in ports.items():
            self.promise(m, ~fired[stage] | (port.payload.index == dispatched))
        self.promise(m, ~(any_fired & (scan | dut.error)))
        self.promise(m, ~dut.error | scanned | (dut.error_index == dispatched))
        self.promise(m, ~(dut.checked & ~dut.error & ~scanned) | (dispatched == count))
        # Strengthening: what fetch has taken from its ring (head), less the one in decode
        # (d_valid, with index d_index = head - 1) and the one in the dispatch register
        # (q_valid, with index q_index just before), is what was dispatched, unless scan mode
        # dropped some; a stopped fetch holds the failing instruction in the dispatch
        # register; power-on.
        head, d_valid, d_index = dut.head, dut.d_valid, dut.d_index
        q_valid, q_index = dut.q_valid, dut.q_index
        stopped, running = dut.stopped, dut.running
        taken = Signal(INDEX_BITS + 2)
        m.d.comb += taken.eq(head - d_valid - q_valid)
        self.promise(m, scanned | (dispatched == taken))
        self.promise(m, dispatched <= taken)
        self.promise(m, taken <= head)
        self.promise(m, ~d_valid | ((head != 0) & (d_index == (head - 1)[:INDEX_BITS])))
        self.promise(m, ~q_valid | (q_index == taken[:INDEX_BITS]))
        self.promise(m, head <= count)
        self.promise(m, ~stopped | (q_valid & (dut.error_index == q_index)))
        self.promise(m, ~first | ((dispatched == 0) & (head == 0) & ~d_valid & ~q_valid
                                  & ~stopped & ~running & ~scanned))
        self.promise(m, first | running)
        self.cover(m, dut.checked & ~dut.error & ~scanned & (count == 3))
        self.cover(m, dut.error & ~scanned & (dispatched == 2))
        waited = Signal()
        m.d.sync += waited.eq(ports[Stage.STORE].valid & ~ports[Stage.STORE].ready)
        self.cover(m, waited & fired[Stage.STORE])


def checks(cfg, faults=frozenset()):
    return [
        Check("fetch", "decode", "decode error = the lowest code of docs/isa.md §3.5's rules; a "
              "legal instruction goes to its stage (every 128-bit instruction)",
              lambda: DecodeHarness(cfg, faults), depth=1),
        Check("fetch", "dispatch", "every instruction dispatched once, in program order, to "
              "its stage's queue with the bits read from its address; fetch stops at the "
              "first illegal one with its code",
              lambda: FetchHarness(cfg, faults, "dispatch"), depth=11, prove=False,
              cover_depth=16),
        Check("fetch", "order", "every instruction dispatched exactly once, in program order; "
              "none in scan mode or after an error; all of them when fetch has checked the "
              "stream", lambda: FetchHarness(cfg, faults, "order"), depth=10, cover_depth=16),
    ]
