"""VCR: the control registers on an AXI4-Lite subordinate port (docs/architecture.md, control registers).

Register map (byte offsets, 32-bit registers, :data:`avta.isa.registers.REGISTERS`):

=========  ====  ===========================================================================
CTRL       0x00  write bit 0 = 1: launch (ignored while busy). Read: bit 0 busy, bit 1 finish,
                 bit 2 error (finish and error are cleared by the core at launch); the bits
                 are :class:`avta.isa.registers.Ctrl`
CYCLES     0x04  cycles from launch to finish or error (read only)
INSN_COUNT 0x08  instructions to fetch
INSN_ADDR  0x0C  byte address of the first instruction
*_BASE     0x10  UOP, INP, WGT, ACC, OUT base: byte offsets added to DRAM addresses
counters   0x24  the 14 performance counters, 0x24 + 4·i (read only)
ERR_CODE   0x60  docs/isa.md §3.5 code, 0 = none (read only)
ERR_INSN   0x64  index of the offending instruction (read only)
CONFIG_ID  0x68  32-bit hash of the configuration (read only)
VERSION    0x6C  ISA/hardware version (read only)
=========  ====  ===========================================================================

Only the low 8 address bits are decoded (the register window is 256 bytes; the interconnect
selects the window). A read or write of an unmapped offset, and a write to a read-only
register, answer SLVERR, so a host that pokes the wrong place hears about it.
"""

from amaranth import Module, Signal, Const
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from avta.isa.memories import BASE_KEYS
from avta.isa.registers import COUNTER_NAMES, REGISTERS, Ctrl
from avta.version import HW_VERSION

from ..core.faults import FaultName
from .signatures import AxiLiteSignature, Resp

__all__ = ["ControlRegisters", "BASE_NAMES"]

#: The base registers in map order; each is added to its memory type's DRAM addresses.
BASE_NAMES = tuple(f"{key}_BASE" for key in BASE_KEYS)
_RW = ("INSN_COUNT", "INSN_ADDR") + BASE_NAMES
_DECODED_BITS = 8
WORD = 32


class ControlRegisters(wiring.Component):
    """The register file between the host (AXI4-Lite) and the core.

    Ports
    -----
    s_axil : AXI4-Lite subordinate, 32-bit data.
    launch : one-cycle pulse when the host writes CTRL bit 0 while the core is not busy.
    insn_count, insn_addr, uop_base … out_base : the host-written registers, held for the core.
    busy, finished, error : core status, shown in CTRL.
    cycles, counters, err_code, err_insn : core values shown read-only.

    ``faults``: a set of :data:`avta.hw.core.faults.ALL_FAULTS` names (tests only).
    """

    def __init__(self, *, cfg, faults=frozenset()):
        self._cfg = cfg
        self._faults = faults
        members = {
            "s_axil": In(AxiLiteSignature(data_width=WORD)),
            "launch": Out(1),
            "busy": In(1), "finished": In(1), "error": In(1),
            "cycles": In(WORD),
            "counters": In(data.ArrayLayout(WORD, len(COUNTER_NAMES))),
            "err_code": In(WORD), "err_insn": In(WORD),
        }
        for name in _RW:
            members[name.lower()] = Out(WORD)
        super().__init__(members)
        # The write side's state, created here so that the proofs (avta.formal.blocks.vcr) can
        # state their induction invariants over it; not ports, so the Verilog is unchanged.
        # ``aw_full``/``w_full``: an address / data beat taken and waiting for its pair.
        self.aw_full, self.w_full = Signal(name="aw_full"), Signal(name="w_full")
        self.aw_addr = Signal(_DECODED_BITS, name="aw_addr")
        self.w_data = Signal(WORD, name="w_data")
        self.w_strb = Signal(WORD // 8, name="w_strb")

    def elaborate(self, platform):
        m = Module()
        bus = self.s_axil
        # CTRL reads the core's status, each flag at its Ctrl bit; the other bits read 0.
        ctrl = Signal(WORD)
        for bit, status in ((Ctrl.BUSY, self.busy), (Ctrl.FINISH, self.finished),
                            (Ctrl.ERROR, self.error)):
            m.d.comb += ctrl[bit.position].eq(status)
        read_only = {
            REGISTERS["CTRL"]: ctrl,
            REGISTERS["CYCLES"]: self.cycles,
            REGISTERS["ERR_CODE"]: self.err_code,
            REGISTERS["ERR_INSN"]: self.err_insn,
            REGISTERS["CONFIG_ID"]: Const(self._cfg.config_id, WORD),
            REGISTERS["VERSION"]: Const(HW_VERSION, WORD),
        }
        for index in range(len(COUNTER_NAMES)):
            read_only[REGISTERS["COUNTERS"] + 4 * index] = self.counters[index]
        writable = {REGISTERS[name]: getattr(self, name.lower()) for name in _RW}

        # -- writes: take AW and W in either order, then answer on B -------------------------
        aw_full, w_full, aw_addr = self.aw_full, self.w_full, self.aw_addr
        w_data, w_strb = self.w_data, self.w_strb
        m.d.comb += [bus.awready.eq(~aw_full & ~bus.bvalid),
                     bus.wready.eq(~w_full & ~bus.bvalid)]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(bus.awaddr[:_DECODED_BITS])]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)

        m.d.sync += self.launch.eq(0)
        write_ready = aw_full & w_full
        if FaultName.VCR_B_EARLY in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            write_ready = aw_full
        with m.If(write_ready & ~bus.bvalid):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bus.bvalid.eq(1), bus.bresp.eq(Resp.OKAY)]
            word_addr = aw_addr & ~0b11
            with m.Switch(word_addr):
                with m.Case(REGISTERS["CTRL"]):
                    launch = Ctrl.LAUNCH.position
                    idle = ~self.busy
                    if FaultName.VCR_LAUNCH_BUSY in self._faults:
                        # Planted bug (avta.hw.core.faults), for testing the verification tools only.
                        idle = 1
                    m.d.sync += self.launch.eq(w_strb[launch // 8] & w_data[launch] & idle)
                for offset, reg in writable.items():
                    with m.Case(offset):
                        for byte in range(WORD // 8):
                            with m.If(w_strb[byte]):
                                m.d.sync += reg.word_select(byte, 8).eq(
                                    w_data.word_select(byte, 8))
                with m.Default():
                    m.d.sync += bus.bresp.eq(Resp.SLVERR)

        # -- reads: one outstanding, answered the cycle after AR ----------------------------------
        m.d.comb += bus.arready.eq(~bus.rvalid)
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        if FaultName.VCR_R_DROP in self._faults:
            # Planted bug (avta.hw.core.faults), for testing the verification tools only.
            with m.If(bus.rvalid):
                m.d.sync += bus.rvalid.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [bus.rvalid.eq(1), bus.rresp.eq(Resp.OKAY), bus.rdata.eq(0)]
            with m.Switch(bus.araddr[:_DECODED_BITS] & ~0b11):
                for offset, value in {**read_only, **writable}.items():
                    with m.Case(offset):
                        m.d.sync += bus.rdata.eq(value)
                with m.Default():
                    m.d.sync += bus.rresp.eq(Resp.SLVERR)
        return m
