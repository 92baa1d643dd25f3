"""The random program generator of ``avta fuzz``: every program is well-formed (docs/isa.md §3), runs
to ``ok`` (or to the end its planted error must have) on fsim from its raw image, is a function of
its seed, and many seeds together cover the whole ISA and every corner."""

from collections import Counter

import numpy as np
import pytest

from avta.isa.config import load_config, shipped_configs
from avta.isa.encoding import INSN_BYTES
from avta.runtime.wellformed import check_wellformed
from avta.sim.fsim import Fsim
from avta.sim.fuzz.corners import CORNERS
from avta.sim.fuzz.coverage import CORNER_FEATURES, ISA_FEATURES, coverage, isa_features
from avta.sim.fuzz.errors import ERROR_KINDS
from avta.sim.fuzz.program import RandomProgram, random_program


def _run(rp, **options):
    """Run a program from its image as ``avta exec`` would; the result and the final DRAM."""
    dram = rp.dram()
    result = Fsim(rp.cfg, strict=rp.strict, **options).run(dram, rp.insn_addr, rp.insn_count,
                                                           bases=rp.bases)
    return result, dram


def _end(result):
    return result.status, result.error_code, result.error_insn


def _clean(cfg, seed, **options):
    """A random program without a planted error."""
    return random_program(cfg, seed, corners=CORNERS.keys() - {"error"}, **options)


@pytest.mark.parametrize("config", shipped_configs())
def test_programs_are_wellformed_and_run_ok(config):
    cfg = load_config(config)
    for seed in range(12):
        rp = random_program(cfg, seed)
        assert check_wellformed(rp.program, wrap=not rp.strict) == [], (config, seed)
        result, _ = _run(rp)
        if rp.expect is not None:
            assert _end(result) == rp.expect, (config, seed, result)
            continue
        assert result.status == "ok", (config, seed, result)
        assert result.counters == {**result.counters, **rp.program.expected_counters()}


def test_every_error_kind_ends_as_planted():
    """Each kind of planted error ends fsim with its code at its instruction (or in deadlock),
    however busy the program around it."""
    cfg = load_config("tiny")
    kinds = set()
    for seed in range(80):
        rp = random_program(cfg, seed, corners={"error", "long kernels", "big tensors"})
        result, _ = _run(rp)
        assert _end(result) == rp.expect, (seed, rp.error, result)
        kinds.add(rp.error)
        status, code, index = rp.expect
        if rp.error == "dropped push":
            assert status == "deadlock"
        else:
            assert code == ERROR_KINDS[rp.error] and 0 <= index <= rp.insn_count
    assert kinds == set(ERROR_KINDS)


def test_image_layout():
    cfg = load_config("default")
    rp = random_program(cfg, 5, corners=())
    assert isinstance(rp, RandomProgram) and rp.strict and rp.expect is None
    assert rp.insn_addr % INSN_BYTES == 0 and rp.insn_count == len(rp.program)
    assert rp.insn_addr + rp.insn_count * INSN_BYTES == len(rp.image) <= 64 << 10
    assert rp.dram_size % 4096 == 0 and rp.dram_size - len(rp.image) < 4096
    stream = rp.image[rp.insn_addr:]
    assert stream == rp.program.encode(rp.uop_addr // cfg.uop_elem_bytes)
    assert not any(rp.image[rp.out_addr:rp.out_addr + rp.out_nbytes])
    assert not any(rp.bases.values())


def test_base_registers_and_high_addresses_move_the_data():
    """With base registers, every address in the instructions counts from its base: the
    instructions differ from the runtime's, the data lies elsewhere, and the run is the same."""
    cfg = load_config("default")
    plain = random_program(cfg, 9, corners=())
    moved = random_program(cfg, 9, corners={"base registers", "high addresses"})
    assert moved.program.insns == plain.program.insns      # the same program ...
    assert moved.insns != tuple(plain.insns)               # ... addressed differently
    assert moved.out_addr - plain.out_addr >= 24 << 10 and any(moved.bases.values())
    (a, dram_a), (b, dram_b) = _run(plain), _run(moved)
    assert a.ok and b.ok and a.counters == b.counters
    assert plain.output(dram_a) == moved.output(dram_b)


def test_one_shared_machine_runs_program_after_program():
    """The RTL keeps its scratchpads between programs, so no program may read rows that only an
    earlier one wrote: on a fresh and on a reused machine a program ends the same."""
    cfg = load_config("tiny")
    shared = Fsim(cfg, strict=False)
    for seed in range(8):
        rp = _clean(cfg, seed)
        _, alone = _run(rp)
        dram = rp.dram()
        assert shared.run(dram, rp.insn_addr, rp.insn_count, bases=rp.bases).status == "ok"
        assert dram == alone, seed


def test_stage_interleaving_does_not_matter():
    """Tokens order every hazard, so fsim's random schedule ends with the same DRAM."""
    cfg = load_config("tiny")
    for seed in range(10):
        rp = _clean(cfg, seed)
        _, inorder = _run(rp)
        result, shuffled = _run(rp, schedule="random", seed=seed)
        assert result.ok and shuffled == inorder, seed


@pytest.mark.parametrize("config", ["tiny", "default"])
def test_stores_change_the_output_region(config):
    cfg = load_config(config)
    changed = 0
    for seed in range(8):
        rp = _clean(cfg, seed)
        assert rp.out_nbytes > 0
        _, dram = _run(rp)
        before = rp.output(rp.image)
        assert bytes(dram[:rp.out_addr]) == rp.image[:rp.out_addr]   # inputs untouched
        changed += rp.output(dram) != before
    assert changed >= 7


def test_deterministic_per_seed_and_different_between_seeds():
    cfg = load_config("tiny")
    a, b, c = random_program(cfg, 7), random_program(cfg, 7), random_program(cfg, 8)
    assert a.image == b.image and a.insn_count == b.insn_count
    assert a.program.insns == b.program.insns
    assert a.image != c.image
    assert len({random_program(cfg, s).image for s in range(10)}) == 10


def test_max_insns():
    cfg = load_config("tiny")
    for seed in range(10):
        rp = _clean(cfg, seed, max_insns=25)
        assert rp.insn_count <= 25
        assert _run(rp)[0].ok
    with pytest.raises(ValueError, match="too small"):
        random_program(cfg, 0, max_insns=3)


def test_sizes_vary():
    cfg = load_config("tiny")
    sizes = [random_program(cfg, s, corners=()).insn_count for s in range(30)]
    assert min(sizes) < 40 and max(sizes) > 90 and max(sizes) < 250


def test_coverage_of_the_whole_isa():
    cfg = load_config("tiny")
    programs = [random_program(cfg, s) for s in range(50)]
    found = coverage(programs)
    missing = [name for name in ISA_FEATURES if not found[name]]
    assert not missing, missing
    assert set(found) <= set(ISA_FEATURES) | set(CORNER_FEATURES)
    # A runtime Program shows the same instruction features; the layout ones need the image.
    from_programs = coverage([rp.program for rp in programs[:3]])
    assert +coverage(programs[:3]) - from_programs and not from_programs - coverage(programs[:3])
    assert {rp.threads for rp in programs} == {1, 2}


def test_indices_reach_the_ends_of_every_scratchpad():
    """Rows near the end of each scratchpad are used, not only the first ones."""
    cfg = load_config("default")
    found = Counter()
    for seed in range(15):
        found += coverage(random_program(cfg, seed))
    for name in ("INP last row", "WGT last row", "ACC last row", "STORE last row"):
        assert found[name], name


def test_immediates_cover_the_signed_field():
    cfg = load_config("tiny")
    imms = [insn.imm for s in range(40) for insn in random_program(cfg, s).program.insns
            if getattr(insn, "use_imm", 0)]
    assert min(imms) <= -1 << 14 and max(imms) >= 1 << 14
    assert np.mean([i < 0 for i in imms]) > 0.2


@pytest.mark.parametrize("config, count", [("tight", 1000), ("tiny", 300)])
def test_every_corner_appears_in_a_campaign(config, count):
    """With their weights, the corners all show up in a 1,000-program campaign (on
    ``tight``, whose 2-bit counters can be filled), and in 300 programs on ``tiny`` all but the
    full counter (its counters are 8 bits wide)."""
    cfg = load_config(config)
    found = coverage([random_program(cfg, s) for s in range(count)])
    expected = set(CORNER_FEATURES) - ({"token counter full"} if cfg.token_bits > 3 else set())
    missing = sorted(name for name in expected if not found[name])
    assert not missing, missing


@pytest.mark.parametrize("scale", [1, 2])
def test_coverage_with_alu_scale_includes_scl(scale):
    cfg = load_config("tiny").replace(alu_scale=scale)
    features = isa_features(cfg)
    assert {"ALU SCL imm", "ALU SCL two-operand"} <= set(features)
    assert not {"ALU SCL imm", "ALU SCL two-operand"} & set(isa_features(load_config("tiny")))
    found = coverage([random_program(cfg, s) for s in range(50)])
    missing = [name for name in features if not found[name]]
    assert not missing, missing


def test_no_illegal_alu_opcode_is_planted_where_every_opcode_is_legal():
    import random as _random
    from avta.isa.insn import AluInsn
    from avta.isa.encoding import finish
    from avta.sim.fuzz.errors import plant_error
    insns = [AluInsn(), AluInsn(), finish()]
    for cfg, code in ((load_config("tiny"), 2), (load_config("tiny").replace(alu_scale=1), 1)):
        _, _, expect = plant_error("illegal ALU opcode", _random.Random(1), cfg, insns,
                                   dram_size=1 << 16, address=lambda insn: 0)
        assert expect[:2] == ("error", code)
