"""The macros upstream's simulator is compiled with, derived from avta's configuration, and the
header that cross-checks upstream's derived quantities. Needs no upstream checkout."""

import shutil
import subprocess

import pytest

from avta.errors import UserError
from avta.isa.config import load_config
from avta.isa.header import header_macros
from avta.sim.upstream.macros import check_comparable, expect_header, upstream_macros

#: Upstream-like sources: a header deriving a quantity from a macro it does not define.
SOURCES = ["#define VTA_BATCH (1 << VTA_LOG_BATCH)\n#define VTA_OPCODE_LOAD 0\n",
           "int lanes = VTA_BATCH * (1 << VTA_LOG_BLOCK_OUT); // VTA_TARGET_PYNQ\n"]


def test_macros_are_what_the_sources_use_and_do_not_define(default_cfg, tiny_cfg):
    for cfg in (default_cfg, tiny_cfg):
        values = {name: value for name, value, _ in header_macros(cfg)}
        assert upstream_macros(cfg, SOURCES) == {
            "VTA_LOG_BATCH": values["VTA_LOG_BATCH"],
            "VTA_LOG_BLOCK_OUT": values["VTA_LOG_BLOCK_OUT"]}
    assert upstream_macros(tiny_cfg, SOURCES)["VTA_LOG_BLOCK_OUT"] == tiny_cfg.log_block_out


def test_a_size_avta_does_not_define_is_an_error(default_cfg):
    with pytest.raises(UserError, match="VTA_LOG_SOMETHING_NEW"):
        upstream_macros(default_cfg, ["x = VTA_LOG_SOMETHING_NEW;"])


def test_restricted_and_scaled_configurations_are_refused(default_cfg):
    check_comparable(default_cfg)
    for change in ({"log_acc_factor_restrict": 1}, {"alu_scale": 1}):
        with pytest.raises(UserError, match="upstream VTA does not have"):
            check_comparable(default_cfg.replace(**change))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.parametrize("batch, compiles", [("(1 << 0)", True), ("2", False)])
def test_expect_header_asserts_upstream_quantities(tmp_path, batch, compiles):
    """The header compiles after upstream-like definitions that agree with avta's, and stops the
    build, naming the macro, after one that does not."""
    cfg = load_config("default")
    (tmp_path / "avta_expect.h").write_text(expect_header(cfg))
    (tmp_path / "t.cpp").write_text(f"#define VTA_BATCH {batch}\n#include \"avta_expect.h\"\n"
                                    f"int shift = AVTA_MEM_DRAM_BASE_SHIFT;\n")
    proc = subprocess.run(["g++", "-std=c++11", "-fsyntax-only", "t.cpp"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert (proc.returncode == 0) == compiles, proc.stderr
    if not compiles:
        assert "VTA_BATCH: upstream's headers give another value" in proc.stderr
