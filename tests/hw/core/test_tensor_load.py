"""TensorLoad: 2-D strided LOADs with padding, pad values, ACC_8BIT and micro-ops (docs/isa.md §3.1),
through the memory model with latency, backpressure and out-of-order completion, compared row
for row with fsim's LOAD."""

import random
import re

import numpy as np
import pytest
from amaranth.back import rtlil

from avta.hw.core.tensor_load import COMPUTE_STAGE_TYPES, LOAD_STAGE_TYPES, TensorLoad
from avta.sim.amaranth.testbench import run_sim, start_insn, wait_until
from avta.sim.amaranth.dram import DramModel
from avta.sim.memory_knobs import MemoryKnobs
from avta.sim.amaranth.harness import ScratchpadHarness
from avta.isa.config import load_config
from avta.isa.enums import MemType, Opcode, PadValue
from avta.isa.insn import MemoryInsn
from avta.sim.fsim.dram import Dram
from avta.isa.memories import memory
from avta.sim.fsim.memops import execute_load
from avta.sim.fsim.state import Scratchpads

DRAM_BYTES = 4096


def random_load(cfg, rng, mtype, *, pads=True):
    target = memory(cfg, mtype)
    depth = target.scratchpad.depth
    elem = target.elem_bytes
    max_elems = DRAM_BYTES // elem
    while True:
        x_size = rng.randint(1, 5)
        y_size = rng.randint(0 if pads else 1, 3)
        x_stride = x_size + rng.randint(0, 3)
        p = [rng.choice([0, 0, 1, 2]) if pads else 0 for _ in range(4)]
        width, height = p[2] + x_size + p[3], p[0] + y_size + p[1]
        last = (y_size - 1) * x_stride + x_size if y_size else 0
        if width * height > depth or last > max_elems or width * height == 0:
            continue
        return MemoryInsn(
            opcode=Opcode.LOAD, memory_type=mtype,
            sram_base=rng.randrange(depth), dram_base=rng.randrange(max_elems - last + 1),
            pad_value=rng.choice(list(PadValue)), y_size=y_size, x_size=x_size,
            x_stride=x_stride, y_pad_0=p[0], y_pad_1=p[1], x_pad_0=p[2], x_pad_1=p[3])


def run_loads(cfg, types, insns, *, seed=0, stall=0.3, latency=(0, 6), reorder=True,
              scramble=False, overlap=False, cycles=None):
    """Run ``insns`` on a TensorLoad; return its scratchpads and fsim's after the same LOADs.
    ``scramble``: after each start, the instruction port carries another instruction's fields
    (the unit must have latched what it needs). ``overlap``: the unit releases LOADs and the
    bench starts the next one as the load stage's control would (:func:`_overlapped`);
    ``cycles``: a list that receives the cycles the LOADs took (each LOAD's, or with
    ``overlap`` all of them together)."""
    unit = TensorLoad(cfg=cfg, types=types, overlap=overlap)
    pads = sorted({memory(cfg, t).scratchpad.name for t in types})
    harness = ScratchpadHarness(cfg, unit, {f"{p}_wr": (p, "w") for p in pads})
    rng = np.random.default_rng(seed)
    dram = bytearray(rng.integers(0, 256, DRAM_BYTES, dtype=np.uint8).tobytes())
    model = DramModel(dram, data_bits=cfg.axi_data_bits,
                      knobs=MemoryKnobs(seed=seed, latency=latency, backpressure=stall,
                                        reorder=reorder))
    model.add_read_client(unit.mem, "load")
    got = {}

    async def bench(ctx):
        if overlap:
            elapsed = await _overlapped(ctx, unit, insns)
            if cycles is not None:
                cycles.append(elapsed)
            for p in pads:
                got[p] = harness.get_rows(ctx, p)
            return
        for insn in insns:
            await start_insn(ctx, unit, insn)
            if scramble:
                for name, value in insn.field_values().items():
                    field = getattr(unit.insn, name, None)
                    if field is not None and name != "opcode":
                        ctx.set(field, (value * 7 + 5) & ((1 << len(field)) - 1))
            taken = await wait_until(ctx, unit.done, timeout=2000, what="LOAD done")
            if cycles is not None:
                cycles.append(taken)
        for p in pads:
            got[p] = harness.get_rows(ctx, p)

    ref = Scratchpads(cfg)
    ref_dram = Dram(np.frombuffer(bytes(dram), dtype=np.uint8).copy())
    for insn in insns:
        if insn.x_size:
            execute_load(cfg, insn, ref, ref_dram, strict=False)
    run_sim(harness, bench, background=[model.run], name=f"load-{cfg.name}")
    return got, ref


async def _overlapped(ctx, unit, insns, *, errs=None):
    """Run ``insns`` as the load stage's control does with read-ahead (hw/core/stage_control.py,
    ``detach_late``): the next LOAD starts once the head is released (and ``joins``) or done;
    check that LOADs complete in program order, a released one before the next one's
    ``done``. Return the cycles taken; ``errs`` receives each LOAD's error bit in order."""
    state = {"detached": None, "head": None, "completed": [], "cycles": 0}

    async def tick():
        _, _, done, err, release, ddone, derr = await ctx.tick().sample(
            unit.done, unit.err, unit.release, unit.detached_done, unit.detached_err)
        state["cycles"] += 1
        assert not (done and ddone), "a LOAD completes alone"
        if ddone:
            assert state["detached"] is not None
            state["completed"].append((state["detached"], derr))
            state["detached"] = None
        if done:
            assert state["detached"] is None, "the released LOAD completes first"
            state["completed"].append((state["head"], err))
            state["head"] = None
        if release:
            assert state["detached"] is None, "one LOAD released at a time"
            state["detached"], state["head"] = state["head"], None

    for n, insn in enumerate(insns):
        for name, value in insn.field_values().items():
            field = getattr(unit.insn, name, None)
            if field is not None:
                ctx.set(field, value & ((1 << len(field)) - 1))
        for _ in range(2000):
            if state["detached"] is None or ctx.get(unit.joins):
                break
            await tick()
        ctx.set(unit.start, 1)
        state["head"] = n
        await tick()
        ctx.set(unit.start, 0)
        for _ in range(2000):
            if state["head"] is None:
                break
            await tick()
        assert state["head"] is None, f"LOAD {n} neither done nor released"
    for _ in range(2000):
        if state["detached"] is None:
            break
        await tick()
    assert [i for i, _ in state["completed"]] == list(range(len(insns)))
    if errs is not None:
        errs.extend(e for _, e in state["completed"])
    return state["cycles"]


def check_same(cfg, got, ref, insns):
    for pad, rows in got.items():
        row_bytes = getattr(cfg, pad).row_bytes
        want = ref.raw(pad)
        for i, value in enumerate(rows):
            assert value.to_bytes(row_bytes, "little") == want[i].tobytes(), \
                f"{pad} row {i} differs after {insns}"


@pytest.mark.parametrize("config", ["tiny", "batch2"])
@pytest.mark.parametrize("stage", ["load", "compute"])
def test_random_loads(config, stage):
    cfg = load_config(config)
    types = LOAD_STAGE_TYPES if stage == "load" else COMPUTE_STAGE_TYPES
    rng = random.Random(f"{config}-{stage}")
    insns = [random_load(cfg, rng, types[i % len(types)]) for i in range(8)]
    rng.shuffle(insns)
    got, ref = run_loads(cfg, types, insns, seed=len(config))
    check_same(cfg, got, ref, insns)


@pytest.mark.parametrize("stage", ["load", "compute"])
def test_fields_are_latched_at_start(stage):
    """The instruction is read in the start cycle only: the queue's block RAM is too slow to
    feed the command path (docs/architecture.md, timing on an FPGA)."""
    cfg = load_config("tiny")
    types = LOAD_STAGE_TYPES if stage == "load" else COMPUTE_STAGE_TYPES
    rng = random.Random(f"latched-{stage}")
    insns = [random_load(cfg, rng, types[i % len(types)]) for i in range(8)]
    got, ref = run_loads(cfg, types, insns, scramble=True)
    check_same(cfg, got, ref, insns)


@pytest.mark.parametrize("stage", ["load", "compute"])
def test_no_multiplier(stage):
    """LOAD address arithmetic is adders only: a multiplier becomes a DSP block whose routing
    was the critical path on an ECP5 (docs/architecture.md, timing on an FPGA)."""
    cfg = load_config("tiny")
    types = LOAD_STAGE_TYPES if stage == "load" else COMPUTE_STAGE_TYPES
    assert variable_products(rtlil.convert(TensorLoad(cfg=cfg, types=types))) == []


def variable_products(text):
    """The ``$mul`` cells of RTLIL ``text`` whose operands are both signals (a product by a
    constant, such as ``word_select``'s, is a shift)."""
    cells = re.findall(r"cell \$mul (\S+)\n(.*?)\n\s*end\n", text, re.S)
    constant = re.compile(r"connect \\[AB] \d+'[01]+$", re.M)
    return [name for name, body in cells if len(constant.findall(body)) == 0]


@pytest.mark.parametrize("mtype", [MemType.INP, MemType.WGT])
def test_every_pad_value_and_side(mtype):
    cfg = load_config("tiny")
    insns = [MemoryInsn(opcode=Opcode.LOAD, memory_type=mtype, sram_base=10 * pv + 3,
                        dram_base=pv + 1, pad_value=pv, y_size=2, x_size=2, x_stride=3,
                        y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=1) for pv in PadValue]
    got, ref = run_loads(cfg, LOAD_STAGE_TYPES, insns, stall=0.0, latency=(1, 1),
                         reorder=False)
    check_same(cfg, got, ref, insns)
    target = memory(cfg, mtype)
    pad_row = got[target.scratchpad.name][10 * PadValue.MIN + 3]
    assert pad_row.to_bytes(target.scratchpad.row_bytes, "little")[:target.elem_bytes] == \
        b"\x80" * target.elem_bytes


def test_acc_8bit_sign_extends_and_wraps_rows():
    cfg = load_config("tiny")
    depth = cfg.acc_depth
    insns = [
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC_8BIT, sram_base=depth - 2,
                   dram_base=7, pad_value=PadValue.MAX, y_size=1, x_size=3, x_stride=3,
                   x_pad_1=1),
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC, sram_base=4, dram_base=3,
                   y_size=2, x_size=2, x_stride=5, y_pad_0=1, pad_value=PadValue.MIN),
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=0, dram_base=1,
                   pad_value=PadValue.MAX, y_size=1, x_size=3, x_stride=3, x_pad_0=2),
    ]
    got, ref = run_loads(cfg, COMPUTE_STAGE_TYPES, insns)
    check_same(cfg, got, ref, insns)


def test_x_size_zero_moves_nothing():
    cfg = load_config("tiny")
    insns = [MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, sram_base=0, y_size=3,
                        x_size=0, y_pad_0=2, pad_value=PadValue.MAX)]
    got, ref = run_loads(cfg, LOAD_STAGE_TYPES, insns)
    assert all(v == 0 for v in got["inp"]) and all(v == 0 for v in got["wgt"])


def _load_stage_unit(*, dram_bytes):
    """The load stage's unit of ``tiny`` writing INP and WGT, and a DRAM of ``dram_bytes``
    zeros serving its reads: ``(unit, harness, model)``."""
    cfg = load_config("tiny")
    unit = TensorLoad(cfg=cfg, types=LOAD_STAGE_TYPES)
    harness = ScratchpadHarness(cfg, unit, {"inp_wr": ("inp", "w"), "wgt_wr": ("wgt", "w")})
    model = DramModel(bytearray(dram_bytes), data_bits=cfg.axi_data_bits)
    model.add_read_client(unit.mem)
    return unit, harness, model


def test_padding_uses_free_cycles_only():
    """A long all-padding LOAD takes one cycle per pad row (docs/isa.md §3.1 via PadWalker)."""
    unit, harness, model = _load_stage_unit(dram_bytes=256)
    insn = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=1, y_size=0,
                      y_pad_0=15, x_pad_0=3, x_pad_1=4, pad_value=PadValue.MIN)
    cycles = []

    async def bench(ctx):
        await start_insn(ctx, unit, insn)
        cycles.append(await wait_until(ctx, unit.done, timeout=1000))

    run_sim(harness, bench, background=[model.run])
    rows = 15 * 8
    assert rows <= cycles[0] <= rows + 4


def test_dram_error_is_reported_with_done():
    """A beat answered with an error (outside DRAM) ends the LOAD with ``err`` (error 9)."""
    unit, harness, model = _load_stage_unit(dram_bytes=64)
    inside = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.WGT, x_size=2, y_size=1,
                        x_stride=2)
    outside = inside.replace(dram_base=3)
    errs = []

    async def bench(ctx):
        for insn in (inside, outside, inside):
            await start_insn(ctx, unit, insn)
            for _ in range(200):
                _, _, done, err = await ctx.tick().sample(unit.done, unit.err)
                if done:
                    errs.append(err)
                    break

    run_sim(harness, bench, background=[model.run])
    assert errs == [0, 1, 0]


@pytest.mark.parametrize("bus", [128, 512])
@pytest.mark.parametrize("stage", ["load", "compute"])
def test_random_loads_on_wide_buses(bus, stage):
    """Many elements to a beat (up to 16 on ``tiny`` with a 512-bit bus): the row writer finds
    a beat's lanes by comparing the beat index with the row's last beat (hw/core/row_writer.py)."""
    cfg = load_config("tiny").replace(axi_data_bits=bus)
    types = LOAD_STAGE_TYPES if stage == "load" else COMPUTE_STAGE_TYPES
    rng = random.Random(f"wide{bus}{stage}")
    insns = [random_load(cfg, rng, types[i % len(types)]) for i in range(8)]
    got, ref = run_loads(cfg, types, insns, seed=bus)
    check_same(cfg, got, ref, insns)


@pytest.mark.parametrize("ways", [1, 2, 4, 8, 16])
def test_micro_ops_are_written_ways_a_cycle(ways):
    """An interleaved micro-op scratchpad (hw/core/banks.py) takes ``UOP_WAYS`` consecutive
    micro-ops of a beat a cycle, whatever lane a row starts at and wherever it lands: rows
    of up to three beats at random DRAM and SRAM offsets, padded, equal fsim's; and a row of
    64 micro-ops, from a beat's start, is written in 64 / ways cycles (measured against a LOAD
    of one micro-op)."""
    cfg = load_config("tiny").replace(axi_data_bits=512, uop_ways=ways)
    rng = random.Random(f"ways{ways}")
    insns = []
    for _ in range(10):
        x_size = rng.randint(1, 40)
        y_size = rng.randint(1, 2)
        p = [rng.choice([0, 0, 1]) for _ in range(4)]
        x_stride = x_size + rng.randint(0, 20)
        insns.append(MemoryInsn(
            opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=rng.randrange(cfg.uop_depth),
            dram_base=rng.randrange(DRAM_BYTES // 4 - 2 * x_stride - x_size),
            pad_value=PadValue.ZERO, y_size=y_size, x_size=x_size, x_stride=x_stride,
            y_pad_0=p[0], y_pad_1=p[1], x_pad_0=p[2], x_pad_1=p[3]))
    got, ref = run_loads(cfg, COMPUTE_STAGE_TYPES, insns, seed=ways)
    check_same(cfg, got, ref, insns)

    def cycles(x_size):
        insn = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=3,
                          dram_base=0, y_size=1, x_size=x_size, x_stride=x_size)
        taken = []
        run_loads(cfg, COMPUTE_STAGE_TYPES, [insn], stall=0, latency=(0, 0), reorder=False,
                  cycles=taken)
        return sum(taken)
    assert cycles(64) - cycles(1) == 64 // ways - 1


@pytest.mark.parametrize("types", [LOAD_STAGE_TYPES, COMPUTE_STAGE_TYPES])
def test_a_taken_beat_reaches_no_adder(logic_cone, types):
    """The count of beats outstanding forms its sums (less the beat taken, plus a command's
    beats) before the handshakes pick one: a beat's ``ready``, which the row writer forms
    from the beat, reaches only multiplexers before the registers (it went through a 46-bit
    subtraction and a 47-bit addition, the binding path of `tiny` once the memory engine's
    RREADY was registered: docs/architecture.md, timing on an FPGA)."""
    cone = logic_cone(TensorLoad(cfg=load_config("tiny"), types=types), "w:mem__data__ready %co*")
    assert "cell $mux" in cone, "the cone holds the choice of the count's next value"
    assert re.findall(r"cell \$(add|sub)\b", cone) == []


@pytest.mark.parametrize("config", ["tiny", "wide"])
@pytest.mark.parametrize("seed", [1, 2])
def test_overlapped_loads(config, seed):
    """Read-ahead (hw/core/tensor_load.py, ``overlap``): a LOAD whose rows are all requested is
    released and the next one issues while its beats and pad rows are still coming; the rows
    are fsim's (also where two LOADs write the same rows), and LOADs complete in program order.
    (The head's fields stay on ``insn`` until it is released: its pad walk may start late.)"""
    cfg = load_config(config)
    rng = random.Random(f"overlap-{config}-{seed}")
    types = LOAD_STAGE_TYPES
    insns = [random_load(cfg, rng, rng.choice(types)) for _ in range(16)]
    got, ref = run_loads(cfg, types, insns, overlap=True, seed=seed)
    check_same(cfg, got, ref, insns)


def test_overlap_saves_the_latency():
    """Back-to-back weight LOADs with read-ahead take fewer cycles than one at a time."""
    cfg = load_config("wide")
    rng = random.Random("overlap-gain")
    insns = [random_load(cfg, rng, MemType.WGT, pads=False) for _ in range(8)]
    took = {}
    for overlap in (False, True):
        cycles = []
        if overlap:
            run_loads(cfg, LOAD_STAGE_TYPES, insns, overlap=True, cycles=cycles, stall=0,
                      latency=(4, 4), reorder=False)
            took[overlap] = cycles[0]
        else:
            took[overlap] = _serial_cycles(cfg, insns)
    assert took[True] < took[False], took


def _serial_cycles(cfg, insns):
    unit = TensorLoad(cfg=cfg, types=LOAD_STAGE_TYPES)
    harness = ScratchpadHarness(cfg, unit, {"inp_wr": ("inp", "w"), "wgt_wr": ("wgt", "w")})
    model = DramModel(bytearray(DRAM_BYTES), data_bits=cfg.axi_data_bits,
                      knobs=MemoryKnobs(seed=0, latency=(4, 4), backpressure=0, reorder=False))
    model.add_read_client(unit.mem, "load")
    took = []

    async def bench(ctx):
        total = 0
        for insn in insns:
            await start_insn(ctx, unit, insn)
            total += 1 + await wait_until(ctx, unit.done, timeout=2000)
        took.append(total)

    run_sim(harness, bench, background=[model.run])
    return took[0]


def test_overlapped_dram_error_in_order():
    """An error beat of either LOAD in flight is its own: the released one reports it with
    ``detached_done``, the head with ``done`` (docs/isa.md §3.5 error 9)."""
    cfg = load_config("tiny")
    inside = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.WGT, x_size=2, y_size=2,
                        x_stride=2)
    outside = inside.replace(dram_base=3)
    unit = TensorLoad(cfg=cfg, types=LOAD_STAGE_TYPES, overlap=True)
    harness = ScratchpadHarness(cfg, unit, {"inp_wr": ("inp", "w"), "wgt_wr": ("wgt", "w")})
    model = DramModel(bytearray(64), data_bits=cfg.axi_data_bits)
    model.add_read_client(unit.mem)
    errs = []

    async def bench(ctx):
        await _overlapped(ctx, unit, [inside, outside, inside], errs=errs)

    run_sim(harness, bench, background=[model.run])
    assert errs[:2] == [0, 1]
