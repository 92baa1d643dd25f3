"""Executes LOAD instructions (docs/isa.md §3.1) for one stage, through a memory-engine read client.

The load stage serves INP and WGT; the compute stage serves UOP, ACC and ACC_8BIT. One
instruction at a time: a command per data row (``y_size`` of them) goes out as fast as the memory
engine takes them, beats come back in any order between commands and are written by a
:class:`RowWriter` per memory type, and a :class:`PadWalker` fills the padding rows in the cycles
the data path leaves the write port free. The instruction is done when every command is issued,
every beat written and every pad row filled.

Addresses (docs/isa.md §3): element ``e`` of memory type ``t`` is at byte
``base_t + e·E_t`` (mod 2^32), ``E_t`` the DRAM element bytes. Commands are bus-aligned: a row
that starts mid-beat (elements narrower than the bus) tells its row writer how many lanes to
skip. Base registers are multiples of ``min(E_t, bus bytes)``: the core refuses others at launch
(error 11).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from avta.isa import costs, formats
from avta.isa.enums import MemType, PadValue, Stage
from avta.isa.memories import LOADABLE, elem_bytes, memory, stage_types
from avta.isa.layout import layouts

from ..mem_client import ADDR_BITS, ReadClientSignature, beat_count_bits
from .faults import FAULT_STRIDE_BITS, FaultName
from .pad_walker import PadWalker
from .row_writer import RowWriter, ones
from .sram import geometry, write_signature

__all__ = ["TensorLoad", "LOAD_STAGE_TYPES", "COMPUTE_STAGE_TYPES", "count_layout"]

LOAD_STAGE_TYPES = stage_types(Stage.LOAD)
COMPUTE_STAGE_TYPES = stage_types(Stage.COMPUTE)


def _pad_row(cfg, mtype, pad_value):
    """The row a pad cell holds (docs/isa.md §3.1), as an integer."""
    return int.from_bytes(memory(cfg, mtype).pad_row(pad_value), "little")


def _base_port(cfg, mtype):
    """The port carrying the base register of ``mtype`` (``acc_base`` for ACC and ACC_8BIT)."""
    return f"{memory(cfg, mtype).base.lower()}_base"


def count_layout():
    """A byte-counter event: ``bytes`` moved for memory type ``mtype`` (docs/architecture.md)."""
    return data.StructLayout({"mtype": MemType, "bytes": 32})


class TensorLoad(wiring.Component):
    """LOAD execution for the memory types ``types``.

    Parameters
    ----------
    types : the memory types it loads
    faults : set of :data:`avta.hw.core.faults.FAULTS` names (tests only)

    Ports
    -----
    start : In(1)
        Begin executing ``insn``; it stays stable until ``done``.
    abort : In(1)
        The run has failed (docs/isa.md §3.5): request no more rows; ``done`` follows when the
        beats already requested have arrived (the memory engine must deliver them all).
    insn : In(layouts(cfg).memory)
    <t>_base : In(32), for each base register the types use (``uop``, ``inp``, ``wgt``, ``acc``)
        Byte offsets added to DRAM addresses (control registers).
    done : Out(1)
        One-cycle pulse: the instruction has completed (every row written).
    err : Out(1)
        With ``done``: a beat came back with an error (docs/isa.md §3.5 error 9).
    busy : Out(1)
    mem : Out(ReadClientSignature)
        The memory-engine read client.
    <pad>_wr : In(WritePort.Signature), for each scratchpad written
    count : Out(count_layout()), count_valid : Out(1)
        Bytes moved per row command, for the byte counters.
    """

    def __init__(self, *, cfg, types, overlap=False, faults=frozenset()):
        types = tuple(MemType(t) for t in types)
        if not types or any(t not in LOADABLE for t in types):
            raise ValueError(f"a load unit serves {', '.join(t.name for t in LOADABLE)}, "
                             f"not {types!r}")
        self._cfg = cfg
        self._types = types
        self._faults = faults
        self._pads = tuple(dict.fromkeys(memory(cfg, t).scratchpad.name for t in types))
        self._bases = tuple(dict.fromkeys(_base_port(cfg, t) for t in types))
        bus = cfg.axi_data_bytes
        self._row_bits = max(geometry(cfg, p).addr_bits for p in self._pads)
        self._skip_bits = max(1, max(exact_log2(max(1, bus // elem_bytes(cfg, t)))
                                     for t in types))
        self._overlap = overlap
        # The beat's row and skip, and which LOAD (``slot``) and row writer (``kind``, the index
        # of its memory type in ``types``) it is for: with ``overlap`` the beats of two LOADs
        # may be in flight.
        self._tag = data.StructLayout({"row": self._row_bits, "skip": self._skip_bits,
                                       "slot": 1, "kind": range(len(types))})
        members = {
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).memory),
            "done": Out(1), "err": Out(1), "busy": Out(1),
            "mem": Out(ReadClientSignature(data_bits=cfg.axi_data_bits, tag_shape=self._tag)),
            "count": Out(count_layout()), "count_valid": Out(1),
        }
        if overlap:
            members.update({"release": Out(1), "joins": Out(1), "detached_done": Out(1),
                            "detached_err": Out(1), "wr_released": Out(1)})
        for port in self._bases:
            members[port] = In(ADDR_BITS)
        for pad in self._pads:
            members[f"{pad}_wr"] = In(write_signature(geometry(cfg, pad)))
        super().__init__(members)

    @property
    def types(self):
        return self._types

    def elaborate(self, platform):
        m = Module()
        cfg, insn = self._cfg, self.insn
        bus = cfg.axi_data_bytes
        log_bus = exact_log2(bus)

        # What a row command needs, latched at start: the instruction comes from the queue's
        # block RAM, whose output is too slow to feed the command path in every cycle
        # (docs/architecture.md, timing on an FPGA). ``insn`` is read in the start cycle only.
        mtype = Signal(MemType)
        log_elem = Signal(range(32))
        narrow = Signal()                         # an element spans whole beats
        x_size = Signal(formats.SIZE_BITS)
        rows_left = Signal(formats.SIZE_BITS)     # row commands still to issue
        width = Signal(formats.SIZE_BITS + 1)     # W, from one data row to the next
        row_bytes = Signal(formats.SIZE_BITS + 16)
        stride_bytes = Signal(ADDR_BITS)
        pad_value = Signal(PadValue)
        top = Signal(formats.SRAM_ADDR_BITS)      # y_pad_0·W, the rows above the data

        base = Signal(ADDR_BITS)
        start_log_elem = Signal(range(32))
        for t in self._types:
            base_port = _base_port(cfg, t)
            if FaultName.WGT_BASE in self._faults and t == MemType.WGT and "inp_base" in self._bases:
                # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                base_port = "inp_base"
            with m.If(insn.memory_type == t):
                m.d.comb += [start_log_elem.eq(exact_log2(elem_bytes(cfg, t))),
                             base.eq(getattr(self, base_port))]
            with m.If(self.start & (insn.memory_type == t)):
                m.d.sync += narrow.eq(elem_bytes(cfg, t) >= bus)
        stride = insn.x_stride
        if FaultName.LOAD_STRIDE in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            stride = insn.x_stride[:FAULT_STRIDE_BITS]
        with m.If(self.start):
            m.d.sync += [mtype.eq(insn.memory_type), log_elem.eq(start_log_elem),
                         x_size.eq(insn.x_size), rows_left.eq(insn.y_size),
                         width.eq(insn.x_pad_0 + insn.x_size + insn.x_pad_1),
                         row_bytes.eq(insn.x_size << start_log_elem),
                         stride_bytes.eq(stride << start_log_elem),
                         pad_value.eq(insn.pad_value)]
        # The rows above the data, y_pad_0·W, by shift and add from the latched fields (no
        # multiplier: a DSP block's routing is slow, and there are few of them).
        y_pad_0 = Signal(formats.PAD_BITS)
        with m.If(self.start):
            m.d.sync += y_pad_0.eq(insn.y_pad_0)
        terms = [Mux(y_pad_0[i], width << i, 0)[:formats.SRAM_ADDR_BITS]
                 for i in range(formats.PAD_BITS)]
        while len(terms) > 1:                     # a balanced tree of adders
            terms = [(a + b)[:formats.SRAM_ADDR_BITS] for a, b in zip(terms[::2], terms[1::2])] \
                + terms[len(terms) // 2 * 2:]
        m.d.comb += top.eq(terms[0])

        # -- row commands ---------------------------------------------------------------------
        addr = Signal(ADDR_BITS)                  # byte address of the current row
        dest = Signal(formats.SRAM_ADDR_BITS)     # its element 0's row, less the top pad's
        # Elements narrower than the bus: the lanes before the row's first element are skipped.
        # The beat count follows from the skip, so that base bits below the element size (not
        # supported, module docstring) cannot add a beat that no row writer expects.
        skip = Signal(self._skip_bits)
        m.d.comb += skip.eq(Mux(narrow, 0, addr[:log_bus] >> log_elem))
        cmd = self.mem.cmd
        types = self._types
        # Slots: with ``overlap`` the LOAD issuing (the head, slot ``cur``) and a released one
        # (slot ``rel``, every row requested, awaiting beats or pad rows) may both be in flight;
        # each has its own count of beats outstanding and its own error. Without, one slot.
        slots = (0, 1) if self._overlap else (0,)
        cur = Signal()                            # the head LOAD's slot
        kind = Signal(range(len(types)))          # its memory type's index in ``types``
        for i, t in enumerate(types):
            with m.If(self.start & (insn.memory_type == t)):
                m.d.sync += kind.eq(i)
        m.d.comb += [
            cmd.payload.addr.eq(addr & ~(bus - 1)),
            cmd.payload.beats.eq(((skip << log_elem) + row_bytes + bus - 1) >> log_bus),
            cmd.payload.tag.row.eq(dest + top),
            cmd.payload.tag.skip.eq(skip),
            cmd.payload.tag.slot.eq(cur),
            cmd.payload.tag.kind.eq(kind),
            self.count.mtype.eq(mtype),
            self.count.bytes.eq(row_bytes),
            self.count_valid.eq(cmd.valid & cmd.ready),
        ]

        beat = self.mem.data.payload
        issued = cmd.valid & cmd.ready
        taken = self.mem.data.valid & self.mem.data.ready
        outstanding, idle, errs = [], [], []
        for s in slots:
            count = Signal(beat_count_bits(cfg.axi_data_bits) + formats.SIZE_BITS,
                           name=f"outstanding_{s}")
            mine_issued = issued & (cur == s) if self._overlap else issued
            mine_taken = taken & (beat.tag.slot == s) if self._overlap else taken
            # Every sum is formed before the handshakes pick one: they come late in the cycle
            # (``issued`` through the memory engine's arbiter, ``taken`` from the row writer's
            # view of the beat), the beat count early (docs/architecture.md, timing on an FPGA).
            plus = Signal.like(count, name=f"plus_{s}")
            m.d.comb += plus.eq(count + cmd.payload.beats)
            with m.Switch(Cat(mine_taken, mine_issued)):
                with m.Case(0b01):
                    m.d.sync += count.eq(count - 1)
                with m.Case(0b10):
                    m.d.sync += count.eq(plus)
                with m.Case(0b11):
                    m.d.sync += count.eq(plus - 1)
            slot_err = Signal(name=f"err_{s}")
            with m.If(taken & beat.err & ((beat.tag.slot == s) if self._overlap else 1)):
                m.d.sync += slot_err.eq(1)
            outstanding.append(count)
            idle.append(count == 0)
            errs.append(slot_err)

        def of(values, slot):
            return values[0] if len(values) == 1 else Mux(slot, values[1], values[0])

        # An error (a LOAD's error 9, or the run's) stops the requests at once; a request
        # already offered stays offered until taken, as a stream requires.
        stop = self.abort
        for e in errs:
            stop = stop | e
        offered = Signal()
        m.d.sync += offered.eq(cmd.valid & ~cmd.ready)

        # -- padding --------------------------------------------------------------------------
        # One walker, for one LOAD at a time: it reads the instruction's fields in its start
        # cycle only. A LOAD that starts while the walker still walks the released LOAD's pad
        # rows starts its walk (``pending``) when the walker is free; it is the head until then.
        m.submodules.pad = pad = PadWalker()
        for name in ("sram_base", "x_size", "y_size", "x_pad_0", "x_pad_1", "y_pad_0",
                     "y_pad_1"):
            m.d.comb += getattr(pad, name).eq(getattr(insn, name))
        pending = Signal()                        # the head's walk waits for the walker
        walk_slot = Signal()                      # the LOAD whose pad rows the walker walks
        walk_kind = Signal(range(len(types)))
        walk_value = Signal(PadValue)
        head_padding = pending | (pad.busy & (walk_slot == cur))

        # -- data path: one row writer per memory type ----------------------------------------
        writers = {}
        for i, t in enumerate(types):
            info = memory(cfg, t)
            geo = geometry(cfg, info.scratchpad.name)
            # Each DRAM byte becomes `unit` bits of the row: ACC_8BIT widens int8 to int32.
            unit = 8 * info.scratchpad.row.lane_bits // info.element.lane_bits
            w = RowWriter(elem_bytes=info.elem_bytes, bus_bytes=bus, unit_bits=unit,
                          row_bits=geo.row_bits, en_bits=geo.en_bits, addr_bits=geo.addr_bits,
                          limit_bits=formats.SIZE_BITS, limit_held=True,
                          ways=geo.write_rows)
            m.submodules[f"writer_{t.name.lower()}"] = writers[t] = w
            # The beat's writer is in its tag; ``ready`` comes from the head's writer, a
            # register's choice: only LOADs of types whose writer is always ready (an element
            # of whole beats) overlap, so the head's writer is the beat's when it is not.
            m.d.comb += [
                w.beat.valid.eq(self.mem.data.valid & (beat.tag.kind == i)),
                w.beat.payload.data.eq(beat.data),
                w.beat.payload.beat.eq(beat.beat),
                w.beat.payload.row.eq(beat.tag.row),
                w.beat.payload.skip.eq(beat.tag.skip),
                w.limit.eq(x_size),
            ]
            with m.If(kind == i):
                m.d.comb += self.mem.data.ready.eq(w.beat.ready)
        m.d.comb += pad.hold.eq(self.mem.data.valid)

        # Each scratchpad's write port: a beat's row writer, else the pad walker.
        for p in self._pads:
            port = getattr(self, f"{p}_wr")
            geo = geometry(cfg, p)
            mine = [(i, t) for i, t in enumerate(types) if memory(cfg, t).scratchpad.name == p]
            # Every valid beat writes a row: the write port is taken by a flip-flop (the beat
            # register), not by the writer's lane arithmetic.
            for n, (i, t) in enumerate(mine):
                w = writers[t]
                with (m.If if n == 0 else m.Elif)(w.beat.valid):
                    m.d.comb += [port.addr.eq(w.wr_addr), port.data.eq(w.wr_data),
                                 port.en.eq(w.wr_en)]
            for i, t in mine:
                # (Not while a beat holds the walker, for another scratchpad: the walker
                # writes that row again once it moves on.)
                with m.Elif(pad.wr_valid & ~pad.hold & (walk_kind == i)):
                    pad_data = Signal(geo.row_bits, name=f"pad_{t.name.lower()}")
                    with m.Switch(walk_value):
                        for pv in PadValue:
                            with m.Case(pv):
                                m.d.comb += pad_data.eq(_pad_row(cfg, t, pv))
                    # One row: the first of a write of several (interleaved, hw/core/banks.py).
                    m.d.comb += [port.addr.eq(pad.wr_addr), port.data.eq(pad_data),
                                 port.en.eq(ones(geo.en_bits // geo.write_rows))]

        def start_walk(slot, walk_kind_value, walk_value_value):
            m.d.comb += pad.start.eq(1)
            m.d.sync += [walk_slot.eq(slot), walk_kind.eq(walk_kind_value),
                         walk_value.eq(walk_value_value), pending.eq(0)]

        # -- the released LOAD (overlap) ------------------------------------------------------
        # Every row of it requested, it left the stage's queue (``release``) and completes
        # (``detached_done``, with ``detached_err``) when its beats and pad rows are written,
        # always before the head completes: LOADs complete in program order. Its completion is
        # registered, so that no beat or count reaches the stage control's pushes in a cycle.
        rel_live = Signal()
        rel_done = Signal()
        older = Signal()
        clear = 1           # the head may write its rows: no released LOAD's rows are its own
        settled = 1         # the head's rows are known (to check the next LOAD's against)
        if self._overlap:
            rel = Signal()
            rel_err = Signal()
            rel_padding = pad.busy & (walk_slot == rel)
            finished = rel_live & of(idle, rel) & (~rel_padding | stop)
            m.d.sync += rel_done.eq(finished)
            with m.If(finished):
                m.d.sync += [rel_live.eq(0), rel_err.eq(of(errs, rel))]
                # Stopped with pad rows unwritten: drop them (not the head's).
                with m.If(rel_padding):
                    m.d.comb += pad.cancel.eq(1)
            # The row written this cycle (a beat's, else a pad row) is the released LOAD's:
            # for the trace port, which names the instruction each written row belongs to.
            m.d.comb += self.wr_released.eq(rel_live & Mux(
                self.mem.data.valid, beat.tag.slot == rel, pad.wr_valid & (walk_slot == rel)))
            m.d.comb += [older.eq(rel_live | rel_done),
                         self.detached_done.eq(rel_done), self.detached_err.eq(rel_err)]
            # The head writes once its rows are known disjoint from the released LOAD's, and
            # requests once that LOAD has few beats left (costs.LOAD_AHEAD_BEATS): its first
            # beat then follows the last of them, and a read of another stage that reaches the
            # memory engine meanwhile is not queued behind both.
            # Registered (it only rises while a LOAD is the head; at the start it is whether
            # none is released), so that no comparison reaches the command's ``valid``.
            # And once its pad rows are all written: they take the cycles without beats, which
            # the head's beats, following on, would leave none of.
            few_left = (of(outstanding, rel) <= costs.LOAD_AHEAD_BEATS) & ~rel_padding
            clear = Signal()
            m.d.sync += clear.eq(~older | (self._range_check(m, cur, rel, width) & few_left))
            with m.If(self.start):
                m.d.sync += clear.eq(~older)
            settled = self._settle == 0
            narrow_types = [t for t in types if elem_bytes(cfg, t) >= bus]
            joins = 0
            for t in narrow_types:
                joins = joins | (insn.memory_type == t)
            m.d.comb += self.joins.eq(joins)

        # -- control --------------------------------------------------------------------------
        with m.FSM(name="load"):
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(rel_live)
                with m.If(self.start):
                    slot = ~cur if self._overlap else cur
                    self._start_range(m, slot)
                    m.d.sync += [cur.eq(slot), addr.eq(base + (insn.dram_base << start_log_elem)),
                                 dest.eq(insn.sram_base + insn.x_pad_0)]
                    for s in slots:
                        with m.If(slot == s):
                            m.d.sync += errs[s].eq(0)
                    with m.If(insn.x_size == 0):
                        # docs/isa.md §3.1: no data moves; only tokens act (after the
                        # released LOAD's, in order).
                        m.next = "DONE"
                        if self._overlap:
                            with m.If(older):
                                m.next = "EMPTY"
                    with m.Else():
                        walk_kind_now = Signal.like(kind)
                        for i, t in enumerate(types):
                            with m.If(insn.memory_type == t):
                                m.d.comb += walk_kind_now.eq(i)
                        with m.If(pad.busy | older):
                            m.d.sync += pending.eq(1)
                        with m.Else():
                            start_walk(slot, walk_kind_now, insn.pad_value)
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [self.busy.eq(1),
                             cmd.valid.eq((rows_left != 0) & ((~stop & clear) | offered))]
                with m.If(issued):
                    m.d.sync += [rows_left.eq(rows_left - 1), addr.eq(addr + stride_bytes),
                                 dest.eq(dest + width)]
                with m.If(pending & ~pad.busy & ~stop & clear):
                    start_walk(cur, kind, pad_value)
                requested = (rows_left == 0) | (stop & ~offered)
                with m.If(requested & ~issued & ~older):
                    with m.If(of(idle, cur) & (~head_padding | stop)):
                        m.next = "DONE"
                    if self._overlap:
                        # Only LOADs of types whose writer is always ready are released (the
                        # row writer section); the head's walk must have started, as the
                        # instruction's fields go with it.
                        with m.Elif(~stop & ~pending & narrow & clear & settled):
                            m.next = "RELEASE"
            if self._overlap:
                with m.State("RELEASE"):
                    m.d.comb += [self.busy.eq(1), self.release.eq(1)]
                    m.d.sync += [rel_live.eq(1), rel.eq(cur)]
                    m.next = "IDLE"
                with m.State("EMPTY"):
                    m.d.comb += self.busy.eq(1)
                    with m.If(~older):
                        m.next = "DONE"
            with m.State("DONE"):
                # A LOAD stopped by an error ends with pad rows unwritten: drop them (a normal
                # LOAD waits for the walker, which is idle by now).
                m.d.comb += [self.done.eq(1), self.err.eq(of(errs, cur)), pad.cancel.eq(1)]
                m.d.sync += pending.eq(0)
                m.next = "IDLE"
        return m

    def _start_range(self, m, slot):
        """At a LOAD's start (overlap): its first row, modulo its scratchpad's depth, and its
        memory type, kept for its slot."""
        if not self._overlap:
            return
        insn = self.insn
        for i, t in enumerate(self._types):
            depth = memory(self._cfg, t).scratchpad.depth
            with m.If(insn.memory_type == t):
                for s in (0, 1):
                    with m.If(slot == s):
                        m.d.sync += [self._lo[s].eq(insn.sram_base & (depth - 1)),
                                     self._kinds[s].eq(i)]
        m.d.sync += [self._height.eq(insn.y_pad_0 + insn.y_size + insn.y_pad_1),
                     self._settle.eq(3)]

    def _range_check(self, m, cur, rel, width):
        """Whether the head LOAD (slot ``cur``) may write while the released one (slot ``rel``)
        still does: their rows, ``[lo, lo + W·H)`` modulo the scratchpad's depth, are disjoint
        (LOADs of one stage may write the same rows, in program order; beats complete out of
        order). ``W·H`` by a tree of adders in two register stages and the comparison in a
        third, from the fields latched at start: ``clear`` three cycles after the start."""
        cfg, types = self._cfg, self._types
        bits = max(geometry(cfg, p).addr_bits for p in self._pads) + 1
        self._lo = lo = [Signal(formats.SRAM_ADDR_BITS, name=f"lo_{s}") for s in (0, 1)]
        self._kinds = kinds = [Signal(range(len(types)), name=f"kind_{s}") for s in (0, 1)]
        self._height = height = Signal(formats.SIZE_BITS + 2)
        self._settle = settle = Signal(range(4))
        end = [Signal(2 * bits + 1, name=f"end_{s}") for s in (0, 1)]
        big = [Signal(name=f"big_{s}") for s in (0, 1)]
        with m.If(settle != 0):
            m.d.sync += settle.eq(settle - 1)
        # Stage 1: sums of four partial products; a factor of ``bits`` bits or more is big.
        w, h = width[:bits], height[:bits]
        terms = [Mux(h[i], w << i, 0)[:2 * bits] for i in range(bits)]
        quads = []
        for j in range(0, bits, 4):
            group = terms[j:j + 4]
            q = Signal(2 * bits, name=f"quad_{j // 4}")
            total = group[0]
            for t in group[1:]:
                total = (total + t)[:2 * bits]
            m.d.sync += q.eq(total)
            quads.append(q)
        big_1 = Signal()
        m.d.sync += big_1.eq((width[bits:] != 0) | (height[bits:] != 0))
        # Stage 2: W·H.
        span, big_2 = Signal(2 * bits), Signal()
        total = quads[0]
        for q in quads[1:]:
            total = (total + q)[:2 * bits]
        m.d.sync += [span.eq(total), big_2.eq(big_1)]

        # Stage 3: the head's last row + 1 (unwrapped), and the comparison with the released
        # LOAD's rows, on one scratchpad: [a, ea) and [b, eb) are disjoint modulo the depth D
        # when one ends before the other starts and the other ends before the first's start + D.
        def of(values, slot):
            return Mux(slot, values[1], values[0])
        b, a, ea = of(lo, cur), of(lo, rel), of(end, rel)
        eb = Signal(2 * bits + 1)
        m.d.comb += eb.eq(b + span)
        same_pad = Signal()
        depth = Signal(2 * bits + 1)
        for i, t in enumerate(types):
            info = memory(cfg, t)
            with m.If(of(kinds, cur) == i):
                m.d.comb += depth.eq(info.scratchpad.depth)
                for j, u in enumerate(types):
                    if memory(cfg, u).scratchpad.name == info.scratchpad.name:
                        with m.If(of(kinds, rel) == j):
                            m.d.comb += same_pad.eq(1)
        disjoint = Signal()
        with m.If(settle == 1):
            for s in (0, 1):
                with m.If(cur == s):
                    m.d.sync += [end[s].eq(eb), big[s].eq(big_2)]
            m.d.sync += disjoint.eq(~same_pad | (~big_2 & ~of(big, rel) & (
                ((ea <= b) & (eb <= a + depth)) | ((eb <= a) & (ea <= b + depth)))))
        return (settle == 0) & disjoint
