"""The generated Verilog of ``vta_top``, kept on disk so that a warm start elaborates nothing.

Generating the design (Amaranth elaboration, then Yosys writing Verilog) takes seconds on
``tiny`` and ten on ``default``; every tsim and cocotb run needs the text, if only to find its
Verilator build (:mod:`.tsim.build` keys builds by the Verilog). The text is a pure function
of what :func:`design_key` hashes:

- the configuration's keys (not its name, which the RTL never reads) and the generator's
  options (trace ports, activity ports, planted faults);
- the content of every source the RTL is built from: the ``avta.hw`` and ``avta.isa`` packages
  and ``avta.version``, the only ones ``avta.hw`` may import (tests/test_layers.py);
- the versions of Amaranth, of the Yosys it writes Verilog with, and of Python.

So an edit to the RTL, the ISA or a tool upgrade makes a new key, and the old entry is simply
no longer read. Each entry is ``verilog/<key>.v`` with its SHA-256 in ``<key>.v.sha256``, both
written through a temporary file renamed into place; a text whose checksum does not match
(a full disk, a killed writer) is generated again and rewritten.
"""

import functools
import hashlib
import json
import os
import sys

from avta.files import package_source_files, sources_digest as files_digest

from .verilator import cache_root

__all__ = ["cached_top_verilog", "design_key", "sources_digest", "rtl_source_files"]

#: The packages (as import names) whose sources determine the Verilog: ``avta.hw`` and what it
#: may import (tests/test_layers.py keeps that list true).
RTL_PACKAGES = ("avta.hw", "avta.isa", "avta.version")


def rtl_source_files():
    """Every Python source of :data:`RTL_PACKAGES`, as ``(name, path)`` sorted by name
    (:func:`avta.files.package_source_files`)."""
    return package_source_files(RTL_PACKAGES)


def sources_digest(files=None):
    """SHA-256 (hex) of the names and contents of ``files`` (default :func:`rtl_source_files`)."""
    return files_digest(files if files is not None else rtl_source_files())


@functools.lru_cache(maxsize=1)
def tool_versions():
    """The versions that shape the generated text: Amaranth, the Yosys it uses, Python."""
    import amaranth
    from amaranth._toolchain.yosys import find_yosys
    # The same requirement amaranth.back.verilog asks for, so this is the Yosys it runs.
    yosys = find_yosys(lambda version: version >= (0, 40))
    return {"amaranth": amaranth.__version__, "yosys": f"{yosys.__name__} {yosys.version()}",
            "python": "%d.%d" % sys.version_info[:2]}


def design_key(cfg, *, trace=False, activity=False, faults=(), sources=None):
    """The cache key (hex) of ``top_verilog(cfg, trace=..., activity=..., faults=...)``;
    ``sources`` is a :func:`sources_digest` (computed when not given)."""
    fields = {"config": cfg.to_dict(), "trace": bool(trace), "activity": bool(activity),
              "faults": sorted(faults), "sources": sources or sources_digest(),
              "tools": tool_versions()}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:24]


def _folder():
    return cache_root() / "verilog"


def _read(path):
    """The text at ``path`` when its checksum file matches it, else ``None``."""
    try:
        data = path.read_bytes()
        expected = path.with_name(path.name + ".sha256").read_text().strip()
    except OSError:
        return None
    return data.decode() if hashlib.sha256(data).hexdigest() == expected else None


def _write(path, text):
    """Write ``text`` and its checksum, each through a temporary file renamed into place (the
    checksum last, so a reader sees a match only once both are whole). A cache that cannot be
    written is no error: the text was generated, only the next start pays again."""
    data = text.encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, content in ((path, data),
                                (path.with_name(path.name + ".sha256"),
                                 hashlib.sha256(data).hexdigest().encode())):
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(content)
            tmp.replace(target)
    except OSError:
        pass


def cached_top_verilog(cfg, *, trace=False, activity=False, faults=()):
    """``avta.hw.top.top_verilog(cfg, ...)``, read from the cache when an intact entry of the
    same :func:`design_key` exists, else generated and stored."""
    from avta.hw.core.faults import check_faults
    faults = check_faults(faults)
    path = _folder() / f"{design_key(cfg, trace=trace, activity=activity, faults=faults)}.v"
    text = _read(path)
    if text is None:
        from avta.hw.top import top_verilog
        text = top_verilog(cfg, trace=trace, activity=activity, faults=faults)
        _write(path, text)
    return text
