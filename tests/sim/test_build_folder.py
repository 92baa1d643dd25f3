"""The build folders of the cache (sim/build_folder.py), which tsim's library and upstream's
simulator are published in: a folder is used only whole; a corrupt, half-written or foreign one
is built again; a failed build publishes nothing; a lost race keeps the winner's build only if
it is whole. (tests/sim/tsim/test_build_cache.py runs many processes at once through tsim.)"""

import hashlib
import os

import pytest

from avta.sim.build_folder import building, checksum_name, intact

ARTIFACT = "tool.bin"


class BuildFailed(RuntimeError):
    pass


def _build(out, content=b"built"):
    """Build ``out`` if it is not intact (as tsim and upstream do); what the body wrote, or
    None when the folder was used as it was."""
    if intact(out, ARTIFACT):
        return None
    with building(out, ARTIFACT, error=BuildFailed, what="the test build") as tmp:
        (tmp / ARTIFACT).write_bytes(content)
    return content


@pytest.fixture
def out(tmp_path):
    return tmp_path / "cache" / "kind" / "0123abcd"


def test_a_build_is_published_whole_and_then_used(out):
    assert _build(out) == b"built"
    assert intact(out, ARTIFACT) and (out / ARTIFACT).read_bytes() == b"built"
    assert sorted(p.name for p in out.iterdir()) == [ARTIFACT, checksum_name(ARTIFACT)]
    assert _build(out, b"other") is None and (out / ARTIFACT).read_bytes() == b"built"
    assert [p.name for p in out.parent.iterdir()] == [out.name]     # no workspace left


@pytest.mark.parametrize("damage", ["truncated", "no checksum", "no artifact", "bad checksum",
                                    "empty folder"])
def test_a_corrupt_or_half_written_folder_is_rebuilt_not_used(out, damage):
    _build(out)
    artifact, checksum = out / ARTIFACT, out / checksum_name(ARTIFACT)
    if damage == "truncated":
        artifact.write_bytes(b"bui")
    elif damage == "no checksum":               # killed between the artifact and its checksum
        checksum.unlink()
    elif damage == "no artifact":
        artifact.unlink()
    elif damage == "bad checksum":
        checksum.write_text("0" * 64)
    else:
        artifact.unlink()
        checksum.unlink()
    assert not intact(out, ARTIFACT)
    assert _build(out, b"rebuilt") == b"rebuilt"
    assert intact(out, ARTIFACT) and artifact.read_bytes() == b"rebuilt"
    assert [p.name for p in out.parent.iterdir()] == [out.name]


def test_a_failed_build_publishes_nothing(out):
    with pytest.raises(ZeroDivisionError):
        with building(out, ARTIFACT, error=BuildFailed, what="the test build") as tmp:
            (tmp / ARTIFACT).write_bytes(b"half")
            1 / 0
    assert list(out.parent.iterdir()) == []


def test_a_build_that_writes_no_artifact_publishes_nothing(out):
    with pytest.raises(FileNotFoundError):
        with building(out, ARTIFACT, error=BuildFailed, what="the test build"):
            pass
    assert list(out.parent.iterdir()) == []


def test_the_workspaces_of_dead_builds_are_removed_and_live_ones_kept(out):
    out.parent.mkdir(parents=True)
    dead = out.with_name(out.name + ".tmp999999999")       # no such process
    live = out.with_name(out.name + f".tmp{os.getppid()}")
    for folder in (dead, live):
        (folder / "obj").mkdir(parents=True)
    _build(out)
    assert not dead.exists() and live.exists()


def test_a_lost_race_keeps_the_winners_whole_build(out):
    with building(out, ARTIFACT, error=BuildFailed, what="the test build") as tmp:
        (tmp / ARTIFACT).write_bytes(b"mine")
        # Another process publishes first (its workspace is its own: written here directly).
        out.mkdir()
        (out / ARTIFACT).write_bytes(b"theirs")
        (out / checksum_name(ARTIFACT)).write_text(hashlib.sha256(b"theirs").hexdigest())
    assert (out / ARTIFACT).read_bytes() == b"theirs" and intact(out, ARTIFACT)
    assert [p.name for p in out.parent.iterdir()] == [out.name]


def test_a_lost_race_to_a_broken_folder_is_a_clear_error(out):
    with pytest.raises(BuildFailed, match="cannot publish the test build .*remove it and try "
                                          "again"):
        with building(out, ARTIFACT, error=BuildFailed, what="the test build") as tmp:
            (tmp / ARTIFACT).write_bytes(b"mine")
            out.mkdir()
            (out / ARTIFACT).write_bytes(b"half")       # another process's, not whole
    assert not out.with_name(f"{out.name}.tmp{os.getpid()}").exists()


def test_an_unwritable_cache_is_a_clear_error(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")   # unwritable even for root
    with pytest.raises(BuildFailed, match="set AVTA_CACHE to a writable folder"):
        _build(blocker / "kind" / "0123abcd")
