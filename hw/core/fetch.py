"""Fetch: reads the instruction stream ahead, checks each instruction and dispatches it to the
queue of its stage (docs/architecture.md, Hardware; docs/isa.md §3.5).

Instructions land in a ring buffer (``ring`` slots) through a memory-engine read client; a
command asks for up to ``burst`` instructions as soon as that many slots are free, so several
commands are outstanding and they may complete in any order. Each slot has a valid bit, set when
the slot's last bus chunk is written (beats of one command arrive in order). Dispatch takes
slots strictly in program order: read the slot (the ring's read register), decode it
(:class:`InsnDecode`) into the dispatch register, push it from there to the load, compute or
store queue (waiting while that queue is full). The dispatch register keeps the decode logic out
of the cycle in which a queue's ``ready`` decides whether the ring is read again (an enable of
all 128 bits of the read register): a cycle of fetch latency (``FETCH_LATENCY``,
docs/architecture.md, timing on an FPGA), none of throughput.

Decode errors (codes 1–6, 8) and an instruction fetched from outside DRAM (code 9) stop fetch at
the first failing instruction in program order and are reported with its index. With ``scan``
(the run has finished or hit an execution error) instructions are checked and dropped instead of
dispatched, so a later decode error is still found, as fsim finds it by checking the whole
stream before it starts.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from avta.isa import formats
from avta.isa.encoding import INSN_BYTES
from avta.isa.enums import ErrorCode, Stage

from ..mem_client import ADDR_BITS, ReadClientSignature
from .decode import InsnDecode
from .faults import FAULT_PAGE_BYTES, FaultName
from .queue import INDEX_BITS, entry_layout
from .row_writer import RowWriter

__all__ = ["Fetch"]

#: Instruction addresses count bytes; an instruction is 2^_LOG_INSN_BYTES of them.
_LOG_INSN_BYTES = exact_log2(INSN_BYTES)


def _at_most(value, bound):
    """min(value, bound) for an unsigned ``value`` and a constant ``bound``: the high bits' OR
    and a comparison as wide as ``bound``, not one as wide as ``value``."""
    width = ceil_log2(bound + 1)
    small = (value[width:] == 0) & (value[:width] < bound) if len(value) > width else value < bound
    return Mux(small, value, bound)


class Fetch(wiring.Component):
    """Instruction fetch and dispatch.

    Parameters
    ----------
    ring : int
        Instructions buffered between memory and dispatch (a power of two).
    burst : int
        Most instructions one read command asks for (at most ``ring``).
    faults : set of :data:`avta.hw.core.faults.FAULTS` names (tests only)

    Ports
    -----
    start : In(1)
        Begin fetching ``insn_count`` instructions at byte address ``insn_addr`` (16-byte
        aligned); both stay stable during the run.
    scan : In(1)
        Check and drop instructions instead of dispatching them.
    mem : Out(ReadClientSignature)
    ld_insn, cp_insn, st_insn : Out(stream.Signature(entry_layout(cfg)))
        Instructions for the load, compute and store queues, in program order.
    error : Out(1)
        Level: a decode error (or a fetch from outside DRAM) was found; fetch has stopped.
    error_code : Out(ErrorCode), error_index : Out(32)
    checked : Out(1)
        Level: every instruction has been dispatched or (in scan mode) checked.
    idle : Out(1)
        No read command is outstanding.
    """

    def __init__(self, *, cfg, ring=32, burst=8, faults=frozenset()):
        if ring < 2 or ring & (ring - 1):
            raise ValueError(f"ring must be a power of two >= 2, not {ring!r}")
        if not 1 <= burst <= ring:
            raise ValueError(f"burst must be in 1..ring ({ring}), not {burst!r}")
        self._cfg, self._ring, self._burst = cfg, ring, burst
        self._faults = faults
        bus = cfg.axi_data_bytes
        self._lanes = max(1, bus // INSN_BYTES)
        self._tag = data.StructLayout({"row": exact_log2(ring),
                                       "skip": max(1, exact_log2(self._lanes)),
                                       "count": ceil_log2(burst + 1)})
        entry = entry_layout(cfg)
        super().__init__({
            "start": In(1), "insn_addr": In(ADDR_BITS), "insn_count": In(INDEX_BITS),
            "scan": In(1),
            "mem": Out(ReadClientSignature(data_bits=cfg.axi_data_bits, tag_shape=self._tag)),
            "ld_insn": Out(stream.Signature(entry)), "cp_insn": Out(stream.Signature(entry)),
            "st_insn": Out(stream.Signature(entry)),
            "error": Out(1), "error_code": Out(ErrorCode), "error_index": Out(INDEX_BITS),
            "checked": Out(1), "idle": Out(1),
        })
        # Dispatch state, created here so that the proofs (avta.formal.blocks.fetch) can state
        # their induction invariants over it; not ports, so the Verilog is unchanged.
        self.running = Signal(name="running")
        self.stopped = Signal(name="stopped")    # a decode error was found
        self.head = Signal(INDEX_BITS + 1, name="head")   # instructions taken from the ring
        self.d_valid = Signal(name="d_valid")    # an instruction is in decode ...
        self.d_index = Signal(INDEX_BITS, name="d_index")  # ... with this index
        self.q_valid = Signal(name="q_valid")    # a decoded instruction is offered to a queue ...
        self.q_index = Signal(INDEX_BITS, name="q_index")  # ... with this index

    def elaborate(self, platform):
        m = Module()
        cfg, ring, burst = self._cfg, self._ring, self._burst
        bus = cfg.axi_data_bytes
        log_bus, log_ring = exact_log2(bus), exact_log2(ring)
        chunks = max(1, INSN_BYTES // bus)
        granularity = bus * 8 if chunks > 1 else None

        m.submodules.fetch_buf = buf = Memory(shape=formats.INSN_BITS, depth=ring, init=[])
        wr = buf.write_port(granularity=granularity)
        rd = buf.read_port()

        running, stopped = self.running, self.stopped
        count = self.insn_count
        head = self.head

        # -- read commands ------------------------------------------------------------------------
        # What decides a command is kept in registers, each updated from its next value, so that
        # the command's `valid` and the address and count it carries start at flip-flops: as
        # differences of 33-bit counts (instructions left = INSN_COUNT - fetched, ring space =
        # ring - (fetched - head)) they were carry chains in series ahead of the memory engine's
        # grant, whose handshake enables fetch's address (docs/architecture.md, timing on an
        # FPGA). Cycle for cycle the same commands.
        left = Signal(INDEX_BITS + 1)            # instructions not yet asked for
        n = Signal(range(burst + 1))             # the next command's: min(left, burst)
        in_ring = Signal(range(ring + 1))        # asked for and not yet taken from the ring
        row = Signal(log_ring)                   # the ring slot of the next instruction asked for
        fetch_addr = Signal(ADDR_BITS)
        skip = fetch_addr[_LOG_INSN_BYTES:log_bus] if self._lanes > 1 else Const(0, 1)
        cmd = self.mem.cmd
        m.d.comb += [
            # n = 0 exactly when nothing is left; the ring has room for n.
            cmd.valid.eq(running & ~stopped & (n != 0) & (in_ring + n <= ring)),
            cmd.payload.addr.eq(fetch_addr & ~(bus - 1)),
            cmd.payload.beats.eq(((skip + n) << _LOG_INSN_BYTES) + bus - 1 >> log_bus),
            cmd.payload.tag.row.eq(row),
            cmd.payload.tag.skip.eq(skip),
            cmd.payload.tag.count.eq(n),
        ]
        sent = cmd.valid & cmd.ready
        next_addr = fetch_addr + (n << _LOG_INSN_BYTES)
        if FaultName.FETCH_PAGE in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            page = exact_log2(FAULT_PAGE_BYTES)
            next_addr = Cat(next_addr[:page], fetch_addr[page:])
        left_after = Signal.like(left)
        m.d.comb += left_after.eq(left - n)
        with m.If(sent):
            m.d.sync += [left.eq(left_after), n.eq(_at_most(left_after, burst)),
                         row.eq(row + n), fetch_addr.eq(next_addr)]

        # Beats asked for and not yet taken: at most `ring` instructions are in flight, and each
        # command may carry up to two beats more than its instructions fill (an unaligned start).
        outstanding = Signal(range(ring * (-(-INSN_BYTES // bus) + 2) + 1))
        taken = self.mem.data.valid & self.mem.data.ready
        m.d.sync += outstanding.eq(outstanding + Mux(sent, cmd.payload.beats, 0)
                                   - taken)
        m.d.comb += self.idle.eq(outstanding == 0)

        # -- beats into the ring ------------------------------------------------------------------
        m.submodules.writer = writer = RowWriter(
            elem_bytes=INSN_BYTES, bus_bytes=bus, unit_bits=8, row_bits=formats.INSN_BITS,
            en_bits=chunks if granularity else 1, addr_bits=log_ring,
            limit_bits=self._tag.size)
        beat = self.mem.data.payload
        m.d.comb += [
            writer.beat.valid.eq(self.mem.data.valid),
            writer.beat.payload.data.eq(beat.data), writer.beat.payload.beat.eq(beat.beat),
            writer.beat.payload.row.eq(beat.tag.row), writer.beat.payload.skip.eq(beat.tag.skip),
            writer.limit.eq(beat.tag.count),
            self.mem.data.ready.eq(writer.beat.ready),
            wr.addr.eq(writer.wr_addr), wr.data.eq(writer.wr_data), wr.en.eq(writer.wr_en),
        ]
        slot_valid = Signal(ring)
        slot_err = Signal(ring)
        complete = writer.wr_en[-1]              # the slot's last chunk is being written
        set_valid = Mux(complete, 1 << writer.wr_addr, 0)
        set_err = Mux((writer.wr_en != 0) & beat.err, 1 << writer.wr_addr, 0)

        # -- decode: the ring's read register (d_*) into the dispatch register (q_*) -------------
        m.submodules.decode = decode = InsnDecode(cfg=cfg, faults=self._faults)
        d_valid, d_index = self.d_valid, self.d_index
        d_err = Signal()
        m.d.comb += decode.insn.eq(rd.data)
        q_valid, q_index = self.q_valid, self.q_index
        q_insn = Signal.like(rd.data)
        q_stage = Signal(Stage)
        q_error = Signal(ErrorCode)              # NONE when it may be dispatched

        # -- dispatch from the dispatch register --------------------------------------------------
        head_slot = head[:log_ring]
        entry = Signal(entry_layout(cfg))
        m.d.comb += [entry.insn.eq(q_insn), entry.index.eq(q_index)]
        targets = {Stage.LOAD: self.ld_insn, Stage.COMPUTE: self.cp_insn,
                   Stage.STORE: self.st_insn}
        bad = q_error != ErrorCode.NONE
        consumed = Signal()
        for stage, port in targets.items():
            m.d.comb += [port.payload.eq(entry),
                         port.valid.eq(q_valid & ~bad & ~self.scan & ~stopped
                                       & (q_stage == stage))]
            taken = port.valid & port.ready
            if stage == Stage.STORE and FaultName.FETCH_DUP_STORE in self._faults:
                # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                taken = 0
            with m.If(taken):
                m.d.comb += consumed.eq(1)
        with m.If(q_valid & ~bad & self.scan & ~stopped):
            m.d.comb += consumed.eq(1)
        with m.If(q_valid & bad & ~stopped):
            m.d.sync += [stopped.eq(1), self.error_index.eq(q_index),
                         self.error_code.eq(q_error)]
        m.d.comb += self.error.eq(stopped)

        # The dispatch register takes the decoded instruction when it is empty or being taken.
        advance = d_valid & (~q_valid | consumed)
        with m.If(advance):
            m.d.sync += [q_valid.eq(1), q_index.eq(d_index), q_insn.eq(rd.data),
                         q_stage.eq(decode.stage), q_error.eq(decode.error)]
            with m.If(d_err):
                # Fetched from outside DRAM: its bits mean nothing (docs/isa.md §3.5, error 9).
                m.d.sync += q_error.eq(ErrorCode.DRAM_OUT_OF_RANGE)
        with m.Elif(consumed):
            m.d.sync += q_valid.eq(0)

        issue = (running & ~stopped & (head < count) & slot_valid.bit_select(head_slot, 1)
                 & (~d_valid | advance))
        m.d.comb += [rd.addr.eq(head_slot), rd.en.eq(issue)]
        clear = Mux(issue, 1 << head_slot, 0)
        m.d.sync += [slot_valid.eq((slot_valid | set_valid) & ~clear),
                     slot_err.eq((slot_err | set_err) & ~clear)]
        # The handshakes come late in the cycle: both sums are formed first, then chosen.
        with m.Switch(Cat(issue, sent)):
            with m.Case(0b01):
                m.d.sync += in_ring.eq(in_ring - 1)
            with m.Case(0b10):
                m.d.sync += in_ring.eq(in_ring + n)
            with m.Case(0b11):
                m.d.sync += in_ring.eq(in_ring + n - 1)
        with m.If(issue):
            m.d.sync += [head.eq(head + 1), d_valid.eq(1), d_index.eq(head),
                         d_err.eq(slot_err.bit_select(head_slot, 1))]
        with m.Elif(advance):
            m.d.sync += d_valid.eq(0)
        m.d.comb += self.checked.eq(running & (head == count) & ~d_valid & ~q_valid)

        with m.If(self.start):
            m.d.sync += [running.eq(1), stopped.eq(0), head.eq(0),
                         left.eq(count), n.eq(_at_most(count, burst)), in_ring.eq(0), row.eq(0),
                         fetch_addr.eq(self.insn_addr), d_valid.eq(0), q_valid.eq(0),
                         slot_valid.eq(0), slot_err.eq(0)]
        return m
