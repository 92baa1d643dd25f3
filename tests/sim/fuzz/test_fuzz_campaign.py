"""``avta fuzz``: random well-formed programs agree on fsim and tsim.

The default run covers 300 programs over four configurations; ``pytest -m slow`` runs a longer
campaign. A planted bug shows that the comparison can fail and that failures are shrunk and
saved for replay.
"""

import json

import pytest

from avta.cli import main
from avta.hw.core.faults import FaultName
from avta.isa.config import load_config
from avta.sim.fuzz.coverage import ISA_FEATURES
from avta.sim.fuzz.runner import fuzz

pytestmark = pytest.mark.tsim

#: (configuration, programs) of the default run: 300 programs in all, with their corners and
#: error paths; ``tight`` has 2-bit token counters and two ACC read ports.
CAMPAIGN = [("tiny", 120), ("tight", 80), ("default", 60), ("wide", 40)]


@pytest.mark.parametrize("config, count", CAMPAIGN)
def test_random_programs_agree(tmp_path, config, count):
    summary = fuzz(load_config(config), count, seed=0, out_dir=tmp_path)
    assert summary.ok, summary.format()
    assert summary.programs == count and summary.events > 0
    assert not list(tmp_path.iterdir())


def test_campaign_covers_the_isa(tmp_path):
    summary = fuzz(load_config("tiny"), 40, seed=500, out_dir=tmp_path)
    assert summary.ok
    missing = set(ISA_FEATURES) - set(summary.features)
    assert not missing, f"40 programs never used: {sorted(missing)}"


@pytest.mark.slow
@pytest.mark.parametrize("config, count", [("tiny", 2000), ("tight", 2000), ("default", 500),
                                           ("batch2", 300), ("rect", 300), ("wide", 300),
                                           ("big_acc", 300)])
def test_long_campaign(tmp_path, config, count):
    summary = fuzz(load_config(config), count, seed=10_000, out_dir=tmp_path)
    assert summary.ok, summary.format()


def test_a_planted_bug_is_caught_shrunk_and_saved_for_replay(tmp_path):
    summary = fuzz(load_config("tiny"), 10, seed=0, out_dir=tmp_path,
                   faults={FaultName.GEMM_ACC_INDEX})
    assert not summary.ok
    failure = summary.failures[0]
    assert failure.folder.parent == tmp_path
    run_files = {"image.bin", "program.jsonl", "fsim.trace", "tsim.trace", "diff.txt"}
    names = {p.name for p in failure.folder.iterdir()}
    assert names == run_files | {"failure.json", "replay.sh", "knobs.json", "original"}
    assert {p.name for p in (failure.folder / "original").iterdir()} == run_files
    saved = json.loads((failure.folder / "failure.json").read_text())
    assert saved["seed"] == failure.seed
    assert saved["shrunk"]["original_reasons"] == failure.reasons
    # Shrunk to the GEMM that shows the bug, among the no-ops that keep the tokens.
    assert saved["insn_count"] == saved["shrunk"]["to_insns"] < saved["shrunk"]["from_insns"]
    ops = [json.loads(line) for line in (failure.folder / "program.jsonl").read_text().splitlines()]
    work = [op for op in ops if op["op"] in ("GEMM", "ALU") or op.get("x_size")]
    assert [op["op"] for op in work] == ["GEMM"], work
    assert "compute  DIVERGES at instruction" in (failure.folder / "diff.txt").read_text()
    # The saved image replays through avta exec on both targets, and the correct design
    # agrees with fsim on it: the bug was in the design, not in the program.
    args = ["--config", "tiny", "--image", str(failure.folder / "image.bin"),
            "--insn-addr", hex(saved["insn_addr"]), "--insn-count", str(saved["insn_count"]),
            "--dram-size", str(saved["dram_size"])]
    for key, value in saved["bases"].items():
        args += ["--base", f"{key}={value}"]
    traces = [tmp_path / "replay-fsim.trace", tmp_path / "replay-tsim.trace"]
    for target, trace in zip(("fsim", "tsim"), traces):
        knobs = ["--knobs", str(failure.folder / "knobs.json")] if target == "tsim" else []
        assert main(["exec", "--target", target, "--trace", str(trace), *args, *knobs]) == 0
    assert main(["trace-diff", *map(str, traces)]) == 0


def test_cli(tmp_path, capsys):
    assert main(["fuzz", "--config", "tiny", "-n", "3", "--seed", "7",
                 "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fuzz tiny: 3 programs" in out
    assert out.rstrip().splitlines()[-1] == "matched: 0 of 3 programs differ"
    assert main(["fuzz", "--config", "tiny", "-n", "0"]) == 2
    assert "run at least one program" in capsys.readouterr().err


@pytest.mark.slow
def test_every_planted_fault_is_found():
    """Each planted fault class (one per unit) is exposed by some of 200 programs;
    ``python -m avta.sim.fuzz.detect -n 1000`` prints the full table for the notes."""
    from avta.sim.fuzz.detect import detection_table
    rows = detection_table(load_config("tiny"), 200, seed=0)
    missed = [row[0] for row in rows if not row[3]]
    assert not missed, missed


def test_the_summary_counts_layout_and_run_features(tmp_path):
    """The summary's coverage comes from the programs as laid out in DRAM (base registers, page
    crossings, planted errors) and from the runs (tsim reused after an error), not only from the
    instructions."""
    summary = fuzz(load_config("tiny"), 30, seed=0, out_dir=tmp_path)
    assert summary.ok
    for name in ("non-zero base", "address >24 KiB", "image not page-multiple",
                 "tsim reused after an error"):
        assert summary.features[name], name
    assert "coverage: " in summary.format() and "corner features" in summary.format()
