"""``avta bench upstream-fsim``: its options and their errors (one line, exit 2). Running it
needs a checkout of apache/tvm-vta (tests/sim/upstream/test_against_upstream.py)."""

import pytest

from avta.cli import main


@pytest.mark.parametrize("args, message", [
    (["bench", "upstream-fsim"], "give --vta-src DIR or set AVTA_VTA_SRC"),
    (["bench", "upstream-fsim", "--vta-src", "/no/such/folder"], "no such folder"),
    (["bench", "upstream-fsim", "--vta-src", ".", "--repeats", "0"], "must be at least 1"),
    (["bench", "upstream-fsim", "--vta-src", ".", "--repeats", "100000000"], "at most 100 "),
    (["bench", "upstream-fsim", "--vta-src", ".", "--layers", "C2,"], "empty layer name"),
    (["bench", "tps", "--layers", "C2"], "--layers is for benchmark 'upstream-fsim'"),
    (["bench", "upstream-fsim", "--vta-src", ".", "--config", "tiny", "--layers", "C2"],
     "is not a checkout of apache/tvm-vta"),
])
def test_bad_options_are_one_line_errors(capsys, monkeypatch, tmp_path, args, message):
    monkeypatch.delenv("AVTA_VTA_SRC", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_an_unknown_layer_is_refused_before_building(capsys, tmp_path):
    assert main(["bench", "upstream-fsim", "--vta-src", str(tmp_path), "--layers", "C99"]) == 2
    assert "unknown ResNet-18 layer C99" in capsys.readouterr().err
