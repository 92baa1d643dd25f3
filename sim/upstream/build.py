"""Build upstream VTA's C++ behavioral simulator from the user's checkout of apache/tvm-vta,
unmodified, with avta's harness (``harness.cpp``) and stand-ins for the few TVM runtime pieces
it includes (``shim/``), cached by content.

The simulator's files (:data:`~.macros.UPSTREAM_SOURCES`) are copied into a build folder as they
are, beside the shim headers, the harness and the generated cross-check header
(``avta_expect.h``), and compiled into one executable with :data:`FLAGS` and the ``-DVTA_*``
macros of the configuration (:func:`~.macros.upstream_macros`). The cache key covers every
one of those files' contents, the flags, the macros and the compiler's version; an executable
already built for the same key is reused if it matches the checksum written beside it, so a
truncated one is rebuilt, and concurrent builds are safe (:mod:`avta.sim.build_folder`, which
tsim's builds share).
"""

import hashlib
import shutil
import subprocess
from pathlib import Path

from avta.errors import UserError
from avta.files import cache_root
from avta.progress import working

from ..build_folder import building, intact
from .macros import UPSTREAM_SOURCES, expect_header, upstream_macros

__all__ = ["FLAGS", "build_upstream", "read_sources"]

#: The flags upstream's own CMake files compile its C++ with (tvm-vta's apps use exactly these;
#: TVM's build of libvta_fsim uses -O2 too).
FLAGS = ("-O2", "-Wall", "-fPIC", "-fvisibility=hidden", "-std=c++11")
HERE = Path(__file__).parent
HARNESS = HERE / "harness.cpp"
SHIM = HERE / "shim"
EXPECT = "avta_expect.h"
#: The executable, the build folder's artifact (:mod:`avta.sim.build_folder`).
EXECUTABLE = "upstream_fsim"
#: The translation units among the upstream files; the rest are headers.
UNITS = tuple(p for p in UPSTREAM_SOURCES if p.endswith(".cc"))


def read_sources(vta_src):
    """``{relative path: text}`` of the simulator's files in the checkout ``vta_src``; raises
    :class:`UserError` when it is not a checkout of apache/tvm-vta."""
    root = Path(vta_src).expanduser()
    if not root.is_dir():
        raise UserError(f"--vta-src {vta_src}: no such folder; give a checkout of "
                        f"apache/tvm-vta (git clone https://github.com/apache/tvm-vta)")
    missing = [p for p in UPSTREAM_SOURCES if not (root / p).is_file()]
    if missing:
        raise UserError(f"--vta-src {vta_src} is not a checkout of apache/tvm-vta: "
                        f"{', '.join(missing)} missing")
    return {p: (root / p).read_text() for p in UPSTREAM_SOURCES}


def _compiler():
    gxx = shutil.which("g++")
    if gxx is None:
        raise UserError("building upstream's simulator needs g++, which is not on PATH "
                        "(Debian: apt-get install g++)")
    version = subprocess.run([gxx, "--version"], capture_output=True, text=True).stdout
    return gxx, version.splitlines()[0] if version else "unknown"


def _shim_files():
    return {p.relative_to(HERE).as_posix(): p.read_text() for p in sorted(SHIM.rglob("*.h"))}


def build_upstream(vta_src, cfg):
    """Path of the harness executable for checkout ``vta_src`` and configuration ``cfg``,
    building it if the cache has none for exactly these inputs."""
    upstream = read_sources(vta_src)
    macros = upstream_macros(cfg, upstream.values())
    gxx, version = _compiler()
    ours = _shim_files()
    ours[HARNESS.name] = HARNESS.read_text()
    ours[EXPECT] = expect_header(cfg)
    defines = [f"-D{name}={value}" for name, value in macros.items()]
    digest = hashlib.sha256()
    for name, text in sorted(upstream.items()) + sorted(ours.items()):
        data = text.encode()
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    digest.update("\0".join((*FLAGS, *defines, version)).encode())
    out = cache_root() / "upstream-fsim" / digest.hexdigest()[:16]
    if intact(out, EXECUTABLE):
        return out / EXECUTABLE
    with building(out, EXECUTABLE, error=UserError, what="the build") as tmp:
        for name, text in upstream.items():
            _write(tmp / "vta" / name, text)
        for name, text in ours.items():
            _write(tmp / name, text)
        cmd = [gxx, *FLAGS, *defines, "-I.", "-Ishim", "-Ivta/include", HARNESS.name,
               *(f"vta/{unit}" for unit in UNITS), "-o", EXECUTABLE]
        with working(f"building upstream's fsim {out.name} (g++; cached for next time)"):
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise UserError(f"compiling upstream's simulator failed ({' '.join(cmd)}):\n"
                            f"{proc.stderr.strip()}")
        (tmp / "build.log").write_text(" ".join(cmd) + "\n" + proc.stderr)
    return out / EXECUTABLE


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
