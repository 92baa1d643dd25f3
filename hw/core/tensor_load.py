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

from avta.isa import formats
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

    def __init__(self, *, cfg, types, faults=frozenset()):
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
        self._tag = data.StructLayout({"row": self._row_bits, "skip": self._skip_bits})
        members = {
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).memory),
            "done": Out(1), "err": Out(1), "busy": Out(1),
            "mem": Out(ReadClientSignature(data_bits=cfg.axi_data_bits, tag_shape=self._tag)),
            "count": Out(count_layout()), "count_valid": Out(1),
        }
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
        m.d.comb += [
            cmd.payload.addr.eq(addr & ~(bus - 1)),
            cmd.payload.beats.eq(((skip << log_elem) + row_bytes + bus - 1) >> log_bus),
            cmd.payload.tag.row.eq(dest + top),
            cmd.payload.tag.skip.eq(skip),
            self.count.mtype.eq(mtype),
            self.count.bytes.eq(row_bytes),
            self.count_valid.eq(cmd.valid & cmd.ready),
        ]

        outstanding = Signal(beat_count_bits(cfg.axi_data_bits) + formats.SIZE_BITS)
        issued = cmd.valid & cmd.ready
        taken = self.mem.data.valid & self.mem.data.ready
        # Every sum is formed before the handshakes pick one: they come late in the cycle
        # (``issued`` through the memory engine's arbiter, ``taken`` from the row writer's view
        # of the beat), the beat count early (docs/architecture.md, timing on an FPGA).
        plus = Signal.like(outstanding)
        m.d.comb += plus.eq(outstanding + cmd.payload.beats)
        with m.Switch(Cat(taken, issued)):
            with m.Case(0b01):
                m.d.sync += outstanding.eq(outstanding - 1)
            with m.Case(0b10):
                m.d.sync += outstanding.eq(plus)
            with m.Case(0b11):
                m.d.sync += outstanding.eq(plus - 1)
        err = Signal()
        with m.If(taken & self.mem.data.payload.err):
            m.d.sync += err.eq(1)
        # An error (this LOAD's error 9, or the run's) stops the requests at once; a request
        # already offered stays offered until taken, as a stream requires.
        stop = err | self.abort
        offered = Signal()
        m.d.sync += offered.eq(cmd.valid & ~cmd.ready)

        # -- padding --------------------------------------------------------------------------
        m.submodules.pad = pad = PadWalker()
        for name in ("sram_base", "x_size", "y_size", "x_pad_0", "x_pad_1", "y_pad_0",
                     "y_pad_1"):
            m.d.comb += getattr(pad, name).eq(getattr(insn, name))

        # -- data path: one row writer per memory type ----------------------------------------
        beat = self.mem.data.payload
        writers = {}
        for t in self._types:
            info = memory(cfg, t)
            geo = geometry(cfg, info.scratchpad.name)
            # Each DRAM byte becomes `unit` bits of the row: ACC_8BIT widens int8 to int32.
            unit = 8 * info.scratchpad.row.lane_bits // info.element.lane_bits
            w = RowWriter(elem_bytes=info.elem_bytes, bus_bytes=bus, unit_bits=unit,
                          row_bits=geo.row_bits, en_bits=geo.en_bits, addr_bits=geo.addr_bits,
                          limit_bits=formats.SIZE_BITS, limit_held=True)
            m.submodules[f"writer_{t.name.lower()}"] = writers[t] = w
            active = mtype == t
            m.d.comb += [
                w.beat.valid.eq(self.mem.data.valid & active),
                w.beat.payload.data.eq(beat.data),
                w.beat.payload.beat.eq(beat.beat),
                w.beat.payload.row.eq(beat.tag.row),
                w.beat.payload.skip.eq(beat.tag.skip),
                w.limit.eq(x_size),
            ]
            with m.If(active):
                m.d.comb += self.mem.data.ready.eq(w.beat.ready)

        # Each scratchpad's write port: the active row writer, else the pad walker.
        for p in self._pads:
            port = getattr(self, f"{p}_wr")
            geo = geometry(cfg, p)
            for t in self._types:
                if memory(cfg, t).scratchpad.name != p:
                    continue
                w = writers[t]
                with m.If(mtype == t):
                    pad_data = Signal(geo.row_bits, name=f"pad_{t.name.lower()}")
                    with m.Switch(pad_value):
                        for pv in PadValue:
                            with m.Case(pv):
                                m.d.comb += pad_data.eq(_pad_row(cfg, t, pv))
                    # Every valid beat writes a row: the write port is taken by a flip-flop
                    # (the beat register), not by the writer's lane arithmetic.
                    with m.If(w.beat.valid):
                        m.d.comb += [port.addr.eq(w.wr_addr), port.data.eq(w.wr_data),
                                     port.en.eq(w.wr_en), pad.hold.eq(1)]
                    with m.Elif(pad.wr_valid):
                        m.d.comb += [port.addr.eq(pad.wr_addr), port.data.eq(pad_data),
                                     port.en.eq(ones(geo.en_bits))]

        # -- control --------------------------------------------------------------------------
        with m.FSM(name="load"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [err.eq(0),
                                 addr.eq(base + (insn.dram_base << start_log_elem)),
                                 dest.eq(insn.sram_base + insn.x_pad_0)]
                    with m.If(insn.x_size == 0):
                        # docs/isa.md §3.1: no data moves; only tokens act.
                        m.next = "DONE"
                    with m.Else():
                        m.d.comb += pad.start.eq(1)
                        m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [self.busy.eq(1),
                             cmd.valid.eq((rows_left != 0) & (~stop | offered))]
                with m.If(issued):
                    m.d.sync += [rows_left.eq(rows_left - 1), addr.eq(addr + stride_bytes),
                                 dest.eq(dest + width)]
                requested = (rows_left == 0) | (stop & ~offered)
                with m.If(requested & ~issued & (outstanding == 0) & (~pad.busy | stop)):
                    m.next = "DONE"
            with m.State("DONE"):
                # A LOAD stopped by an error ends with pad rows unwritten: drop them (a normal
                # LOAD waits for the walker, which is idle by now).
                m.d.comb += [self.done.eq(1), self.err.eq(err), pad.cancel.eq(1)]
                m.next = "IDLE"
        return m
