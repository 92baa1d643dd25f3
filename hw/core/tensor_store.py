"""Executes STORE instructions (docs/isa.md §3.2) through a memory-engine write client.

OUT row ``sram_base + y·x_size + x`` goes to DRAM element ``dram_base + y·x_stride + x``, so the
OUT rows are read in plain sequence. Three parts run concurrently:

* the command generator issues one write command per DRAM row (``y_size`` of them);
* the reader reads OUT rows, one per cycle, into a small queue, tagged with their place in the
  DRAM row;
* the packer turns rows into beats: a row wider than the bus becomes several beats; rows
  narrower than the bus are packed into one beat under byte strobes, the first beat of a DRAM
  row starting at the row's lane (``skip``) when it does not start on a beat boundary.

A STORE completes when every write response has arrived (docs/isa.md §3). Addresses follow
:mod:`.tensor_load` (OUT_BASE, aligned to ``min(E, bus bytes)``: error 11 at launch otherwise).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from avta.isa import formats
from avta.isa.enums import MemType
from avta.isa.layout import layouts

from ..mem_client import ADDR_BITS, WriteClientSignature
from .faults import FAULT_STORE_ROWS, FaultName
from .sram import geometry, read_signature
from .tensor_load import count_layout

__all__ = ["TensorStore"]

# Rows read ahead of the packer: enough to hide the one-cycle read latency at full rate.
_QUEUE_DEPTH = 4


class TensorStore(wiring.Component):
    """STORE execution.

    ``faults``: a set of :data:`avta.hw.core.faults.FAULTS` names (tests only).

    Ports
    -----
    start : In(1)
        Begin executing ``insn`` (stable until ``done``).
    abort : In(1)
        The run has failed (docs/isa.md §3.5): store no more rows than those already commanded
        or read (their commands and beats must still match); ``done`` when they are answered.
    insn : In(layouts(cfg).memory)
    out_base : In(32)
    done : Out(1)
        One-cycle pulse when the last write response has arrived.
    err : Out(1)
        With ``done``: a write was answered with an error (docs/isa.md §3.5 error 9).
    busy : Out(1)
    mem : Out(WriteClientSignature)
    out_rd : In(ReadPort.Signature)
        Synchronous read port of OUT.
    count, count_valid : Out
        Bytes stored per row command (OUT_ST counter).
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        self._geo = geometry(cfg, "out")
        super().__init__({
            "start": In(1), "abort": In(1), "insn": In(layouts(cfg).memory),
            "out_base": In(ADDR_BITS),
            "done": Out(1), "err": Out(1), "busy": Out(1),
            "mem": Out(WriteClientSignature(data_bits=cfg.axi_data_bits)),
            "out_rd": In(read_signature(self._geo)),
            "count": Out(count_layout()), "count_valid": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, insn = self._cfg, self.insn
        bus = cfg.axi_data_bytes
        elem = cfg.out_elem_bytes
        log_bus, log_elem = exact_log2(bus), exact_log2(elem)
        narrow = elem >= bus
        lanes = 1 if narrow else bus // elem
        skip_bits = max(1, exact_log2(lanes))
        row_bytes = Signal(formats.SIZE_BITS + log_elem)
        m.d.comb += row_bytes.eq(insn.x_size << log_elem)
        stride_bytes = insn.x_stride << log_elem
        first_addr = self.out_base + (insn.dram_base << log_elem)

        def skip_of(addr):
            return 0 if narrow else addr[log_elem:log_bus]

        def next_row(addr, y):
            """The DRAM address of the row after row ``y``, which is at ``addr``."""
            if FaultName.STORE_ROWS in self._faults:
                # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                wrap = y[:exact_log2(FAULT_STORE_ROWS)] == FAULT_STORE_ROWS - 1
                return Mux(wrap, first_addr, addr + stride_bytes)
            return addr + stride_bytes

        run = Signal()
        m.d.comb += self.busy.eq(run)
        # Rows to store: all of them, until an error (the run's, or this STORE's error 9) sets
        # the limit to the rows already commanded or started by the reader, so that every
        # command still gets its beats and every beat its command.
        stopping = Signal()
        limit = Signal(formats.SIZE_BITS + 1)
        rows = Mux(stopping, limit, insn.y_size)

        # -- commands -----------------------------------------------------------------------------
        cmd = self.mem.cmd
        cmd_y = Signal(formats.SIZE_BITS + 1)
        cmd_addr = Signal(ADDR_BITS)
        m.d.comb += [
            cmd.valid.eq(run & (cmd_y < rows)),
            cmd.payload.addr.eq(cmd_addr & ~(bus - 1)),
            cmd.payload.beats.eq(((skip_of(cmd_addr) << log_elem) + row_bytes + bus - 1)
                                 >> log_bus),
            self.count.mtype.eq(MemType.OUT),
            self.count.bytes.eq(row_bytes),
            self.count_valid.eq(cmd.valid & cmd.ready),
        ]
        with m.If(cmd.valid & cmd.ready):
            m.d.sync += [cmd_y.eq(cmd_y + 1), cmd_addr.eq(next_row(cmd_addr, cmd_y))]

        # -- reader: OUT rows in sequence, into a queue -------------------------------------------
        meta = data.StructLayout({"last": 1, "first": 1, "skip": skip_bits})
        m.submodules.queue = queue = fifo.SyncFIFO(
            width=self._geo.row_bits + meta.size, depth=_QUEUE_DEPTH)
        rd_x = Signal(formats.SIZE_BITS)
        rd_y = Signal(formats.SIZE_BITS + 1)
        rd_row = Signal(formats.SRAM_ADDR_BITS)
        rd_addr = Signal(ADDR_BITS)                # DRAM address of the current DRAM row
        in_flight = Signal()
        issue = run & (rd_y < rows) & (queue.level + in_flight < _QUEUE_DEPTH)
        m.d.comb += [self.out_rd.addr.eq(rd_row), self.out_rd.en.eq(issue)]
        issued_meta = Signal(meta)
        m.d.sync += in_flight.eq(issue)
        with m.If(issue):
            m.d.sync += [issued_meta.last.eq(rd_x + 1 == insn.x_size),
                         issued_meta.first.eq(rd_x == 0), issued_meta.skip.eq(skip_of(rd_addr)),
                         rd_row.eq(rd_row + 1)]
            with m.If(rd_x + 1 == insn.x_size):
                m.d.sync += [rd_x.eq(0), rd_y.eq(rd_y + 1), rd_addr.eq(next_row(rd_addr, rd_y))]
            with m.Else():
                m.d.sync += rd_x.eq(rd_x + 1)
        m.d.comb += [queue.w_en.eq(in_flight), queue.w_data.eq(Cat(self.out_rd.data,
                                                                     issued_meta))]

        # -- packer: rows to beats ----------------------------------------------------------------
        head = queue.r_data[:self._geo.row_bits]
        head_meta = data.View(meta, queue.r_data[self._geo.row_bits:])
        beat = self.mem.data
        out_free = ~beat.valid | beat.ready
        with m.If(beat.valid & beat.ready):
            m.d.sync += beat.valid.eq(0)
        if narrow:
            chunks = elem // bus
            chunk = Signal(max(1, exact_log2(chunks)))
            take_chunk = queue.r_rdy & out_free
            with m.If(take_chunk):
                m.d.sync += [beat.valid.eq(1),
                             beat.payload.data.eq(head.word_select(chunk, bus * 8)
                                                  if chunks > 1 else head),
                             beat.payload.strb.eq(Const((1 << bus) - 1, bus))]
                if chunks > 1:
                    m.d.sync += chunk.eq(chunk + 1)
            m.d.comb += queue.r_en.eq(take_chunk & ((chunk == chunks - 1) if chunks > 1 else 1))
        else:
            lane_reg = Signal(skip_bits)
            acc_data = Signal(bus * 8)
            acc_strb = Signal(bus)
            take = queue.r_rdy & out_free
            lane = Mux(head_meta.first, head_meta.skip, lane_reg)
            lane_strb = Const((1 << elem) - 1, elem) << (lane << log_elem)
            new_data = Signal(bus * 8)
            new_strb = Signal(bus)
            m.d.comb += [
                new_data.eq(acc_data | (head.as_unsigned() << (lane << (log_elem + 3)))),
                new_strb.eq(acc_strb | lane_strb),
                queue.r_en.eq(take),
            ]
            with m.If(take):
                with m.If((lane == lanes - 1) | head_meta.last):
                    m.d.sync += [beat.valid.eq(1), beat.payload.data.eq(new_data),
                                 beat.payload.strb.eq(new_strb), acc_data.eq(0), acc_strb.eq(0),
                                 lane_reg.eq(0)]
                with m.Else():
                    m.d.sync += [acc_data.eq(new_data), acc_strb.eq(new_strb),
                                 lane_reg.eq(lane + 1)]

        # -- responses and completion -------------------------------------------------------------
        resp = self.mem.resp
        resp_y = Signal(formats.SIZE_BITS + 1)
        err = Signal()
        m.d.comb += resp.ready.eq(1)
        with m.If(resp.valid):
            m.d.sync += resp_y.eq(resp_y + 1)
            with m.If(resp.payload.err):
                m.d.sync += err.eq(1)

        # An offered command will be taken; a row the reader has begun will be finished.
        commanded = cmd_y + cmd.valid
        started = rd_y + ((rd_x != 0) | issue)
        with m.If(run & (self.abort | err) & ~stopping):
            m.d.sync += [stopping.eq(1), limit.eq(Mux(commanded > started, commanded, started))]

        with m.FSM(name="store"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [cmd_y.eq(0), cmd_addr.eq(first_addr), rd_x.eq(0), rd_y.eq(0),
                                 rd_row.eq(insn.sram_base), rd_addr.eq(first_addr),
                                 resp_y.eq(0), err.eq(0), stopping.eq(0)]
                    with m.If(insn.x_size == 0):
                        # docs/isa.md §3.2: tokens only.
                        m.next = "DONE"
                    with m.Else():
                        m.d.sync += run.eq(1)
                        m.next = "RUN"
            with m.State("RUN"):
                with m.If((resp_y == rows) & ~(cmd.valid | issue | in_flight)
                          & ~queue.r_rdy & ~beat.valid):
                    m.d.sync += run.eq(0)
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += [self.done.eq(1), self.err.eq(err)]
                m.next = "IDLE"
        return m
