"""The generated C header compiles with gcc and every macro equals the configuration's value."""

import shutil
import subprocess

import pytest

from avta.isa.config import load_config, shipped_configs
from avta.isa.header import c_header, header_macros
from avta.isa.registers import Ctrl

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


@pytest.mark.parametrize("config", shipped_configs())
def test_header_compiles_and_values_match(config, tmp_path):
    cfg = load_config(config)
    macros = header_macros(cfg)
    (tmp_path / "vta_hw_spec.h").write_text(c_header(cfg))
    body = "\n".join(f'  printf("{name} %llu\\n", (unsigned long long)({name}));'
                     for name, _, _ in macros)
    (tmp_path / "main.c").write_text(
        f'#include <stdio.h>\n#include "vta_hw_spec.h"\n#include "vta_hw_spec.h"\n'
        f"int main(void) {{\n{body}\n  return 0;\n}}\n")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "main"),
                    str(tmp_path / "main.c")], check=True, cwd=tmp_path)
    out = subprocess.run([str(tmp_path / "main")], check=True, capture_output=True, text=True)
    printed = dict(line.split() for line in out.stdout.splitlines())
    assert {k: int(v) for k, v in printed.items()} == {n: v for n, v, _ in macros}
    # spot checks against the configuration object itself, not the generator's own table
    got = {k: int(v) for k, v in printed.items()}
    spot = {"VTA_INP_BUFF_DEPTH": "inp_depth", "VTA_WGT_BUFF_DEPTH": "wgt_depth",
            "VTA_ACC_BUFF_DEPTH": "acc_depth", "VTA_UOP_BUFF_DEPTH": "uop_depth",
            "VTA_LOG_ACC_BUFF_DEPTH": "log_acc_depth", "VTA_ACC_ELEM_BYTES": "acc_elem_bytes",
            "VTA_WGT_MATRIX_WIDTH": "wgt_tensor_bits", "VTA_UOP_WIDTH": "uop_bits",
            "VTA_BUS_WIDTH": "axi_data_bits", "VTA_GEMM_PIPE_STAGES": "gemm_stages",
            "VTA_ACC_FACTOR_WIDTH": "acc_factor_bits", "VTA_CONFIG_ID": "config_id"}
    assert {k: got[k] for k in spot} == {k: getattr(cfg, a) for k, a in spot.items()}
    assert got["VTA_ALU_OPCODE_MOV"] == 6 and got["VTA_MEM_ID_ACC_8BIT"] == 5


def test_default_field_positions_match_upstream(default_cfg):
    got = {n: v for n, v, _ in header_macros(default_cfg)}
    # docs/isa.md §2, as upstream VTA: dram_base [57:26], GEMM uop_bgn [20:8], ALU imm [127:112]
    assert (got["AVTA_MEM_DRAM_BASE_SHIFT"], got["AVTA_MEM_DRAM_BASE_BITS"]) == (26, 32)
    assert (got["AVTA_GEM_UOP_BGN_SHIFT"], got["AVTA_GEM_UOP_BGN_BITS"]) == (8, 13)
    assert (got["AVTA_GEM_WGT_FACTOR_IN_SHIFT"], got["AVTA_GEM_WGT_FACTOR_IN_BITS"]) == (118, 10)
    assert (got["AVTA_ALU_IMM_SHIFT"], got["AVTA_ALU_ALU_OPCODE_SHIFT"]) == (112, 108)
    assert got["AVTA_REG_ERR_CODE"] == 0x60 and got["AVTA_REG_STALL_CP"] == 0x24 + 4 * 13
    # the register map: write bit 0 to launch; bit 1 finish, bit 2 error
    assert (got["AVTA_CTRL_LAUNCH"], got["AVTA_CTRL_FINISH"], got["AVTA_CTRL_ERROR"]) == (1, 2, 4)
    assert got["AVTA_CTRL_BUSY"] == Ctrl.BUSY == Ctrl.LAUNCH


def test_header_names_scl_only_with_alu_scale(default_cfg):
    off = {name: value for name, value, _ in header_macros(default_cfg)}
    on = {name: value for name, value, _ in header_macros(default_cfg.replace(alu_scale=1))}
    assert "VTA_ALU_OPCODE_SCL" not in off and off["VTA_ALU_SCALE"] == 0
    assert on["VTA_ALU_OPCODE_SCL"] == 7 and on["VTA_ALU_SCALE"] == 1
    assert "VTA_ALU_SCALE_BITS" not in off and on["VTA_ALU_SCALE_BITS"] == 16
    wide = {name: value for name, value, _ in header_macros(default_cfg.replace(alu_scale=2))}
    assert wide["VTA_ALU_SCALE"] == 2 and wide["VTA_ALU_SCALE_BITS"] == 24
