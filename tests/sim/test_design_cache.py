"""The Verilog cache (:mod:`avta.sim.design_cache`): a warm start elaborates nothing, the text
read back is the generator's, a corrupt entry is generated again, and the key follows the
configuration, the options and every RTL source."""

import pytest

from avta.hw import top
from avta.hw.core.faults import FAULTS
from avta.isa.config import load_config
from avta.sim import design_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    return tmp_path / "verilog"


def _forbid_generation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the design was generated although the cache holds it")
    monkeypatch.setattr(top, "_top_verilog", refuse)


def test_a_warm_cache_returns_the_generators_text_without_elaborating(cache, monkeypatch):
    cfg = load_config("tiny")
    text = design_cache.cached_top_verilog(cfg)
    assert text == top.top_verilog(cfg)
    assert len(list(cache.glob("*.v"))) == 1
    _forbid_generation(monkeypatch)
    assert design_cache.cached_top_verilog(cfg) == text


def test_a_corrupt_entry_is_generated_again(cache, monkeypatch):
    cfg = load_config("tiny")
    text = design_cache.cached_top_verilog(cfg)
    (entry,) = cache.glob("*.v")
    entry.write_text(text[:1000])                   # a writer that died half way
    assert design_cache.cached_top_verilog(cfg) == text
    assert entry.read_text() == text
    _forbid_generation(monkeypatch)
    assert design_cache.cached_top_verilog(cfg) == text


def test_the_key_follows_the_configuration_and_the_options():
    tiny, tight = load_config("tiny"), load_config("tight")
    keys = {design_cache.design_key(tiny), design_cache.design_key(tight),
            design_cache.design_key(tiny, trace=True), design_cache.design_key(tiny, activity=True),
            design_cache.design_key(tiny, faults={next(iter(FAULTS))})}
    assert len(keys) == 5
    # The name is a label the RTL never reads: a renamed configuration shares the entry.
    assert design_cache.design_key(tiny.replace(name="renamed")) == design_cache.design_key(tiny)


def test_the_key_follows_every_rtl_source(tmp_path):
    files = design_cache.rtl_source_files()
    names = [name for name, _ in files]
    assert "avta.hw/top.py" in names and "avta.isa/config.py" in names and "avta.version" in names
    assert any(name.startswith("avta.hw/core/") for name in names)
    copies = []
    for index, (name, path) in enumerate(files):
        copy = tmp_path / f"{index}.py"
        copy.write_bytes(path.read_bytes())
        copies.append((name, copy))
    before = design_cache.sources_digest(copies)
    assert before == design_cache.sources_digest(files)
    copies[len(copies) // 2][1].write_text(copies[len(copies) // 2][1].read_text() + "\n# edit\n")
    assert design_cache.sources_digest(copies) != before
    cfg = load_config("tiny")
    assert design_cache.design_key(cfg, sources=before) != \
        design_cache.design_key(cfg, sources=design_cache.sources_digest(copies))
