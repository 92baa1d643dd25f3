"""Writing outputs so that no reader ever finds half a file (docs/cli.md, common conventions).

Every file a command writes is first written whole to a temporary file in the same folder (a
hidden ``.NAME.XXXX.SUFFIX``, keeping the suffix so that writers that go by it, matplotlib's
``savefig``, still pick the right format), flushed to disk, and then renamed over its name. A
rename within one folder is atomic: a reader sees the old file or the new one, never a mix,
and a failure while writing (a full disk, an error, Ctrl-C) leaves the old file untouched and no
temporary behind.

:func:`output_files` does the same for an output of several files (``avta import``'s NET.yaml
and NET.npz, ``avta profile``'s seven files): every file is written completely before the first
rename, so a failure while writing any of them leaves every old file as it was. The renames
follow in the order given, the file that names the others (NET.yaml) last; only the machine
stopping in the microseconds between two renames could leave a mix, no error can.

:func:`read_record` is the other side for caches: it reads back a JSON record and returns it
only when it is whole and is the record of the key asked for.

:func:`sources_digest` hashes the Python sources of packages: what a cache of something those
sources compute is keyed by, so that an edit makes a new key (the generated Verilog, the
runtime's programs).

A ground module: it imports nothing of avta, so every layer may use it.
"""

import hashlib
import importlib
import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path

__all__ = ["write_atomic", "output_files", "read_record", "cache_root", "package_source_files",
           "sources_digest"]


def _temporary(path):
    """A new empty file beside ``path``, created with the permissions a plain ``open`` would
    give (``tempfile.mkstemp`` makes files only their owner may read)."""
    path = Path(path)
    while True:
        tmp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}{path.suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def _flush_to_disk(path):
    with open(path, "rb") as f:
        os.fsync(f.fileno())


@contextmanager
def output_files(*paths):
    """Temporary paths, one for each of ``paths`` (in the same folder, same suffix; the one
    path alone when one is given), to write the outputs to; when the block ends without an exception each is renamed over its path, in
    order, after every one is complete. On an exception no path is touched and the temporaries
    are removed. The folders must exist.

    >>> with output_files(folder / "a.yaml", folder / "a.npz") as (yaml_tmp, npz_tmp):
    ...     write(yaml_tmp); write(npz_tmp)                     # doctest: +SKIP
    """
    temps = []
    try:
        for path in paths:
            temps.append(_temporary(path))
        yield temps if len(paths) != 1 else temps[0]
        for tmp in temps:
            _flush_to_disk(tmp)
        for tmp, path in zip(temps, paths):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)


def write_atomic(path, data):
    """Write ``data`` (``str`` as UTF-8, or ``bytes``) to ``path`` through a temporary file in
    the same folder renamed over it; the folder is created if missing. Returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with output_files(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
    return path


def cache_root():
    """Where avta keeps what it computed once (Verilator builds, generated Verilog, synthesis
    and place-and-route results, clocks): ``$AVTA_CACHE`` or ``~/.cache/avta``."""
    return Path(os.environ.get("AVTA_CACHE", Path.home() / ".cache" / "avta"))


def read_record(path, key, fields, *, optional=()):
    """The JSON object cached at ``path`` for ``key``, or None when there is none or it is not
    one: unreadable, not JSON, not an object, another ``key``, a field of ``fields`` (name →
    type, or tuple of types) missing (unless in ``optional``), a field more, or one of the
    wrong type. A cache that reads through it computes a damaged or foreign entry again and
    never trusts it."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not set(fields) - set(optional) <= set(data) <= set(fields):
        return None
    if data.get("key") != key or not all(isinstance(data[k], fields[k]) for k in data):
        return None
    return data


def package_source_files(packages):
    """Every Python source of ``packages`` (import names: a package's whole folder, a module's
    file), as ``(name, path)`` sorted by name; the name is the path relative to its package's
    folder, prefixed by the package."""
    files = []
    for package in packages:
        path = Path(importlib.import_module(package).__file__)
        if path.name == "__init__.py":
            files += [(f"{package}/{p.relative_to(path.parent).as_posix()}", p)
                      for p in path.parent.rglob("*.py")]
        else:
            files.append((package, path))
    return sorted(files)


def sources_digest(files):
    """SHA-256 (hex) of the names and contents of ``files``, ``(name, path)`` pairs."""
    digest = hashlib.sha256()
    for name, path in files:
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
