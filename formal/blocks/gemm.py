"""The GEMM unit (hw/core/gemm.py) against docs/isa.md §3.3, as two checks that compose.

One harness that runs the whole unit and compares its ACC write with the int32-wrapping dot
product did not finish (word-level multiplier equivalence through the pipeline). So the claim
is split at the dot product ``D``, the expression the RTL writes for lane (b, o):
``tree_sum(inp[b][k] · wgt[o][k] for k)`` over the rows' int8 views (:func:`rtl_dot`).

``lane``
    Combinational, on z3: for every INP and WGT row and ACC value, ``ACC + D`` of a lane equals
    ``ACC +`` the reference :func:`avta.formal.reference.dot_lane` (products of sign-extended
    int8 elements summed one at a time, wrapping at 32 bits). Checked for lane (0, 0) of free
    rows: :func:`rtl_dot` is one expression of the lane's own rows (``inp[b]``, ``wgt[o]``),
    the same for every (b, o), so lane (0, 0) over every row value is every lane over every
    row value. Whether each lane of the RTL computes that expression of its rows (a fault in
    one lane at one position included) is ``pipe``'s part, which compares every lane. One
    cycle of BMC on a stateless harness (:attr:`~avta.formal.harness.Check.combinational`):
    16 lanes under k-induction ran past 10 minutes on default; one lane takes about a minute.
``pipe``
    The whole unit, one instruction with arbitrary fields from power-on, memories modelled:
    every step writes ``ACC[a] + D(inp, wgt)`` (or 0 with ``reset``) to the ACC row ``a`` its
    s2 index named (``acc_index``, the row the compute stage's hazard check sees), where
    ``ACC[a]`` includes every earlier step's write (forwarding: any distance, back to back
    included) and ``inp``/``wgt`` are the rows its reads returned. The solver picks which step
    is tracked and which ACC row it uses; the rows returned are free. ``D`` here is the
    harness's copy of the RTL's pipelined expression (:func:`~avta.hw.core.gemm.dot_pipeline`
    with ``cfg.gemm_stages`` registers, fed the same rows), which Yosys merges with the RTL's
    own, registers included, when they are the same: a GEMM whose expression differs (the
    ``gemm-product-sign`` fault) fails this check. Bounded (the pipeline's registers are not
    tied to the tracked step by an invariant).

The pipeline's registers only delay: :func:`~avta.hw.core.gemm.dot_pipeline` registers every
partial sum of a level of :func:`~avta.hw.core.gemm.tree_sum`'s tree at its full width and
without an enable, so its output is ``lane``'s expression of the rows ``cfg.gemm_stages``
cycles earlier (``tests/hw/core/test_gemm.py`` runs it at every depth against fsim).

Together: the GEMM unit writes ``ACC[a] + Σ_k sext(INP[b][k])·sext(WGT[o][k])`` wrapping, i.e.
docs/isa.md §3.3, for the rows it reads. That it reads the rows at the micro-op's indices plus
the loop offsets is ``loop_gen``'s part (the offsets) and is not restated here.
"""

from amaranth.hdl import Signal
from amaranth.lib import data

from avta.hw.core.gemm import Gemm, dot_pipeline, tree_sum
from avta.hw.core.sram import geometry, row_layout
from avta.isa import costs
from avta.isa.layout import layouts

from ..harness import Check, Harness
from ..reference import dot_lane

__all__ = ["checks", "rtl_dot"]

#: Width of the step count the ``pipe`` check tracks a step by (the first 2^n steps).
STEP_BITS = 3


def _products(cfg, inp, wgt, b, o):
    return [inp[b][k] * wgt[o][k] for k in range(cfg.block_in)]


def rtl_dot(cfg, inp, wgt, b, o):
    """``D`` for lane (b, o): the expression hw/core/gemm.py writes, without its pipeline
    registers, over ``inp``/``wgt`` row views."""
    return tree_sum(_products(cfg, inp, wgt, b, o))


def _pipe_depth(cfg):
    """``pipe``'s depth: 11 (about 6 steps before the tracked one) for up to 64 products per
    row; 8 above (default's 256 products: step 7 alone took over 3 minutes before the index
    register); plus the row register and the dot product's pipeline registers. The first
    write comes at cycle 6 + ``cfg.gemm_stages``, so depth 9 + stages still checks three
    steps, back to back."""
    return ((11 if cfg.batch * cfg.block_out * cfg.block_in <= 64 else 8) + costs.ROW_REGISTER
            + cfg.gemm_stages)


def _lanes(cfg):
    return [(b, o) for b in range(cfg.batch) for o in range(cfg.block_out)]


class GemmLaneHarness(Harness):
    """``ACC + D`` of lane (0, 0) against the reference, for free rows (see the module)."""

    def __init__(self, cfg):
        super().__init__()
        self._cfg = cfg

    def properties(self, m):
        cfg = self._cfg
        inp_row, wgt_row, acc_row = (row_layout(cfg, p) for p in ("inp", "wgt", "acc"))
        inp, wgt = data.View(inp_row, self.input("inp", inp_row.size)), \
            data.View(wgt_row, self.input("wgt", wgt_row.size))
        acc_raw = self.input("acc", acc_row.size)
        acc = data.View(acc_row, acc_raw)
        width = cfg.acc_width
        got = Signal(width, name="got")
        m.d.comb += got.eq(acc[0][0] + rtl_dot(cfg, inp, wgt, 0, 0))
        elements = range(cfg.block_in)
        want = (acc[0][0] + dot_lane([inp[0][k] for k in elements],
                                     [wgt[0][k] for k in elements], width))[:width]
        self.promise(m, got == want)
        self.cover(m, inp[0][0][-1] & (acc[0][0] != 0) & (got != acc[0][0]))


class GemmPipeHarness(Harness):
    def __init__(self, cfg, faults):
        super().__init__()
        self._cfg, self._faults = cfg, faults

    def properties(self, m):
        cfg = self._cfg
        m.submodules.dut = dut = Gemm(cfg=cfg, faults=self._faults)
        lay = layouts(cfg)
        acc_row = row_layout(cfg, "acc")
        acc_bits = geometry(cfg, "acc").addr_bits

        insn = self.constant(m, "insn", lay.gemm.size)
        m.d.comb += [dut.start.eq(~self.started(m)), dut.abort.eq(0), dut.insn.eq(insn)]
        gemm = lay.gemm(insn)

        # Memories: the micro-op, INP and WGT rows read are free (any value at every read); ACC
        # row ``a`` (picked by the solver) holds ``acc_a``, which starts free and follows every
        # write to it; a read of ``a`` in the cycle of a write returns the new row (the
        # transparent port the unit requires); other ACC rows read free.
        m.d.comb += [dut.uop_rd.data.eq(self.input("uop_data", len(dut.uop_rd.data))),
                     dut.inp_rd.data.eq(self.input("inp_data", len(dut.inp_rd.data))),
                     dut.wgt_rd.data.eq(self.input("wgt_data", len(dut.wgt_rd.data)))]
        a = self.constant(m, "a", acc_bits)
        acc_a = Signal(acc_row.size)
        init = self.input("acc_a_init", acc_row.size)
        acc_now = Signal(acc_row.size)      # ACC[a] before this cycle's write
        m.d.comb += acc_now.eq(acc_a)
        with m.If(~self.started(m)):
            m.d.comb += acc_now.eq(init)
        wr = dut.acc_wr
        write_a = wr.en.any() & (wr.addr == a)
        m.d.sync += acc_a.eq(acc_now)
        with m.If(write_a):
            m.d.sync += acc_a.eq(wr.data)
        read_a, other = Signal(), self.input("acc_other", acc_row.size)
        m.d.sync += read_a.eq(dut.acc_rd.en & (dut.acc_rd.addr == a))
        returned = Signal(acc_row.size)
        m.d.sync += returned.eq(acc_now)
        with m.If(write_a):
            m.d.sync += returned.eq(wr.data)
        m.d.comb += dut.acc_rd.data.eq(other)
        with m.If(read_a):
            m.d.comb += dut.acc_rd.data.eq(returned)

        # The tracked step: the k-th step issued (k picked by the solver); it is in stage s_j
        # when t[j], and writes in s(5+S); its s2 ACC index names row a. Stages after s2 never
        # stall (hold is 0 here), so t[j] follows t[j - 1] one cycle later.
        k = self.constant(m, "k", STEP_BITS)
        issued = Signal(STEP_BITS + 1)
        with m.If(dut.step & ~issued[-1]):
            m.d.sync += issued.eq(issued + 1)
        stages = cfg.gemm_stages
        t = [None] + [Signal(name=f"t{j}") for j in range(1, 6 + stages)]
        m.d.sync += [t[1].eq(dut.step & (issued == k))]
        m.d.sync += [t[j].eq(t[j - 1]) for j in range(2, 6 + stages)]
        self.assume(m, ~t[2] | (dut.acc_index == a))

        # The rows arrive in s3 and are registered (the GEMM's row register); the harness's
        # copy of the pipeline has their dot products in s(4+S).
        inp = Signal(row_layout(cfg, "inp"))
        wgt = Signal(row_layout(cfg, "wgt"))
        m.d.sync += [inp.eq(dut.inp_rd.data), wgt.eq(dut.wgt_rd.data)]
        dots = Signal(acc_row)
        for b, o in _lanes(cfg):
            dot = dot_pipeline(m, _products(cfg, inp, wgt, b, o), stages, name=f"ref{b}_{o}")
            with m.If(t[4 + stages]):
                m.d.sync += dots[b][o].eq(dot)
        want = Signal(acc_row)
        now = data.View(acc_row, acc_now)
        with m.If(~gemm.reset):
            for b, o in _lanes(cfg):
                m.d.comb += want[b][o].eq(now[b][o] + dots[b][o])
        t_write = t[5 + stages]
        self.promise(m, ~t_write | (wr.en.all() & (wr.addr == a)
                                    & (wr.data == want.as_value())))

        wrote_a = Signal()
        with m.If(write_a):
            m.d.sync += wrote_a.eq(1)
        back_to_back = Signal()
        m.d.sync += back_to_back.eq(write_a)
        self.cover(m, t_write & back_to_back & ~gemm.reset & (dots.as_value() != 0))
        self.cover(m, t_write & gemm.reset & wrote_a)


def checks(cfg, faults=frozenset()):
    return [
        Check("gemm", "lane", "a lane's dot product D (the RTL's adder tree of int8 "
              "products, the same expression in every lane) plus ACC equals the "
              "int32-wrapping Σ of docs/isa.md §3.3",
              lambda: GemmLaneHarness(cfg), combinational=True, solver="z3"),
        Check("gemm", "pipe", "every step writes ACC[a] (with every earlier step's write) + "
              "D(rows read), or 0 with reset, to the ACC row it read",
              lambda: GemmPipeHarness(cfg, faults), depth=_pipe_depth(cfg), prove=False),
    ]
