"""avta.runtime.build_cache: a conv2d's program built once, read back in another process (here:
after the memory is emptied) and placed at other DRAM addresses, the same program bit for bit;
a damaged or foreign entry is built again; the key holds what changes the program."""

import json

import pytest

from avta.isa.config import load_config
from avta.runtime import build_cache
from avta.runtime.stream import StreamError
from avta.runtime.ops.conv2d import Conv2dBuffers, _build_conv2d, build_conv2d
from avta.runtime.ops.conv_plan import Conv2dShape
from avta.runtime.ops.requant import Requant

SHAPE = Conv2dShape(1, 32, 14, 14, 32, 3, 3, 1, 1)
REQUANT = Requant(8, (0, 127))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder, and nothing remembered in memory before or after."""
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    monkeypatch.delenv(build_cache.SWITCH, raising=False)
    build_cache.clear_memory()
    yield tmp_path / "programs"
    build_cache.clear_memory()


def _fresh(cfg, bufs, **options):
    return _build_conv2d(cfg, SHAPE, bufs, requant=options.get("requant", REQUANT), threads=2,
                         tiling=None, bias_bound=options.get("bias_bound", 5), fused=None)


def _same(a, b, uop_elem=4096):
    assert len(a) == len(b)
    assert a.encode(uop_elem) == b.encode(uop_elem)
    assert a.uop_bytes() == b.uop_bytes()
    assert a.step_mix() == b.step_mix()
    assert a.expected_counters() == b.expected_counters()
    assert tuple(a.insns) == tuple(b.insns) and tuple(a.uops) == tuple(b.uops)


@pytest.mark.parametrize("name", ["default", "tiny"])
def test_a_program_read_back_is_the_one_built_at_the_new_addresses(cache, name):
    cfg = load_config(name)
    first = Conv2dBuffers(inp=100, wgt=7, out=3000, bias=50)
    built = build_conv2d(cfg, SHAPE, first, requant=REQUANT, bias_bound=5)
    assert not built.read_back
    _same(built, _fresh(cfg, first))
    assert built.ledger is not None
    assert len(list(cache.glob("*.json"))) == 1
    build_cache.clear_memory()                     # as a new process finds it
    elsewhere = Conv2dBuffers(inp=90_000, wgt=12_345, out=777, bias=4_000)
    read = build_conv2d(cfg, SHAPE, elsewhere, requant=REQUANT, bias_bound=5)
    assert read.read_back
    _same(read, _fresh(cfg, elsewhere))


def test_what_changes_the_program_changes_the_key(cache):
    cfg = load_config("default")
    bufs = Conv2dBuffers(inp=0, wgt=0, out=0, bias=0)
    build_conv2d(cfg, SHAPE, bufs, requant=REQUANT, bias_bound=5)
    build_conv2d(cfg, SHAPE, bufs, requant=Requant(0, (0, 127)), bias_bound=5)    # no SHR
    build_conv2d(cfg, SHAPE, Conv2dBuffers(inp=0, wgt=0, out=0), requant=REQUANT)
    wide = load_config("wide")
    build_conv2d(wide, SHAPE, bufs, requant=REQUANT, bias_bound=5)
    assert len(list(cache.glob("*.json"))) == 4
    build_cache.clear_memory()
    read = build_conv2d(cfg, SHAPE, bufs, requant=Requant(0, (0, 127)), bias_bound=5)
    _same(read, _fresh(cfg, bufs, requant=Requant(0, (0, 127))))


def test_the_key_follows_the_runtime_sources(cache, monkeypatch):
    cfg = load_config("default")
    args = {"shape": SHAPE}
    before = build_cache.program_key("conv2d", cfg, args)
    monkeypatch.setattr(build_cache, "runtime_digest", lambda: "an edited runtime")
    assert build_cache.program_key("conv2d", cfg, args) != before


@pytest.mark.parametrize("config", ["default", "tiny"])
def test_the_key_is_the_hash_of_its_fields(config):
    """The key of a builder, configuration, arguments and sources is the SHA-256 of their JSON
    (sorted keys) however it is assembled, so entries written before stay readable."""
    import hashlib
    cfg = load_config(config)
    args = {"shape": SHAPE, "requant": REQUANT, "bias_bound": 5, "operands": ["inp", "wgt"]}
    fields = {"builder": "avta.runtime.ops.conv2d._build_conv2d", "config": cfg.to_dict(),
              "args": {k: repr(v) for k, v in args.items()},
              "sources": build_cache.runtime_digest()}
    assert build_cache.program_key(fields["builder"], cfg, args) == hashlib.sha256(
        json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


@pytest.mark.parametrize("damage", ["truncated", "foreign key", "bad base64", "index past end",
                                    "extra field"])
def test_a_damaged_entry_is_built_again_and_rewritten(cache, damage):
    cfg = load_config("default")
    bufs = Conv2dBuffers(inp=10, wgt=20, out=30, bias=40)
    build_conv2d(cfg, SHAPE, bufs, requant=REQUANT, bias_bound=5)
    (path,) = cache.glob("*.json")
    record = json.loads(path.read_text())
    if damage == "truncated":
        path.write_text(path.read_text()[:100])
    else:
        if damage == "foreign key":
            record["key"] = "0" * 32
        elif damage == "bad base64":
            record["insns"] = "not base64!"
        elif damage == "index past end":
            record["uop_loads"] = [10 ** 6]
        else:
            record["planted"] = 1
        path.write_text(json.dumps(record))
    build_cache.clear_memory()
    again = build_conv2d(cfg, SHAPE, bufs, requant=REQUANT, bias_bound=5)
    assert not again.read_back
    _same(again, _fresh(cfg, bufs))
    assert json.loads(path.read_text())["key"] == path.stem


def test_the_switch_keeps_the_disk_out(cache, monkeypatch):
    monkeypatch.setenv(build_cache.SWITCH, "0")
    cfg = load_config("default")
    build_conv2d(cfg, SHAPE, Conv2dBuffers(inp=0, wgt=0, out=0, bias=0), requant=REQUANT)
    assert not cache.exists()


def test_an_address_past_the_dram_base_field_is_the_builders_error_not_a_wrapped_entry(cache):
    cfg = load_config("default")
    build_conv2d(cfg, SHAPE, Conv2dBuffers(inp=0, wgt=0, out=0, bias=0), requant=REQUANT,
                 bias_bound=5)
    build_cache.clear_memory()
    far = Conv2dBuffers(inp=(1 << 32) - 10, wgt=0, out=0, bias=0)
    with pytest.raises(StreamError):
        build_conv2d(cfg, SHAPE, far, requant=REQUANT, bias_bound=5)


def test_an_adds_two_inputs_are_told_apart_by_their_addresses(cache):
    from avta.runtime.ops.residual import AddBuffers, _build_add_gemm, build_add_gemm, plan_add
    cfg = load_config("default")
    shape = (1, 64, 28, 28)
    requant = Requant(1, (0, 127))
    tiling = plan_add(cfg, shape, requant=requant, path="gemm").tiling
    first = AddBuffers(a=1000, b=60_000, wgt=5, out=90_000)
    build_add_gemm(cfg, shape, first, requant=requant, tiling=tiling)
    build_cache.clear_memory()
    swapped = AddBuffers(a=200_000, b=300, wgt=9, out=77)       # b now below a
    read = build_add_gemm(cfg, shape, swapped, requant=requant, tiling=tiling)
    assert read.read_back
    _same(read, _build_add_gemm(cfg, shape, swapped, requant=requant, shift_a=0, threads=2,
                                tiling=tiling))
    same = AddBuffers(a=500, b=500, wgt=9, out=77)              # x + x: another key
    assert not build_add_gemm(cfg, shape, same, requant=requant, tiling=tiling).read_back


def test_a_plan_read_back_is_the_plan(cache):
    from avta.runtime.ops import residual
    cfg = load_config("default")
    want = residual._plan_add(cfg, (1, 64, 28, 28), 0, Requant(1, (0, 127)), 2, None)
    assert residual.plan_add(cfg, (1, 64, 28, 28), requant=Requant(1, (0, 127))) == want
    build_cache.clear_memory()
    assert residual.plan_add(cfg, (1, 64, 28, 28), requant=Requant(1, (0, 127))) == want


def test_a_fused_add_plan_read_back_is_the_plan(cache, monkeypatch):
    """The executor asks whether each residual add fuses before it builds anything: planned
    once, then read back from the disk without planning either layer; a damaged record is
    planned again."""
    from avta.runtime.ops import conv_add
    cfg, shape = load_config("default"), Conv2dShape(1, 64, 56, 56, 64, 3, 3, 1, 1)
    args = {"requant": Requant(10, (-128, 127)), "add_requant": Requant(1, (0, 127)),
            "has_bias": True, "bias_bound": 8}
    want = conv_add.plan_fused_add(cfg, shape, **args)
    assert want.fused and want.fused_cycles < want.apart_cycles
    build_cache.clear_memory()
    with monkeypatch.context() as m:
        m.setattr(conv_add, "_plan_fused_add", lambda *a: pytest.fail("planned again"))
        assert conv_add.plan_fused_add(cfg, shape, **args) == want
    (entry,) = [p for p in cache.iterdir()
                if "apart_cycles" in json.loads(p.read_text())["plan"]]   # not the add's plan
    record = json.loads(entry.read_text())
    entry.write_text(json.dumps(record | {"plan": record["plan"] | {"fused": "yes"}}))
    build_cache.clear_memory()
    assert conv_add.plan_fused_add(cfg, shape, **args) == want
    assert json.loads(entry.read_text()) == record


@pytest.mark.parametrize("path", [None, "gemm", "alu"])
def test_a_max_pool_plan_read_back_is_the_plan(cache, monkeypatch, path):
    """ResNet's stem pool: planned once, then read back from the disk without planning."""
    from avta.runtime.ops import pool_gemm
    from avta.runtime.ops.window import WindowShape
    cfg, shape = load_config("default"), WindowShape(1, 64, 112, 112, 3, 1, 2)
    want = pool_gemm._plan_max_pool(cfg, shape, path)
    assert pool_gemm.plan_max_pool(cfg, shape, path=path) == want
    build_cache.clear_memory()
    monkeypatch.setattr(pool_gemm, "_plan_max_pool", lambda *a: pytest.fail("planned again"))
    assert pool_gemm.plan_max_pool(cfg, shape, path=path) == want
    assert len(list(cache.iterdir())) == 1


@pytest.mark.parametrize("name", ["default", "huge"])
def test_a_max_pool_program_read_back_is_the_one_built_at_the_new_addresses(cache, name):
    """The max pool's GEMM path is built once too (ResNet's pool: most of a warm run's
    program time), and placed at other addresses bit for bit."""
    from avta.runtime.ops.pool_gemm import (MaxPoolBuffers, _build_max_pool_gemm,
                                            build_max_pool_gemm, plan_max_pool_gemm)
    from avta.runtime.ops.window import WindowShape
    cfg = load_config(name)
    shape = WindowShape(cfg.batch, 2 * cfg.block_out, 15, 13, 3, 1, 2)
    tiling = plan_max_pool_gemm(cfg, shape)
    first = MaxPoolBuffers(inp=100, wgt=7, out=3000)
    built = build_max_pool_gemm(cfg, shape, first, tiling=tiling)
    assert not built.read_back
    _same(built, _build_max_pool_gemm(cfg, shape, first, tiling))
    assert len(list(cache.glob("*.json"))) == 1
    build_cache.clear_memory()                     # as a new process finds it
    elsewhere = MaxPoolBuffers(inp=50_000, wgt=3, out=777)
    read = build_max_pool_gemm(cfg, shape, elsewhere, tiling=tiling)
    assert read.read_back
    _same(read, _build_max_pool_gemm(cfg, shape, elsewhere, tiling))
    assert build_max_pool_gemm(cfg, shape, elsewhere).read_back       # the planner's tiling
