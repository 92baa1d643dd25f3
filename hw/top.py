"""``vta_top``: the core behind its shell, an AXI4 manager (VME) and AXI4-Lite control registers.

Ports (docs/architecture.md): ``clk``, ``rst`` (active high, synchronous), ``s_axil__*`` (the host's
AXI4-Lite port to the control registers, 32-bit) and ``m_axi__*`` (the AXI4 manager to DRAM,
``cfg.axi_data_bits`` wide, 32-bit addresses); with ``trace=True`` also ``trace__*`` outputs
(:mod:`avta.hw.core.trace_port`), with ``activity=True`` also ``activity__*`` outputs
(:mod:`avta.hw.core.activity_port`).
"""

import functools

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, flipped

from avta.isa.registers import COUNTER_NAMES

from .axi.signatures import AxiLiteSignature, AxiSignature, id_bits
from .axi.vcr import ControlRegisters
from .axi.vme import MemoryEngine
from .core.core import READ_CLIENTS, WRITE_CLIENTS, Core
from .core.faults import check_faults
from .verilog import to_verilog

__all__ = ["VtaTop", "top_verilog", "READ_SLOTS"]

#: Read commands in flight at once in the memory engine (AXI IDs 0..7).
READ_SLOTS = 8
#: The core's read clients, in the order the memory engine arbitrates them.


class VtaTop(wiring.Component):
    """The whole accelerator of one configuration."""

    def __init__(self, *, cfg, trace=False, activity=False, faults=()):
        self._cfg = cfg
        self._trace = trace
        self._activity = activity
        self._faults = check_faults(faults)
        self._core = Core(cfg=cfg, trace=trace, activity=activity, faults=self._faults)
        self._id_width = id_bits(READ_SLOTS)
        members = {
            "s_axil": In(AxiLiteSignature()),
            "m_axi": Out(AxiSignature(data_width=cfg.axi_data_bits, id_width=self._id_width)),
        }
        if trace:                       # the core's trace port, passed through
            members["trace"] = Out(self._core.signature.members["trace"].signature)
        if activity:                    # the core's activity port, passed through
            members["activity"] = Out(self._core.signature.members["activity"].signature)
        super().__init__(members)

    @property
    def cfg(self):
        return self._cfg

    def elaborate(self, platform):
        m = Module()
        core = m.submodules.core = self._core
        tags = {name: getattr(core, name).signature.tag_shape for name in READ_CLIENTS}
        vme = m.submodules.vme = MemoryEngine(data_bits=self._cfg.axi_data_bits,
                                              read_clients=tags, read_slots=READ_SLOTS,
                                              faults=self._faults)
        vcr = m.submodules.vcr = ControlRegisters(cfg=self._cfg, faults=self._faults)

        wiring.connect(m, flipped(self.s_axil), vcr.s_axil)
        wiring.connect(m, flipped(self.m_axi), vme.m_axi)
        for name in READ_CLIENTS:
            wiring.connect(m, getattr(core, name), getattr(vme, name))
        (write_client,) = WRITE_CLIENTS         # the memory engine has one write port
        wiring.connect(m, getattr(core, write_client), vme.write)
        if self._trace:
            wiring.connect(m, core.trace, flipped(self.trace))
        if self._activity:
            wiring.connect(m, core.activity, flipped(self.activity))

        m.d.comb += [
            core.launch.eq(vcr.launch),
            core.insn_addr.eq(vcr.insn_addr), core.insn_count.eq(vcr.insn_count),
            core.uop_base.eq(vcr.uop_base), core.inp_base.eq(vcr.inp_base),
            core.wgt_base.eq(vcr.wgt_base), core.acc_base.eq(vcr.acc_base),
            core.out_base.eq(vcr.out_base),
            vcr.busy.eq(core.busy), vcr.finished.eq(core.finish), vcr.error.eq(core.error),
            vcr.cycles.eq(core.cycles), vcr.err_code.eq(core.err_code),
            vcr.err_insn.eq(core.err_insn),
        ]
        for index, name in enumerate(COUNTER_NAMES):
            m.d.comb += vcr.counters[index].eq(core.counters[name.lower()])
        return m


def top_verilog(cfg, *, trace=False, activity=False, faults=()):
    """Verilog text of ``vta_top`` for ``cfg``, with its inline lint waivers (cached: the
    text is a pure function of the frozen configuration and the options).

    ``trace`` adds the ``trace__*`` output ports (:mod:`avta.hw.core.trace_port`) that tsim's
    trace manager samples; ``activity`` adds the ``activity__*`` output ports
    (:mod:`avta.hw.core.activity_port`) that tsim's activity recorder samples; ``faults`` plants
    bugs (:mod:`avta.hw.core.faults`, tests only).
    """
    return _top_verilog(cfg, bool(trace), bool(activity), check_faults(faults))


@functools.lru_cache(maxsize=8)
def _top_verilog(cfg, trace, activity, faults):
    return to_verilog(VtaTop(cfg=cfg, trace=trace, activity=activity, faults=faults),
                      name="vta_top")
