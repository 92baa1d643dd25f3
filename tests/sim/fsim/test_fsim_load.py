"""LOAD (docs/isa.md §3.1): every memory type × padding on each side × each pad value, against a
per-row Python reference; ACC_8BIT sign extension, UOP padding, base registers, x_size 0."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import MemType
from avta.isa.memories import elem_bytes, memory
from avta.sim.image import Image, load, run_alone

DATA = 0x1000          # byte address of the DRAM data in every test image

#: (y_pad_0, y_pad_1, x_pad_0, x_pad_1), one row per side and a mix.
PADS = [(0, 0, 0, 0), (2, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 2), (1, 2, 2, 1)]
MEMORY_TYPES = [MemType.UOP, MemType.INP, MemType.WGT, MemType.ACC, MemType.ACC_8BIT]


def pad_row(cfg, memory_type, pad_value):
    """Expected bytes of a padding row, written out from docs/isa.md §3.1 lane by lane."""
    row_bytes = memory(cfg, memory_type).scratchpad.row_bytes
    if memory_type == MemType.UOP or pad_value == 0:
        return bytes(row_bytes)
    if memory_type in (MemType.INP, MemType.WGT):
        lane = {1: -128, 2: 127}[pad_value]
        return lane.to_bytes(1, "little", signed=True) * row_bytes
    lane = {1: -2**31, 2: 2**31 - 1}[pad_value]
    return lane.to_bytes(4, "little", signed=True) * (row_bytes // 4)


def expected_row(cfg, memory_type, element_bytes):
    """What one DRAM element becomes in its scratchpad row."""
    if memory_type == MemType.ACC_8BIT:
        return b"".join(int.from_bytes(element_bytes[i:i + 1], "little", signed=True)
                        .to_bytes(4, "little", signed=True) for i in range(len(element_bytes)))
    return bytes(element_bytes)


def reference_load(cfg, image, insn, base=0):
    """{scratchpad row: bytes} written by ``insn``, cell by cell as docs/isa.md §3.1 says."""
    eb = elem_bytes(cfg, insn.memory_type)
    width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    height = insn.y_pad_0 + insn.y_size + insn.y_pad_1
    rows = {}
    for r in range(height):
        for c in range(width):
            inside = (insn.y_pad_0 <= r < insn.y_pad_0 + insn.y_size
                      and insn.x_pad_0 <= c < insn.x_pad_0 + insn.x_size)
            if inside:
                element = insn.dram_base + (r - insn.y_pad_0) * insn.x_stride + (c - insn.x_pad_0)
                addr = (base + element * eb) % 2**32
                rows[insn.sram_base + r * width + c] = expected_row(
                    cfg, insn.memory_type, image.data[addr:addr + eb])
            else:
                rows[insn.sram_base + r * width + c] = pad_row(cfg, insn.memory_type,
                                                               insn.pad_value)
    return rows


@pytest.fixture
def check_load(random_tensor, sram_rows):
    """``check_load(cfg, memory_type, pads, pad_value, ...)``: one LOAD run alone, every
    scratchpad row against :func:`reference_load`; returns the simulator."""
    def check(cfg, memory_type, pads, pad_value, *, sram=3, y=2, x=3, stride=5, base=None):
        rng = np.random.default_rng(hash((memory_type, pads, pad_value)) % 2**32)
        image = Image(cfg)
        image.put(DATA, random_tensor(rng, 4096, np.uint8))
        eb = elem_bytes(cfg, memory_type)
        offset = 0 if base is None else base[1]
        insn = load(memory_type, sram=sram, dram=((DATA - offset) % 2**32) // eb, y=y, x=x,
                    stride=stride, pads=pads, pad_value=pad_value)
        result, sim = run_alone(image, insn, bases=None if base is None else {base[0]: base[1]})
        assert result.status == "ok", result.detail

        name = memory(cfg, memory_type).scratchpad.name
        expected = np.zeros_like(sram_rows(sim, name))
        for row, data in reference_load(cfg, image, insn, offset).items():
            expected[row] = np.frombuffer(data, dtype=np.uint8)
        np.testing.assert_array_equal(sram_rows(sim, name), expected)
        if name == "acc":   # docs/isa.md §3: OUT mirrors every ACC row write
            np.testing.assert_array_equal(sim.sram("out"), sim.sram("acc").astype(np.int8))
        counter = {"uop": "UOP_LD", "inp": "INP_LD", "wgt": "WGT_LD", "acc": "ACC_LD"}[name]
        assert result.counters[counter] == x * y * eb
        return sim
    return check


@pytest.mark.parametrize("pad_value", [0, 1, 2])
@pytest.mark.parametrize("pads", PADS)
@pytest.mark.parametrize("memory_type", MEMORY_TYPES, ids=lambda m: MemType(m).name)
def test_load_padding_tiny(tiny_cfg, check_load, memory_type, pads, pad_value):
    check_load(tiny_cfg, memory_type, pads, pad_value)


@pytest.mark.parametrize("config", ["default", "batch2", "rect"])
@pytest.mark.parametrize("memory_type", MEMORY_TYPES, ids=lambda m: MemType(m).name)
def test_load_padding_other_configs(check_load, config, memory_type):
    check_load(load_config(config), memory_type, (1, 1, 2, 1), 1)


@pytest.mark.parametrize("config", ["tiny", "batch2"])
def test_acc8bit_sign_extends(config):
    """Every int8 from -128 to 127 lands in an int32 lane with its sign."""
    cfg = load_config(config)
    lanes = cfg.batch * cfg.block_out
    values = np.arange(-128, 128, dtype=np.int8)
    values = np.resize(values, (256 // lanes + 1) * lanes)
    count = values.size // lanes
    image = Image(cfg)
    image.put(DATA, values)
    result, sim = run_alone(image, load(MemType.ACC_8BIT, dram=DATA // cfg.acc8_elem_bytes,
                                        x=count))
    assert result.status == "ok", result.detail
    acc = sim.sram("acc")[:count].reshape(-1)
    np.testing.assert_array_equal(acc, values.astype(np.int32))
    assert result.counters["ACC_LD"] == values.size


def test_uop_padding_is_zero_whatever_pad_value(tiny_cfg, check_load):
    sim = check_load(tiny_cfg, MemType.UOP, (1, 1, 1, 1), 2, sram=0, y=1, x=2, stride=2)
    assert sim.sram("uop")[0] == 0


# (register, value): the base is added to the byte address, modulo 2^32 (docs/isa.md §3).
BASES = [("INP", 0x800), ("WGT", 0x40), ("ACC", 0x100), ("UOP", 0xFFFF_FF00)]


@pytest.mark.parametrize("register, value", BASES)
def test_base_registers(tiny_cfg, check_load, register, value):
    memory_type = MemType[register]
    check_load(tiny_cfg, memory_type, (0, 0, 1, 0), 0, base=(register, value))


def test_acc8bit_uses_acc_base(tiny_cfg, check_load):
    check_load(tiny_cfg, MemType.ACC_8BIT, (0, 0, 0, 0), 0, base=("ACC", 0x200))


@pytest.mark.parametrize("memory_type", MEMORY_TYPES, ids=lambda m: MemType(m).name)
def test_x_size_zero_moves_nothing(tiny_cfg, sram_rows, memory_type):
    """x_size 0: no rows written even with padding fields set, no bytes counted (§3.1)."""
    image = Image(tiny_cfg)
    image.put(DATA, np.full(4096, 0x55, dtype=np.uint8))
    result, sim = run_alone(image, load(memory_type, dram=DATA // elem_bytes(tiny_cfg,
                                                                              memory_type),
                                        x=0, y=3, pads=(1, 1, 1, 1), pad_value=2))
    assert result.status == "ok", result.detail
    assert not sram_rows(sim, memory(tiny_cfg, memory_type).scratchpad.name).any()
    assert not any(result.counters[c] for c in ("UOP_LD", "INP_LD", "WGT_LD", "ACC_LD"))


@pytest.mark.parametrize("seed", range(6))
def test_window_copy_equals_the_element_path(default_cfg, seed):
    """A LOAD runs as one strided copy of its DRAM window unless it wraps or is traced; the
    copy leaves every row as the element-by-element path does (random sizes, strides shorter
    than a row, pads, pad values, every memory type but ACC_8BIT)."""
    from avta.isa.insn import MemoryInsn
    from avta.sim.fsim.dram import Dram
    from avta.sim.fsim.memops import execute_load
    from avta.sim.fsim.state import Scratchpads
    cfg = default_cfg
    rng = np.random.default_rng(seed)
    dram = Dram(rng.integers(0, 256, 1 << 20, dtype=np.uint8))
    for memory_type in (MemType.INP, MemType.WGT, MemType.ACC, MemType.UOP):
        y, x = int(rng.integers(1, 6)), int(rng.integers(1, 9))
        pads = [int(v) for v in rng.integers(0, 3, 4)] if memory_type != MemType.UOP else [0] * 4
        insn = MemoryInsn(memory_type=memory_type, sram_base=int(rng.integers(0, 40)),
                          dram_base=int(rng.integers(0, 64)), y_size=y, x_size=x,
                          x_stride=int(rng.integers(0, 2 * x)), y_pad_0=pads[0],
                          y_pad_1=pads[1], x_pad_0=pads[2], x_pad_1=pads[3],
                          pad_value=int(rng.integers(0, 3)) if memory_type != MemType.UOP else 0)
        copied, traced = Scratchpads(cfg), Scratchpads(cfg)
        execute_load(cfg, insn, copied, dram, strict=True)
        execute_load(cfg, insn, traced, dram, strict=True, trace_rows=lambda *a: None)
        for name in ("uop", "inp", "wgt", "acc", "out"):
            np.testing.assert_array_equal(copied.raw(name), traced.raw(name), err_msg=name)
