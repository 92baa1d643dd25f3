"""avta profile: the command writes the report, and bad input exits 2."""

import json

import pytest

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


def test_the_energy_chart_and_figures(tmp_path, capsys, monkeypatch):
    """Each layer's latency, energy and EDP in the table, the energy chart, the totals in the
    JSON agreeing with the layers."""
    monkeypatch.setenv("AVTA_CACHE", str(tmp_path))
    out = tmp_path / "out"
    assert main(["profile", "mobilenet1.0", "--config", "default", "--input-size", "32",
                 "--clock", "40", "-o", str(out)]) == 0
    assert "clock 40.0 MHz (--clock)" in capsys.readouterr().out
    for name in ("energy.png", "energy.svg"):
        assert (out / name).is_file(), name
    assert "<h2>Energy</h2>" in (out / "report.html").read_text()
    record = json.loads((out / "profile.json").read_text())
    energy = record["energy"]
    assert energy["clock"]["mhz"] == 40 and energy["tech"] == "horowitz45"
    layers = record["layers"]
    assert sum(layer["energy_uj"] for layer in layers) == \
        pytest.approx(energy["total"]["energy_uj"])
    assert all(layer["latency_us"] == layer["cycles"] / 40 for layer in layers)
    assert sum(layer["energy_dram_pj"] for layer in layers) == \
        pytest.approx(energy["total"]["energy_pj"]["dram"])


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["profile", "nonet", "--config", "default", "-o", str(tmp_path / "o")]) == 2
    file = tmp_path / "file"
    file.write_text("")
    assert main(["profile", "resnet18", "--config", "default", "--input-size", "32",
                 "-o", str(file)]) == 2
    assert main(["profile", "resnet18", "--config", "default", "--input-size", "31",
                 "-o", str(tmp_path / "o")]) == 2
    assert "avta profile:" in capsys.readouterr().err


def test_a_program_image(tmp_path, capsys):
    """--image: a raw program (load ACC, ALU add, store) profiled as one layer."""
    import numpy as np

    from avta.isa.config import load_config
    from avta.isa.enums import AluOp, MemType
    from avta.isa.insn import Uop
    from avta.sim.image import Image, alu, finish, load, store, sync
    cfg = load_config("tiny")
    image = Image(cfg, size=0x900, insn_addr=0x100)
    image.put(0x400, np.arange(4 * cfg.batch * cfg.block_out, dtype=np.int32))
    image.put_uops(0x40, [Uop(0, 0)])
    image.add(load(MemType.UOP, dram=0x40 // cfg.uop_elem_bytes, x=1),
              load(MemType.ACC, dram=0x400 // cfg.acc_elem_bytes, x=4),
              alu(AluOp.ADD, iters=(1, 4), dst=(0, 1), src=(0, 1), imm=5, push_next=1),
              store(dram=0x800 // cfg.out_elem_bytes, x=4, pop_prev=1, push_prev=1),
              sync("pop_next"), finish())
    path = tmp_path / "prog.bin"
    path.write_bytes(image.to_bytes())
    out = tmp_path / "out"
    assert main(["profile", "--config", "tiny", "--image", str(path), "--insn-addr", "0x100",
                 "--insn-count", str(len(image.insns)), "-o", str(out)]) == 0
    record = json.loads((out / "profile.json").read_text())
    (layer,) = record["layers"]
    assert layer["name"] == "prog" and layer["cycles"] == record["total"]["cycles"] > 0
    assert layer["load_busy"] + layer["load_wait"] + layer["load_idle"] == layer["cycles"]
    assert (out / "report.html").is_file()
    assert main(["profile", "resnet18", "--config", "tiny", "--image", str(path),
                 "--insn-count", "1", "-o", str(out)]) == 2
    assert main(["profile", "--config", "tiny", "--image", str(path), "-o", str(out)]) == 2
    assert main(["profile", "--config", "tiny", "-o", str(out)]) == 2
    assert main(["profile", "resnet18", "--config", "tiny", "--insn-count", "3",
                 "-o", str(out)]) == 2
