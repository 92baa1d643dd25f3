"""Fixtures of the tsim tests: the configurations tsim runs on in the default test run, devices
on both targets, and a small design for testing the harness on its own.

``copy_design`` is VCR + VME + a copy engine with vta_top's ports: on launch it reads
INSN_COUNT bus beats from INSN_ADDR and writes them to OUT_BASE, then sets finish; any error
response sets error with ERR_CODE 9. CYCLES counts from launch, and the OUT_ST counter counts
the bytes written. It lets the harness's memory model and AXI-Lite host be tested with
everything else real.
"""

import pytest
from amaranth import Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out, flipped

from avta.hw.axi.signatures import AxiLiteSignature, AxiSignature, id_bits
from avta.hw.axi.vcr import ControlRegisters
from avta.hw.axi.vme import MemoryEngine
from avta.hw.verilog import to_verilog
from avta.isa.config import load_config
from avta.isa.enums import ErrorCode
from avta.isa.registers import COUNTER_NAMES
from avta.runtime.device import Device
from avta.sim.fsim.backend import fsim_device
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.tsim.backend import TsimBackend

#: Read commands the copy design's memory engine keeps in flight.
SLOTS = 8

#: The configurations tsim runs on in the default test run: small, and upstream's.
TSIM_CONFIGS = ("tiny", "default")
#: DRAM of the devices on both targets.
DRAM_BYTES = 1 << 20


@pytest.fixture(params=TSIM_CONFIGS)
def cfg(request):
    return load_config(request.param)


@pytest.fixture(scope="session")
def both_targets():
    """``make(cfg, knobs=MemoryKnobs())``: fresh devices ``(fsim, tsim)`` of ``cfg`` with equal
    DRAM; ``knobs`` set tsim's memory model."""
    def make(cfg, knobs=MemoryKnobs()):
        return (fsim_device(cfg, dram_size=DRAM_BYTES),
                Device(cfg, TsimBackend(cfg, dram_size=DRAM_BYTES, knobs=knobs)))
    return make


@pytest.fixture(scope="module", params=["tiny", "wide"])
def copy_design(request):
    """``(cfg, verilog)`` of :class:`CopyTop` on a 64-bit and a 256-bit bus."""
    cfg = load_config(request.param)
    return cfg, to_verilog(CopyTop(cfg), name="vta_top")


class CopyTop(wiring.Component):
    """The copy design (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        super().__init__({
            "s_axil": In(AxiLiteSignature()),
            "m_axi": Out(AxiSignature(data_width=cfg.axi_data_bits, id_width=id_bits(SLOTS))),
        })

    def elaborate(self, platform):
        m = Module()
        bits = self._cfg.axi_data_bits
        m.submodules.vcr = vcr = ControlRegisters(cfg=self._cfg)
        m.submodules.vme = vme = MemoryEngine(data_bits=bits, read_clients={"copy": 1},
                                              read_slots=SLOTS)
        m.submodules.buffer = buf = fifo.SyncFIFOBuffered(width=bits, depth=8)
        wiring.connect(m, flipped(self.s_axil), vcr.s_axil)
        wiring.connect(m, flipped(self.m_axi), vme.m_axi)

        busy, finished, error = Signal(), Signal(), Signal()
        cycles, written = Signal(32), Signal(32)
        issue_read, issue_write = Signal(), Signal()
        m.d.comb += [vcr.busy.eq(busy), vcr.finished.eq(finished), vcr.error.eq(error),
                     vcr.cycles.eq(cycles), vcr.err_code.eq(error_code(error)),
                     vcr.counters[COUNTER_NAMES.index("OUT_ST")].eq(written)]
        with m.If(vcr.launch):
            m.d.sync += [busy.eq(1), finished.eq(0), error.eq(0), cycles.eq(0), written.eq(0),
                         issue_read.eq(vcr.insn_count != 0), issue_write.eq(vcr.insn_count != 0)]
            with m.If(vcr.insn_count == 0):
                m.d.sync += [busy.eq(0), finished.eq(1)]
        with m.If(busy):
            m.d.sync += cycles.eq(cycles + 1)

        rd, wr = vme.copy, vme.write
        m.d.comb += [rd.cmd.valid.eq(issue_read), rd.cmd.p.addr.eq(vcr.insn_addr),
                     rd.cmd.p.beats.eq(vcr.insn_count), rd.cmd.p.tag.eq(0)]
        with m.If(rd.cmd.valid & rd.cmd.ready):
            m.d.sync += issue_read.eq(0)
        m.d.comb += [buf.w_data.eq(rd.data.p.data), buf.w_en.eq(rd.data.valid),
                     rd.data.ready.eq(buf.w_rdy)]
        with m.If(rd.data.valid & rd.data.ready & rd.data.p.err):
            m.d.sync += error.eq(1)
        m.d.comb += [wr.cmd.valid.eq(issue_write), wr.cmd.p.addr.eq(vcr.out_base),
                     wr.cmd.p.beats.eq(vcr.insn_count)]
        with m.If(wr.cmd.valid & wr.cmd.ready):
            m.d.sync += issue_write.eq(0)
        m.d.comb += [wr.data.valid.eq(buf.r_rdy), wr.data.p.data.eq(buf.r_data),
                     wr.data.p.strb.eq(-1), buf.r_en.eq(wr.data.ready)]
        with m.If(wr.data.valid & wr.data.ready):
            m.d.sync += written.eq(written + bits // 8)
        m.d.comb += wr.resp.ready.eq(1)
        with m.If(wr.resp.valid):
            m.d.sync += busy.eq(0)
            with m.If(wr.resp.p.err | error):
                m.d.sync += error.eq(1)
            with m.Else():
                m.d.sync += finished.eq(1)
        return m


def error_code(error):
    return Mux(error, ErrorCode.DRAM_OUT_OF_RANGE.value, 0)
