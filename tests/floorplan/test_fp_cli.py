"""``avta floorplan``: files named <config>-<style>.<suffix> in DIR, and --check's exit status."""

import pytest

from avta import cli
from avta.floorplan import cli as fp_cli
from avta.floorplan.layout import Macro
from avta.floorplan.writers import SUFFIXES


def test_all_styles_are_written_and_checked(tmp_path, capsys):
    assert cli.main(["floorplan", "--config", "tiny", "-o", str(tmp_path), "--check"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"tiny-{style}.{suffix}" for style in ("functional", "tiled")
                           for suffix in SUFFIXES)
    out = capsys.readouterr().out
    assert "tiny-functional (1x4x4" in out and "tiny-tiled (1x4x4" in out


def test_one_style(tmp_path):
    assert cli.main(["floorplan", "--config", "default", "--style", "functional",
                     "-o", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(f"default-functional.{suffix}" for suffix in SUFFIXES)


@pytest.mark.parametrize("check,status", [(True, 1), (False, 0)])
def test_violations_fail_only_with_check(tmp_path, monkeypatch, capsys, check, status):
    real = fp_cli.build_floorplan

    def with_an_intruder(cfg, style):
        plan = real(cfg, style)
        fp = plan.floorplan
        first = fp.macros()[0]
        fp.die.add("intruder", Macro("blob", width=3800, height=2800),
                   x=first.rect.x0, y=first.rect.y0)
        return plan

    monkeypatch.setattr(fp_cli, "build_floorplan", with_an_intruder)
    args = ["floorplan", "--config", "tiny", "--style", "tiled", "-o", str(tmp_path)]
    assert cli.main(args + (["--check"] if check else [])) == status
    captured = capsys.readouterr()
    assert "overlap: " in captured.out and "intruder" in captured.out
    if check:
        assert "violations found" in captured.err


def test_unknown_configuration_is_an_error_for_a_person(tmp_path, capsys):
    assert cli.main(["floorplan", "--config", "nosuch", "-o", str(tmp_path)]) == 2
    assert "nosuch" in capsys.readouterr().err
