"""A scratchpad built from memories that a block RAM or an SRAM macro can be.

Every memory here has one write port and one synchronous read port (simple dual-port) and no
read-during-write behaviour of its own, which is what an FPGA block RAM and a compiled SRAM
macro offer. The units see *logical* ports with the scratchpad's whole row index, as if the
scratchpad were one memory with as many ports as they need; :class:`BankedScratchpad` maps them
onto its memories:

* **banks** (:data:`avta.isa.memories.BANKS`): the top bits of a row index pick a bank, each bank
  a memory of ``depth / banks`` rows. A logical write goes to the bank of its row, and so does a
  logical read. Two writers or two readers on one bank in one cycle is a *conflict*: the
  hardware's protocol must avoid it (the compute stage holds a GEMM step whose bank a detached
  ALU instruction uses, hw/core/compute.py); ``conflict`` reports it for the checks;
* **interleaved banks** (:data:`avta.isa.memories.INTERLEAVED`, the micro-ops): the low bits of
  a row index pick the bank, so ``banks`` consecutive rows lie in ``banks`` different memories
  and one logical write writes them all (its data holds them lowest first, enable ``j`` writes
  row ``addr + j``): row ``addr + j`` goes to bank ``(addr + j) mod banks`` at index
  ``(addr + j) div banks``, which is ``addr div banks``, plus one in the banks below
  ``addr mod banks``;
* **copies**: a reader assigned to copy ``c`` reads memories of its own that every write also
  writes, so two readers that may read in the same cycle (the GEMM's and the ALU's micro-op
  reads; the ALU's second ACC operand) get a port each;
* **forwarding** (``forward``, for ACC: the writers named there): a read in the cycle of such a
  writer's write to the same row returns the written data, through registers beside the memory
  (the written row and, per read port, which write enables hit), not through the memory. A
  writer left out is one whose writes no read meets in their cycle (ACC's loader: a LOAD never
  runs beside a reader of ACC), so its address and enables stay out of the match, the path
  that bound the core on an FPGA (docs/architecture.md, timing on an FPGA).

A logical read port's ``data`` is valid in the cycle after a read with ``en``; it holds while
``en`` is low only when the port has its memories to itself (every scratchpad but ACC, whose
banks the GEMM and the ALU take turns on: their pipelines use each read's data in the next
cycle).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out

from avta.isa.memories import scratchpad

from .sram import geometry, read_signature, write_signature

__all__ = ["BankedScratchpad", "memory_name"]


def memory_name(bank, copy):
    """The name of the memory of ``bank`` and ``copy`` (``bank0``, ``bank1_copy1``)."""
    return f"bank{bank}" + (f"_copy{copy}" if copy else "")


class BankedScratchpad(wiring.Component):
    """Scratchpad ``name`` of ``cfg`` with logical ports ``wr_<writer>`` and ``rd_<reader>``.

    Parameters
    ----------
    writers : tuple of str
        The logical write ports, in priority order for a conflict (the first wins).
    readers : dict
        Reader name → the copy it reads (0, 1, ...); readers of one copy share its bank ports.
    forward : tuple of str
        The writers whose writes reads see in the same cycle (see the module docstring); reads
        in the cycle of another writer's write to their row return the row before it.

    Attributes
    ----------
    memories : dict
        ``(bank, copy)`` → ``amaranth.lib.memory.Memory`` of ``bank_rows`` rows, created here
        so that a harness can add ports to them (formal/blocks/compute.py preloads them).
    conflict : Out(1)
        Two writers, or two readers of one copy, on one bank this cycle.
    """

    def __init__(self, cfg, name, *, writers, readers, forward=()):
        self._cfg, self._name = cfg, name
        self._geo = geo = geometry(cfg, name)
        pad = scratchpad(cfg, name)
        self.banks, self.bank_rows = pad.banks, pad.bank_rows
        self._pad = pad
        self._interleaved = pad.interleaved
        self._local_bits = pad.bank_row_bits
        self._bank_bits = (self.banks - 1).bit_length()
        self.copies = 1 + max(readers.values(), default=0)
        forward = tuple(forward)
        if not set(forward) <= set(writers):
            raise ValueError(f"forwarded writers {forward!r} are not among {writers!r}")
        if forward and self._interleaved:
            raise ValueError(f"{name} is interleaved: its writes cannot be forwarded")
        self._writers, self._readers, self._forward = tuple(writers), dict(readers), forward
        members = {f"wr_{w}": Out(write_signature(geo)) for w in self._writers}
        members |= {f"rd_{r}": Out(read_signature(geo)) for r in self._readers}
        members["conflict"] = Out(1)
        super().__init__(members)
        self.memories = {(b, c): Memory(shape=unsigned(geo.row_bits), depth=self.bank_rows, init=[])
                         for b in range(self.banks) for c in range(self.copies)}

    def locate(self, row):
        """``(bank, index in the bank)`` of logical row ``row`` (an int)."""
        return self._pad.locate(row)

    def _split(self, addr):
        """``(bank, local)`` parts of a logical address signal."""
        if self.banks == 1:
            return 0, addr
        if self._interleaved:
            return addr[:self._bank_bits], addr[self._bank_bits:]
        return addr[self._local_bits:], addr[:self._local_bits]

    def _bank_write(self, m, port, b):
        """``(addr, data, en)`` that logical write ``port`` gives bank ``b``: the whole write
        when the banks are not interleaved (``en`` only where its row is in bank ``b``), else
        the one of its rows that lies in bank ``b`` (see the module docstring)."""
        geo = self._geo
        bank, local = self._split(port.addr)
        if not self._interleaved:
            return local, port.data, Mux(bank == b, port.en, 0)
        lane = Signal(self._bank_bits, name=f"bank{b}_wr_lane")
        m.d.comb += lane.eq(b - bank)
        row_local = Signal(len(local), name=f"bank{b}_wr_local")
        # (The last bank's row is never below ``addr``'s.)
        m.d.comb += row_local.eq(local + (b < bank) if b < self.banks - 1 else local)
        return row_local, port.data.word_select(lane, geo.row_bits), port.en.bit_select(lane, 1)

    def elaborate(self, platform):
        m = Module()
        geo = self._geo
        chunk = geo.granularity or geo.row_bits
        conflicts, bank_data = [], {}
        for (b, c), mem in self.memories.items():
            m.submodules[memory_name(b, c)] = mem

        for b in range(self.banks):
            # -- the bank's one write: its writer this cycle, the first in priority order -----
            port_wr = {c: self.memories[(b, c)].write_port(granularity=geo.granularity)
                       for c in range(self.copies)}
            addr, data = Signal(len(port_wr[0].addr)), Signal(geo.row_bits)
            en = Signal(len(port_wr[0].en), name=f"bank{b}_wr_en")
            # The forwarded writers' write alone (the match below sees no other writer).
            fwd_addr = Signal.like(addr, name=f"bank{b}_fwd_addr")
            fwd_en = Signal(geo.en_bits, name=f"bank{b}_fwd_en")
            chosen = []
            for w in reversed(self._writers):
                port = getattr(self, f"wr_{w}")
                local, w_data, w_en = self._bank_write(m, port, b)
                sel = Signal(name=f"bank{b}_wr_{w}")
                m.d.comb += sel.eq(w_en.any())
                with m.If(sel):
                    m.d.comb += [addr.eq(local), data.eq(w_data), en.eq(w_en)]
                    if w in self._forward:
                        m.d.comb += [fwd_addr.eq(local), fwd_en.eq(w_en)]
                chosen.append(sel)
            conflicts.append(_two_or_more(chosen))
            for port in port_wr.values():
                m.d.comb += [port.addr.eq(addr), port.data.eq(data), port.en.eq(en)]
            written = Signal(geo.row_bits, name=f"bank{b}_written")
            if self._forward:
                # `data` is a forwarded writer's whenever one writes: without a conflict it is
                # the only writer of the bank this cycle.
                with m.If(fwd_en.any()):
                    m.d.sync += written.eq(data)

            # -- each copy's one read: its reader this cycle -------------------------------------
            for c in range(self.copies):
                mem_rd = self.memories[(b, c)].read_port()
                chosen = []
                for r in reversed([r for r, copy in self._readers.items() if copy == c]):
                    port = getattr(self, f"rd_{r}")
                    bank, local = self._split(port.addr)
                    sel = Signal(name=f"bank{b}_copy{c}_rd_{r}")
                    m.d.comb += sel.eq(port.en & (bank == b))
                    with m.If(sel):
                        m.d.comb += mem_rd.addr.eq(local)
                    chosen.append(sel)
                m.d.comb += mem_rd.en.eq(Cat(chosen).any())
                conflicts.append(_two_or_more(chosen))
                out = mem_rd.data
                if self._forward:
                    hit = Signal(geo.en_bits, name=f"bank{b}_copy{c}_hit")
                    with m.If(mem_rd.en):
                        m.d.sync += hit.eq(fwd_en
                                           & (fwd_addr == mem_rd.addr).replicate(geo.en_bits))
                    out = Cat(Mux(hit[i], written.word_select(i, chunk),
                                  mem_rd.data.word_select(i, chunk))
                              for i in range(geo.en_bits))
                bank_data[(b, c)] = out

        # -- each reader's data: the bank it read last ------------------------------------------
        for r, c in self._readers.items():
            port = getattr(self, f"rd_{r}")
            if self.banks == 1:
                m.d.comb += port.data.eq(bank_data[(0, c)])
                continue
            bank, _ = self._split(port.addr)
            read_bank = Signal.like(bank, name=f"{r}_bank")
            with m.If(port.en):
                m.d.sync += read_bank.eq(bank)
            with m.Switch(read_bank):
                for b in range(self.banks):
                    with m.Case(b):
                        m.d.comb += port.data.eq(bank_data[(b, c)])
        m.d.comb += self.conflict.eq(Cat(conflicts).any())
        return m


def _two_or_more(bits):
    """1 when at least two of ``bits`` are set."""
    seen, two = Const(0), Const(0)
    for bit in bits:
        two |= seen & bit
        seen |= bit
    return two
