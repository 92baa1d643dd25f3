"""avta profile on a full disk, avta profile-diff on records that are not profiles and on
tolerances that are not tolerances: one line, exit 2, the old profile left whole."""

import json

import numpy as np
import pytest

from avta.cli import main

_FILES = ("layers.csv", "profile.json", "timeline.svg", "timeline.png", "roofline.svg",
          "roofline.png", "report.html")


@pytest.fixture(scope="module")
def profile_dir(tmp_path_factory):
    """A profile of a one-convolution network on tiny (fsim)."""
    from avta.runtime.net import Graph, Node, save
    from avta.runtime.ops.requant import Requant
    folder = tmp_path_factory.mktemp("profile")
    weights = np.random.default_rng(1).integers(-20, 20, (16, 16, 3, 3), dtype=np.int8)
    save(Graph("one", {"x": (1, 16, 8, 8)},
               [Node("c", "conv2d", ["x"], attrs=dict(pad=1), weights=weights,
                     requant=Requant(6, (0, 127)))], ["c"]), folder / "one.yaml")
    assert main(["profile", str(folder / "one.yaml"), "--config", "tiny",
                 "-o", str(folder / "p")]) == 0
    return folder


def test_a_full_disk_leaves_the_old_profile_whole(profile_dir, tmp_path, avta_on_a_full_disk):
    out = tmp_path / "p"
    out.mkdir()
    for name in _FILES:
        (out / name).write_text(f"old {name}")
    # The small files fit, the timeline's SVG does not.
    done = avta_on_a_full_disk(["profile", profile_dir / "one.yaml", "--config", "tiny",
                                "-o", out], limit=20_000, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "File too large" in done.stderr and "Traceback" not in done.stderr
    assert {p.name: p.read_text() for p in out.iterdir()} == {n: f"old {n}" for n in _FILES}


def test_a_record_that_is_a_list_is_not_a_profile(profile_dir, tmp_path, capsys):
    record = json.loads((profile_dir / "p" / "profile.json").read_text())
    (tmp_path / "list.json").write_text(json.dumps([record]))
    assert main(["profile-diff", str(tmp_path / "list.json"), str(profile_dir / "p")]) == 2
    assert "the file holds a JSON list, not a profile's mapping" in capsys.readouterr().err


def test_cycles_that_are_strings_are_not_a_profile(profile_dir, tmp_path, capsys):
    record = json.loads((profile_dir / "p" / "profile.json").read_text())
    for layer in record["layers"]:
        layer["cycles"] = str(layer["cycles"])
    (tmp_path / "strings.json").write_text(json.dumps(record))
    assert main(["profile-diff", str(tmp_path / "strings.json"), str(profile_dir / "p")]) == 2
    assert "layer 'c': cycles '" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--cycle-tolerance", "nan"),
                                           ("--cycle-tolerance", "inf"),
                                           ("--share-tolerance", "-5")])
def test_a_tolerance_that_is_not_one_is_refused(profile_dir, option, value, capsys):
    p = str(profile_dir / "p")
    assert main(["profile-diff", p, p, option, value]) == 2
    assert f"{option} {value}: give a tolerance of 0 or more" in capsys.readouterr().err
