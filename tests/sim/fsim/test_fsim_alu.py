"""ALU (docs/isa.md §3.4): every op with an immediate and with a tensor operand, SHR amounts in both
directions and out of range, read-after-write chains at distances 1..6, against a per-step,
per-lane reference in plain Python integers."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType
from avta.isa.insn import Uop
from avta.sim.fsim.alu import alu_op, hazard_free_chunks, scale_widths
from avta.sim.image import Image, alu, load, run_alone

UOPS, ACC = 0x800, 0x1000
ACC_ROWS = 96


EDGES = [-2**31, -2**31 + 1, -129, -128, -1, 0, 1, 31, 32, 33, 127, 128, 255, 2**31 - 1]


def acc_values(cfg, rng):
    lanes = cfg.batch * cfg.block_out
    values = rng.integers(-2**31, 2**31, (ACC_ROWS, lanes), dtype=np.int64)
    # A third edge values, a third small ones (shift amounts, clip bounds), a third anything.
    kind = rng.integers(0, 3, values.shape)
    values = np.where(kind == 0, rng.choice(EDGES, size=values.shape), values)
    values = np.where(kind == 1, rng.integers(-70, 70, values.shape), values)
    return values.astype(np.int32).reshape(ACC_ROWS, cfg.batch, cfg.block_out)


@pytest.fixture
def run_alu(reference_alu):
    """``run_alu(cfg, insn, kernel, seed=0)``: ``insn`` run alone on random ACC rows, the
    result against :func:`reference_alu` (ACC and its OUT mirror); returns the result."""
    def run(cfg, insn, kernel, seed=0):
        scale_bits = cfg.scale_bits or 16
        rng = np.random.default_rng(seed)
        acc = acc_values(cfg, rng)
        image = Image(cfg, size=1 << 16)
        image.put_uops(UOPS, kernel)
        image.put(ACC, acc)
        image.add(load(MemType.UOP, dram=UOPS // cfg.uop_elem_bytes, x=len(kernel)),
                  load(MemType.ACC, dram=ACC // cfg.acc_elem_bytes, x=ACC_ROWS))
        result, sim = run_alone(image, insn)
        assert result.status == "ok", result.detail
        expected = reference_alu(insn, kernel, acc, scale_bits)
        got = np.array(sim.sram("acc")[:ACC_ROWS]).reshape(ACC_ROWS, -1)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(sim.sram("out")[:ACC_ROWS].reshape(ACC_ROWS, -1),
                                      expected.astype(np.int8))
        assert result.counters["ALU_STEPS"] == insn.steps
        return result
    return run


# -- the op table on single values -----------------------------------------------------------

# (op, A, B, result): one row per rule of docs/isa.md §3.4.
VALUES = [
    (AluOp.MIN, 5, -3, -3), (AluOp.MIN, -2**31, 2**31 - 1, -2**31),
    (AluOp.MAX, 5, -3, 5), (AluOp.MAX, -1, 0, 0),
    (AluOp.ADD, 2**31 - 1, 1, -2**31), (AluOp.ADD, -2**31, -1, 2**31 - 1),
    (AluOp.SHR, -8, 1, -4), (AluOp.SHR, -1, 31, -1), (AluOp.SHR, 2**30, 30, 1),
    (AluOp.SHR, 1, -1, 2), (AluOp.SHR, 0x4000_0000, -1, -2**31), (AluOp.SHR, 3, -31, -2**31),
    (AluOp.SHR, 3, -32, 0), (AluOp.SHR, 3, 32, 0), (AluOp.SHR, 3, 33, -2**31),
    (AluOp.SHR, 5, 64, 5), (AluOp.SHR, 20, 66, 5), (AluOp.SHR, -5, -64, -5),
    (AluOp.SHR, 2**30, -33, 0),   # -33 has B[5:0] = 31: a right shift by 31
    (AluOp.MUL, 0x1FF, 3, -3), (AluOp.MUL, -128, -128, 16384), (AluOp.MUL, 127, -128, -16256),
    (AluOp.MUL, 0x12345680, 0x7F, -16256),
    (AluOp.CLP, 100, 50, 50), (AluOp.CLP, -100, 50, -50), (AluOp.CLP, 10, 50, 10),
    (AluOp.CLP, 5, -3, 3), (AluOp.CLP, 7, -2**31, -2**31),
    (AluOp.MOV, 9, -7, -7),
    # SCL: ⌊A·m/2^15⌋; B[31:16] ignored; the one wrapping case.
    (AluOp.SCL, 1000, 1 << 14, 500), (AluOp.SCL, 3, 1 << 14, 1), (AluOp.SCL, -3, 1 << 14, -2),
    (AluOp.SCL, -5, 1 << 14, -3), (AluOp.SCL, 7, -(1 << 15), -7), (AluOp.SCL, 1, 1 << 14, 0),
    (AluOp.SCL, -1, 1 << 14, -1), (AluOp.SCL, 12345, 0x7FFF0000 | 0x5555, 8229),
    (AluOp.SCL, 2**31 - 1, 0x7FFF, 2**31 - 2**16 - 1), (AluOp.SCL, -2**31, 0x7FFF, -2**31 + 2**16),
    (AluOp.SCL, -2**31, 0x8000, -2**31), (AluOp.SCL, 2**31 - 1, -(1 << 15), -2**31 + 1),
    (AluOp.SCL, 100, 0, 0), (AluOp.SCL, 40000, 0x10000 - 3, -4),
]


@pytest.mark.parametrize("op, a, b, expected", VALUES,
                         ids=[f"{AluOp(v[0]).name}({v[1]},{v[2]})" for v in VALUES])
def test_alu_op_values(ref_op, op, a, b, expected):
    assert ref_op(op, a, b) == expected      # the test's reference agrees with the spec row
    got = alu_op(op, np.array([a], dtype=np.int32), np.array([b], dtype=np.int32))
    assert got.dtype == np.int32 and int(got[0]) == expected


# (A, B, result) of SCL with a 24-bit multiplier (ALU_SCALE: 2): ⌊A·sext(B[23:0])/2^23⌋.
WIDE_VALUES = [
    (1000, 1 << 22, 500), (-3, 1 << 22, -2), (7, -(1 << 23), -7), (-1, 1 << 22, -1),
    (12345, 0x7F000000 | 0x555555, 8229), (2**31 - 1, 0x7FFFFF, 2**31 - 2**8 - 1),
    (-2**31, 0x800000, -2**31), (40000, 0x1000000 - 3, -1), (123457, 0x6A3D71, 102469),
]


@pytest.mark.parametrize("a, b, expected", WIDE_VALUES)
def test_scl_values_with_a_24_bit_multiplier(ref_op, a, b, expected):
    assert ref_op(AluOp.SCL, a, b, 24) == expected
    got = alu_op(AluOp.SCL, np.array([a], np.int32), np.array([b], np.int32), scale_bits=24)
    assert int(got[0]) == expected


# -- whole instructions ----------------------------------------------------------------------

KERNEL = [Uop(0, 40), Uop(1, 41), Uop(2, 2), Uop(3, 50)]     # one dst == src (in place)
IMMS = {AluOp.SHR: [-40, -33, -32, -5, 0, 3, 31, 32, 33, 100],
        AluOp.MUL: [-32768, -129, -1, 7, 255, 32767]}
FORMS = [(op, None) for op in AluOp] + \
    [(op, imm) for op in AluOp for imm in IMMS.get(op, [-32768, -1, 0, 5, 32767])]


@pytest.mark.parametrize("config", ["tiny", "batch2"])
@pytest.mark.parametrize("op, imm", FORMS,
                         ids=[f"{AluOp(o).name}-{'tensor' if i is None else f'imm{i}'}"
                              for o, i in FORMS])
def test_alu_forms(run_alu, config, op, imm):
    insn = alu(op, uops=(0, 4), iters=(2, 3), dst=(12, 4), src=(5, 1), imm=imm)
    cfg = load_config(config).replace(alu_scale=int(op == AluOp.SCL))
    run_alu(cfg, insn, KERNEL, seed=int(op) * 1000 + (imm or 0) % 1000)


@pytest.mark.parametrize("imm", [None, -32768, -1, 5, 32767])
def test_scl_forms_with_a_24_bit_multiplier(run_alu, imm):
    """ALU_SCALE: 2: from a row ⌊A·sext(B[23:0])/2^23⌋; an immediate is sext(imm) · 2^8, so it
    means imm / 2^15 as with ALU_SCALE: 1."""
    insn = alu(AluOp.SCL, uops=(0, 4), iters=(2, 3), dst=(12, 4), src=(5, 1), imm=imm)
    run_alu(load_config("tiny").replace(alu_scale=2), insn, KERNEL, seed=7 + (imm or 0) % 1000)


@pytest.mark.parametrize("alu_scale, widths", [(0, (16, 0)), (1, (16, 0)), (2, (24, 8))])
def test_scale_widths_place_the_immediate_in_the_multipliers_top_bits(alu_scale, widths):
    """SCL's multiplier width W and the shift that makes an immediate sext(imm) · 2^(W−16), the
    one place the Python machine and the compiled interpreter read them from (16 without SCL,
    which never runs there)."""
    assert scale_widths(load_config("tiny").replace(alu_scale=alu_scale)) == widths


@pytest.mark.parametrize("use_imm", [False, True], ids=["tensor", "imm"])
def test_scl_is_error_2_without_alu_scale(tiny_cfg, use_imm):
    image = Image(tiny_cfg, size=1 << 16)
    result, _ = run_alone(image, alu(AluOp.SCL, uops=(0, 1), iters=(1, 1),
                                     imm=1 << 14 if use_imm else None))
    assert result.status == "error" and result.error_code == 2


# (id, kernel, (iter_out, iter_in), dst factors, src factors): a step reads what an earlier
# step of the same instruction wrote.
CHAINS = []
for distance in range(1, 7):
    CHAINS.append((f"src reads dst of step -{distance}", [Uop(distance, 0)], (1, 24), (0, 1),
                   (0, 1)))
    CHAINS.append((f"dst rewritten every {distance} steps", [Uop(0, 48)], (5, distance),
                   (0, 1), (distance, 1)))
    CHAINS.append((f"kernel of {distance} micro-ops, loop-carried", [Uop(i, i + 1)
                   for i in range(distance)], (2, 3), (0, 1), (1, 0)))


@pytest.mark.parametrize("use_imm", [False, True], ids=["tensor", "imm"])
@pytest.mark.parametrize("op", [AluOp.ADD, AluOp.SHR, AluOp.MAX, AluOp.MOV],
                         ids=lambda o: AluOp(o).name)
@pytest.mark.parametrize("chain", CHAINS, ids=[c[0] for c in CHAINS])
def test_alu_read_after_write_chains(tiny_cfg, run_alu, chain, op, use_imm):
    _, kernel, iters, dst, src = chain
    insn = alu(op, uops=(0, len(kernel)), iters=iters, dst=dst, src=src,
               imm=(1 if op == AluOp.SHR else 3) if use_imm else None)
    run_alu(tiny_cfg, insn, kernel, seed=len(kernel))


def test_degenerate_alu_is_a_no_op(tiny_cfg, run_alu):
    result = run_alu(tiny_cfg, alu(AluOp.ADD, uops=(2, 1), iters=(3, 3), imm=5), KERNEL)
    assert result.counters["ALU_STEPS"] == 0


# -- the chunking itself ---------------------------------------------------------------------

# (dst, src, expected chunks)
CHUNKS = [
    ([0, 1, 2, 3], [4, 5, 6, 7], [(0, 4)]),
    ([0, 1, 2, 3], [0, 1, 2, 3], [(0, 4)]),          # in place: each step reads its own row
    ([1, 2, 3], [0, 1, 2], [(0, 1), (1, 2), (2, 3)]),  # distance-1 chain through src
    ([0, 1, 0, 1], [5, 5, 5, 5], [(0, 2), (2, 4)]),  # write after write at distance 2
    ([5, 6, 7], [0, 5, 1], [(0, 1), (1, 3)]),        # step 1 reads row 5 written by step 0
    ([0, 1, 2], [1, 2, 9], [(0, 3)]),                # write after read only: one chunk
    ([], [], [(0, 0)]),
]


@pytest.mark.parametrize("dst, src, expected", CHUNKS)
def test_hazard_free_chunks(dst, src, expected):
    assert hazard_free_chunks(np.array(dst, dtype=np.int64),
                              np.array(src, dtype=np.int64)) == expected


@pytest.mark.parametrize("op", [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR])
def test_an_immediate_operand_computes_as_a_full_row(op):
    """alu_imm (a scalar immediate, the common requantization tail) gives what alu_op gives with
    a row of that immediate, on extreme lanes and for every shift amount the field holds."""
    from avta.sim.fsim.alu import alu_imm
    lanes = np.array([0, 1, -1, 127, -128, 2**31 - 1, -2**31, 0x12345678, -0x12345678],
                     dtype=np.int32).reshape(3, 1, 3)
    for imm in (*range(-40, 41), 127, -128, 2**15 - 1, -2**15):
        expected = alu_op(op, lanes, np.full_like(lanes, imm))
        got = alu_imm(op, lanes, imm)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, expected, err_msg=f"{op.name} {imm}")
