"""Configuration loading, derived quantities and error messages (docs/isa.md §1)."""

import json

import pytest

from avta.isa.config import (CONFIG_DIR, Config, ConfigError, fit_formats, load_config,
                             shipped_configs)


def test_the_shipped_configs():
    # ... "tight" (2-bit tokens, two ACC read ports) for the fuzzer, and "fpga" (1x8x8) for an
    # ECP5-85k (docs/cli.md, avta fpga).
    assert set(shipped_configs()) == {"default", "tiny", "batch2", "rect", "wide", "huge",
                                      "big_acc", "tight", "fpga"}


@pytest.mark.parametrize("name, shape, axi", [
    ("default", "1x16x16 15/15/18/17", 64),
    ("tiny", "1x4x4 10/10/12/12", 64),
    ("batch2", "2x16x16 15/15/18/17", 64),
    ("rect", "1x8x32 15/15/18/17", 64),
    ("wide", "1x32x32 15/15/18/17", 256),
    ("huge", "1x64x64 12/17/17/17", 512),
    ("big_acc", "1x16x16 15/15/18/19", 64),
])
def test_shipped_shapes(name, shape, axi):
    cfg = load_config(name)
    assert cfg.name == name
    assert cfg.shape_name == shape
    assert cfg.axi_data_bits == axi


def test_default_derived_quantities_match_upstream():
    # upstream VTA's hw_spec_const.h at the default configuration
    cfg = load_config("default")
    assert (cfg.inp_tensor_bits, cfg.wgt_tensor_bits, cfg.acc_tensor_bits,
            cfg.out_tensor_bits) == (128, 2048, 512, 128)
    assert (cfg.uop_depth, cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth,
            cfg.out_depth) == (8192, 2048, 1024, 2048, 2048)
    assert (cfg.log_uop_depth, cfg.log_inp_depth, cfg.log_wgt_depth,
            cfg.log_acc_depth) == (13, 11, 10, 11)
    assert (cfg.uop_elem_bytes, cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes,
            cfg.out_elem_bytes, cfg.acc8_elem_bytes) == (4, 16, 256, 64, 16, 16)
    assert (cfg.acc_factor_bits, cfg.inp_factor_bits, cfg.wgt_factor_bits) == (11, 11, 10)


def test_big_acc_needs_wide_uops_and_restriction():
    cfg = load_config("big_acc")
    assert cfg.acc_depth == 8192 and cfg.uop_bits == 64 and cfg.acc_factor_bits == 11
    assert cfg.acc.size_bytes == 512 * 1024


def test_tiny_is_small():
    cfg = load_config("tiny")
    assert all(pad.depth == 256 for pad in cfg.scratchpads)


def test_config_id_is_stable_and_ignores_name():
    cfg = load_config("default")
    # Pinned: CONFIG_ID is compared by the runtime against hardware built earlier.
    assert cfg.config_id == 0x80070462
    assert Config(name="other").config_id == cfg.config_id
    assert load_config("tiny").config_id != cfg.config_id


def test_replace_checks_again():
    cfg = load_config("default")
    assert cfg.replace(acc_read_ports=2).acc_read_ports == 2
    with pytest.raises(ConfigError, match="ACC_READ_PORTS = 3"):
        cfg.replace(acc_read_ports=3)


def test_upstream_json_with_log_block(tmp_path):
    path = tmp_path / "vta_config.json"
    path.write_text(json.dumps({
        "TARGET": "sim", "HW_VER": "0.0.2", "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3,
        "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15,
        "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17}))
    cfg = load_config(str(path))
    assert cfg.config_id == load_config("default").config_id
    assert cfg.name == "vta_config"


def test_log_block_conflict_is_reported():
    with pytest.raises(ConfigError, match="LOG_BLOCK = 4 conflicts with LOG_BLOCK_IN = 3"):
        Config.from_dict({"LOG_BLOCK": 4, "LOG_BLOCK_IN": 3})


def test_every_violation_is_listed_at_once():
    with pytest.raises(ConfigError) as info:
        Config.from_dict({"LOG_BATCH": 9, "FOO": 1, "AXI_DATA_BITS": "x", "TOKEN_BITS": 1,
                          "LOG_UOP_WIDTH": 7})
    text = str(info.value)
    assert len(info.value.violations) == 5
    for piece in ("LOG_BATCH = 9: must be 0..3", "FOO: unknown key",
                  "AXI_DATA_BITS = 'x': must be an integer", "TOKEN_BITS = 1: must be 2..16",
                  "LOG_UOP_WIDTH = 7: must be 5 or 6"):
        assert piece in text


def test_violations_of_every_kind_are_listed_together():
    """A bad key no longer hides the depth and restriction problems of the keys it does not
    touch."""
    with pytest.raises(ConfigError) as info:
        Config.from_dict({"TOKEN_BITS": 99, "AXI_DATA_BITS": 96, "LOG_ACC_BUFF_SIZE": 3,
                          "LOG_UOP_BUFF_SIZE": 1, "LOG_WGT_FACTOR_RESTRICT": 12})
    text = str(info.value)
    assert len(info.value.violations) == 5, text
    for piece in ("TOKEN_BITS = 99", "AXI_DATA_BITS = 96", "LOG_ACC_BUFF_SIZE = 3: the ACC",
                  "LOG_UOP_BUFF_SIZE = 1: the UOP", "LOG_WGT_FACTOR_RESTRICT = 12: must be <"):
        assert piece in text


def test_a_broken_row_width_skips_the_depth_rules():
    with pytest.raises(ConfigError) as info:
        Config.from_dict({"LOG_BLOCK_IN": 0, "LOG_ACC_BUFF_SIZE": 3})
    assert len(info.value.violations) == 1 and "LOG_BLOCK_IN = 0" in str(info.value)


def test_depth_out_of_range_names_the_key_and_value():
    with pytest.raises(ConfigError) as info:
        Config(log_inp_buff_size=3, log_wgt_buff_size=30)
    text = str(info.value)
    assert "LOG_INP_BUFF_SIZE = 3: the INP scratchpad depth comes out as 0.5 rows" in text
    assert "LOG_WGT_BUFF_SIZE = 30: the WGT scratchpad depth comes out as 4194304" in text


def test_format_overflow_reports_excess_and_smallest_restrictions():
    with pytest.raises(ConfigError) as info:
        Config(log_acc_buff_size=19)
    v = info.value.violations
    assert "the GEMM/FINISH format needs 138 bits: word 1 overflows by 10 bits" in v
    assert "the ALU format needs 144 bits: word 1 overflows by 16 bits" in v
    assert ("the smallest restrictions that fit every format are LOG_INP_FACTOR_RESTRICT: 0, "
            "LOG_WGT_FACTOR_RESTRICT: 0, LOG_ACC_FACTOR_RESTRICT: 2") in v
    assert any("need 42 bits, 10 more than the 32-bit micro-op: use LOG_UOP_WIDTH: 6" in x
               for x in v)


def test_the_suggested_restriction_fixes_the_config():
    cfg = Config(log_acc_buff_size=19, log_uop_width=6, log_acc_factor_restrict=2)
    assert cfg.acc_depth == 8192


def test_the_error_carries_the_fix_and_fit_formats_applies_it():
    with pytest.raises(ConfigError) as info:
        Config(log_acc_buff_size=19)
    assert info.value.fix == {"LOG_INP_FACTOR_RESTRICT": 0, "LOG_WGT_FACTOR_RESTRICT": 0,
                              "LOG_ACC_FACTOR_RESTRICT": 2, "LOG_UOP_WIDTH": 6}
    values = Config().to_dict() | {"LOG_ACC_BUFF_SIZE": 19}
    cfg, changes = fit_formats(values, name="fitted")
    assert changes == {"LOG_ACC_FACTOR_RESTRICT": 2, "LOG_UOP_WIDTH": 6}   # not the zeros
    assert (cfg.name, cfg.log_acc_factor_restrict, cfg.log_uop_width) == ("fitted", 2, 6)
    assert fit_formats(Config().to_dict()) == (Config(), {})            # nothing to fit


def test_fit_formats_fixes_only_the_formats():
    # Another problem besides the formats: no fix is offered, and fit_formats raises.
    with pytest.raises(ConfigError) as info:
        Config.from_dict(Config().to_dict() | {"LOG_ACC_BUFF_SIZE": 19, "NOT_A_KEY": 1})
    assert info.value.fix == {}
    with pytest.raises(ConfigError, match="NOT_A_KEY: unknown key"):
        fit_formats(Config().to_dict() | {"LOG_ACC_BUFF_SIZE": 19, "NOT_A_KEY": 1})
    with pytest.raises(ConfigError, match="LOG_INP_BUFF_SIZE = 3"):
        fit_formats(Config().to_dict() | {"LOG_INP_BUFF_SIZE": 3})


def test_restriction_must_leave_a_bit():
    with pytest.raises(ConfigError, match="LOG_WGT_FACTOR_RESTRICT = 10: must be < the index "
                                          "width 10"):
        Config(log_wgt_factor_restrict=10)


def test_unknown_shipped_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match="no shipped configuration named 'nope'.*tiny"):
        load_config("nope")


def test_yaml_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("LOG_BATCH: 5\nLOG_BLOCK_IN: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(path) in str(info.value)
    assert "LOG_BATCH = 5" in str(info.value) and "LOG_BLOCK_IN = 0" in str(info.value)
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(str(path))


def test_resolved_json_round_trips(shipped_cfg):
    data = json.loads(shipped_cfg.to_json())
    assert Config.from_dict(data["config"], name=shipped_cfg.name) == shipped_cfg
    assert data["derived"]["acc"]["depth"] == shipped_cfg.acc_depth


def test_alu_scale_key_defaults_off_and_keeps_older_identities():
    cfg = load_config("default")
    assert cfg.alu_scale == 0 and "ALU_SCALE" not in cfg.to_dict()
    assert cfg.config_id == 0x80070462           # unchanged by the key's arrival
    on = cfg.replace(alu_scale=1)
    assert on.to_dict()["ALU_SCALE"] == 1 and on.config_id != cfg.config_id
    assert Config.from_dict(on.to_dict()) == on.replace(name="custom")


def test_alu_scale_value_chooses_the_multiplier_width():
    cfg = load_config("tiny")
    assert (cfg.scale_bits, cfg.scale_fraction) == (0, 0)
    assert (cfg.replace(alu_scale=1).scale_bits, cfg.replace(alu_scale=1).scale_fraction) == (16, 15)
    wide = cfg.replace(alu_scale=2)
    assert (wide.scale_bits, wide.scale_fraction) == (24, 23)
    assert wide.config_id not in (cfg.config_id, cfg.replace(alu_scale=1).config_id)


@pytest.mark.parametrize("value", [3, -1])
def test_alu_scale_key_is_checked(value):
    with pytest.raises(ConfigError, match=f"ALU_SCALE = {value}: must be 0, 1 or 2"):
        load_config("tiny").replace(alu_scale=value)


def test_a_folder_named_like_a_shipped_configuration_does_not_hide_it(tmp_path, monkeypatch):
    """``avta fpga --config fpga -o fpga`` leaves a folder ``fpga`` behind; the name still
    means the shipped configuration, not the folder."""
    (tmp_path / "fpga").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_config("fpga") == load_config(CONFIG_DIR / "fpga.yaml")


def test_uop_ways_is_derived_from_the_bus_and_keeps_identities():
    """``UOP_WAYS`` absent: the micro-ops a beat holds, at most four, and out of CONFIG_ID."""
    assert [load_config(n).uop_write_ways for n in ("tiny", "default", "huge")] == [2, 2, 4]
    cfg = load_config("default")
    assert "UOP_WAYS" not in cfg.to_dict() and cfg.config_id == 0x80070462
    one = cfg.replace(uop_ways=1)
    assert one.uop_write_ways == 1 and one.to_dict()["UOP_WAYS"] == 1
    assert one.config_id != cfg.config_id
    # Half the depth at most: a two-row micro-op scratchpad has one way.
    assert cfg.replace(log_uop_buff_size=3).uop_write_ways == 1


@pytest.mark.parametrize("value, message", [
    (3, "UOP_WAYS = 3: must be 1, 2, 4, 8 or 16"),
    (4, "UOP_WAYS = 4: must be at most 2, the 32-bit micro-ops a 64-bit beat holds"),
])
def test_uop_ways_is_checked(value, message):
    with pytest.raises(ConfigError, match=message):
        load_config("tiny").replace(uop_ways=value)


def test_uop_ways_leaves_each_memory_two_rows_or_more():
    with pytest.raises(ConfigError, match="must be at most half the micro-op depth"):
        load_config("tiny").replace(axi_data_bits=512, log_uop_buff_size=4, uop_ways=4)
