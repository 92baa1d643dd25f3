"""Energy tables: the shipped one reads, a bad one is refused with every problem named."""

import pytest
import yaml

from avta.errors import UserError
from avta.sim.energy import DEFAULT_TABLE, load_table
from avta.sim.energy.table import KEYS


def _write(tmp_path, **changes):
    data = yaml.safe_load(DEFAULT_TABLE.read_text()) | changes
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_shipped_table_has_every_key_with_a_source():
    table = load_table()
    assert table.name == "horowitz45" and table.mac_int8 == 0.3 and table.dram_per_byte == 162.5
    text = DEFAULT_TABLE.read_text()
    for key in KEYS:
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{key}:"))
        assert "[H14]" in line or "[N45]" in line or "[ASSUMED]" in line, key


def test_sram_energy_follows_horowitz():
    """8 KB: 10 pJ, 32 KB: 20 pJ, 1 MB: about 100 pJ per 64 bits (113 by the square root)."""
    table = load_table()
    assert table.sram_access(64, 8192) == pytest.approx(10)
    assert table.sram_access(64, 32768) == pytest.approx(20)
    assert table.sram_access(64, 1 << 20) == pytest.approx(113.1, rel=1e-3)
    assert table.sram_access(128, 8192) == pytest.approx(20)


@pytest.mark.parametrize("changes, message", [
    ({"mac_int8": None}, "mac_int8: missing"),
    ({"mac_int8": -0.3}, "mac_int8: -0.3 is out of range"),
    ({"dram_per_byte": 0}, "dram_per_byte: 0 is out of range"),
    ({"sram_size_exponent": 1.5}, "sram_size_exponent: 1.5 is out of range"),
    ({"alu_op_int32": float("nan")}, "alu_op_int32: nan is not finite"),
    ({"leak_logic_per_ge": float("inf")}, "leak_logic_per_ge: inf is not finite"),
    ({"insn_decode": "two"}, "insn_decode: 'two' is not a number"),
    ({"mac_int8": True}, "mac_int8: True is not a number"),
    ({"sram_read_64b": 1e9}, "sram_read_64b: 1000000000.0 is out of range"),
    ({"dram_pj": 5}, "dram_pj: not a key of an energy table"),
    ({"name": None}, "name: missing"),
])
def test_a_bad_table_is_refused(tmp_path, changes, message):
    with pytest.raises(UserError, match="energy table .*" + message.replace("(", r"\(")):
        load_table(_write(tmp_path, **changes))


def test_not_a_table(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_table(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(UserError, match="mapping of keys to numbers"):
        load_table(tmp_path / "list.yaml")
    (tmp_path / "bad.yaml").write_text("a: [\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_table(tmp_path / "bad.yaml")
