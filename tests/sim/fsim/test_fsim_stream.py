"""fsim's stream decoded at once (sim/fsim/stream.py) against decoding one instruction at a time:
every field of every format, each instruction's legality and Static, on random words (illegal
opcodes and fields among them) and the fuzzer's programs; and the rule its cache key rests on:
a LOAD's or STORE's addresses change neither its legality nor its Static."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.encoding import codec
from avta.isa.formats import IMM_BITS
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.isa.legality import check
from avta.sim.fsim import Fsim
from avta.sim.fsim.statics import static_of
from avta.sim.fsim.stream import ADDRESS_FIELDS, Stream
from avta.sim.fuzz.program import random_program

CONFIGS = ["tiny", "default", "big_acc"]
_FORMATS = {MemoryInsn: "memory", GemmInsn: "gemm", AluInsn: "alu"}


def _random_words(seed, n=400):
    """``n`` random instruction words, a third of them with a legal-looking head (opcode 0..4,
    no flags) so that every format and many legal instructions come up."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 1 << 63, size=(n, 2), dtype=np.uint64) * np.uint64(2) \
        + rng.integers(0, 2, size=(n, 2), dtype=np.uint64)
    tame = rng.random(n) < 0.35
    words[tame, 0] = (words[tame, 0] & ~np.uint64(0x7F)) | rng.integers(0, 5, tame.sum()
                                                                        ).astype(np.uint64)
    return words.astype("<u8").tobytes()


def _programs(cfg):
    for seed in range(6):
        prog = random_program(cfg, seed)
        dram = prog.dram()
        yield dram[prog.insn_addr:prog.insn_addr + 16 * len(prog.insns)]


def _expected(cfg, blob):
    insns = codec(cfg).decode_program(blob)
    facts = []
    for insn in insns:
        violation = check(insn, cfg)
        facts.append((violation, None if violation is not None else static_of(cfg, insn)))
    return insns, facts


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("source", ["random", "fuzz"])
def test_a_stream_decodes_as_its_instructions_one_by_one(config, source):
    cfg = load_config(config)
    blobs = [_random_words(s) for s in range(3)] if source == "random" else list(_programs(cfg))
    sim = Fsim(cfg, timing_only=True)
    for blob in blobs:
        stream = Stream(sim, blob)
        insns, facts = _expected(cfg, blob)
        assert len(stream) == len(insns)
        assert stream.insns == insns
        assert [stream.insn(i) for i in range(len(insns))] == insns
        assert stream.statics == [static for _, static in facts]
        assert [stream.violations[k] for k in stream.inverse] == [v for v, _ in facts]
        first = next(((i, v) for i, (v, _) in enumerate(facts) if v is not None), None)
        assert stream.first_violation() == first
        for cls, fmt in _FORMATS.items():
            mine = np.array([type(insn) is cls for insn in insns])
            for name in cls.field_names():
                want = [getattr(insn, name) for insn in insns if type(insn) is cls]
                got = stream.column(fmt, name, np.flatnonzero(mine)).tolist()
                if name == "imm":       # signed: the column holds the field's bits
                    got = [v - (1 << IMM_BITS) if v >> (IMM_BITS - 1) else v for v in got]
                assert got == want, (fmt, name)


@pytest.mark.parametrize("config", CONFIGS)
def test_addresses_change_neither_legality_nor_statics(config):
    """The rule the stream's cache key rests on (:data:`ADDRESS_FIELDS`): if a rule of decode
    or a figure of the cycle model ever reads where a LOAD's or STORE's data lies, this fails,
    and the key must keep the addresses."""
    cfg = load_config(config)
    rng = np.random.default_rng(1)
    widths = codec(cfg).field_widths(MemoryInsn)
    seen = 0
    for insn in codec(cfg).decode_program(_random_words(7, 3000)):
        if type(insn) is not MemoryInsn:
            continue
        seen += 1
        moved = insn.replace(**{name: int(rng.integers(0, 1 << widths[name]))
                                for name in ADDRESS_FIELDS})
        assert check(moved, cfg) == check(insn, cfg)
        if check(insn, cfg) is None:
            assert static_of(cfg, moved) == static_of(cfg, insn)
    assert seen > 500


def test_an_empty_stream():
    stream = Stream(Fsim(load_config("tiny")), b"")
    assert len(stream) == 0 and stream.statics == [] and stream.first_violation() is None
