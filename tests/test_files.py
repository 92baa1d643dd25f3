"""avta.files: outputs written to a temporary file in the same folder and renamed, so that a
failure while writing leaves the old file (or the old set of files) whole."""

import os
import stat

import pytest

from avta.files import output_files, write_atomic


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_failure_while_writing_leaves_every_old_file_and_no_temporary(tmp_path):
    a, b = tmp_path / "net.yaml", tmp_path / "net.npz"
    a.write_text("old yaml")
    b.write_text("old npz")
    with pytest.raises(RuntimeError), output_files(b, a) as (tb, ta):
        tb.write_text("new npz")
        ta.write_text("half a yaml")
        raise RuntimeError("the disk is full")
    assert (a.read_text(), b.read_text()) == ("old yaml", "old npz")
    assert _listing(tmp_path) == ["net.npz", "net.yaml"]
    with output_files(b, a) as (tb, ta):
        assert (tb.parent, tb.suffix, ta.suffix) == (tmp_path, ".npz", ".yaml")
        tb.write_text("new npz")
        ta.write_text("new yaml")
    assert (a.read_text(), b.read_text()) == ("new yaml", "new npz")
    assert _listing(tmp_path) == ["net.npz", "net.yaml"]


def test_a_written_file_has_the_permissions_open_gives(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    write_atomic(tmp_path / "new" / "atomic.json", "{}")
    write_atomic(tmp_path / "bytes.bin", b"\x00\x01")
    mode = stat.S_IMODE(os.stat(plain).st_mode)
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "atomic.json").st_mode) == mode
    assert (tmp_path / "bytes.bin").read_bytes() == b"\x00\x01"
