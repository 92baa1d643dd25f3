"""avta profile: the command writes the report, and bad input exits 2."""

import json

from avta.cli import main


def test_profile_writes_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["profile", "resnet18", "--config", "default", "--input-size", "32",
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fsim estimates" in printed and "report.html" in printed
    for name in ("report.html", "layers.csv", "profile.json", "timeline.png", "timeline.svg",
                 "roofline.png", "roofline.svg"):
        assert (out / name).is_file(), name
    record = json.loads((out / "profile.json").read_text())
    assert record["estimated"] and record["target"] == "fsim"
    assert record["total"]["cycles"] == sum(layer["cycles"] for layer in record["layers"])


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["profile", "nonet", "--config", "default", "-o", str(tmp_path / "o")]) == 2
    file = tmp_path / "file"
    file.write_text("")
    assert main(["profile", "resnet18", "--config", "default", "--input-size", "32",
                 "-o", str(file)]) == 2
    assert main(["profile", "resnet18", "--config", "default", "--input-size", "31",
                 "-o", str(tmp_path / "o")]) == 2
    assert "avta profile:" in capsys.readouterr().err
