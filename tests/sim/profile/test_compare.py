"""avta.sim.profile.compare and avta profile-diff: per-layer distances between two profiles."""

import json

import pytest

from avta.cli import main
from avta.sim.activity import LANES
from avta.sim.profile.compare import compare_profiles


def _row(name, cycles, busy):
    """A profile.json layer row: ``busy`` {lane: cycles}; a tenth of each lane waits."""
    row = {"name": name, "cycles": cycles}
    for lane in LANES:
        row[f"{lane}_busy"] = busy[lane]
        row[f"{lane}_wait"] = cycles // 10
        row[f"{lane}_idle"] = cycles - busy[lane] - cycles // 10
    return row


def _record(target, layers, network="net"):
    return {"network": network, "target": target, "total": {"cycles": sum(r["cycles"]
                                                                          for r in layers)},
            "layers": layers}


A = _record("fsim", [_row("conv", 1000, {"load": 300, "compute": 800, "store": 50}),
                     _row("host", 0, {lane: 0 for lane in LANES}),
                     _row("pool", 200, {"load": 0, "compute": 150, "store": 20})])
B = _record("tsim", [_row("conv", 1010, {"load": 250, "compute": 808, "store": 50}),
                     _row("host", 0, {lane: 0 for lane in LANES}),
                     _row("pool", 250, {"load": 0, "compute": 150, "store": 20})])


def test_cycle_errors_and_share_differences():
    c = compare_profiles(A, B)
    assert [d.name for d in c.layers] == ["conv", "pool"]       # host layers are not compared
    conv, pool = c.layers
    assert conv.cycle_error == pytest.approx(-10 / 1010)
    assert conv.share_diff["load"]["busy"] == pytest.approx(30.0 - 100 * 250 / 1010)
    assert conv.share_diff["load"]["wait"] == pytest.approx(10.0 - 100 * 101 / 1010)
    assert pool.cycle_error == pytest.approx(-0.2)
    assert pool.worst_share == pytest.approx(100 * (150 / 200 - 150 / 250))
    assert c.total_error == pytest.approx((1200 - 1260) / 1260)
    assert c.targets == ("fsim", "tsim")
    assert [d.name for d in c.outside(0.03, 3.0)] == ["conv", "pool"]
    assert [d.name for d in c.outside(0.03, 20.0)] == ["pool"]
    assert c.outside(0.25, 20.0) == []


def test_different_networks_or_layers_are_refused():
    with pytest.raises(ValueError, match="different networks"):
        compare_profiles(A, _record("tsim", B["layers"], network="other"))
    with pytest.raises(ValueError, match="pool in one only"):
        compare_profiles(A, _record("tsim", B["layers"][:2]))


def test_different_configurations_or_layer_shapes_are_refused(tmp_path, capsys):
    """Profiles of other configurations, or of the same layers at another input size, are not
    estimate against exact: refused (exit 2), not compared."""
    keys = {"LOG_BLOCK_IN": 4, "ACC_BUFF_SIZE": 131072}
    a = A | {"config": {"name": "default", "keys": keys}}
    bigger = B | {"config": {"name": "default", "keys": keys | {"ACC_BUFF_SIZE": 262144}}}
    with pytest.raises(ValueError, match="different configurations: ACC_BUFF_SIZE"):
        compare_profiles(a, bigger)
    compare_profiles(a, B | {"config": {"name": "renamed", "keys": keys}})
    shaped = [r | {"shape": "1x16x8x8"} for r in A["layers"]]
    other = [r | {"shape": "1x16x16x16"} for r in B["layers"]]
    with pytest.raises(ValueError, match="layer 'conv' has shape 1x16x8x8 in one"):
        compare_profiles(_record("fsim", shaped), _record("tsim", other))
    for name, record in (("a", a), ("b", bigger)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile.json").write_text(json.dumps(record))
    assert main(["profile-diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "different configurations" in capsys.readouterr().err


def test_cli(tmp_path, capsys):
    for name, record in (("a", A), ("b", B)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile.json").write_text(json.dumps(record))
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert main(["profile-diff", a, b, "--cycle-tolerance", "0.03",
                 "--share-tolerance", "3"]) == 1
    out = capsys.readouterr().out
    assert "OUTSIDE" in out and "2 of 2 layers outside" in out and "-20.00%" in out
    assert main(["profile-diff", a, b, "--cycle-tolerance", "0.25",
                 "--share-tolerance", "20"]) == 0
    assert main(["profile-diff", a, str(tmp_path / "missing")]) == 2
    assert "not a profile" in capsys.readouterr().err
