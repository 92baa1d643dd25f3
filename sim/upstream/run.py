"""Run one avta program on upstream's simulator (the harness of :mod:`.build`) and get back the
DRAM image it leaves and the CPU seconds of each run."""

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from avta.errors import UserError

from .rebase import rebase_stream

__all__ = ["UpstreamError", "UpstreamRun", "run_upstream"]

#: Seconds a run may take before it counts as hung (upstream's scheduler loops until a FINISH
#: ends its last pass, forever if none does).
TIMEOUT = 900.0


class UpstreamError(UserError):
    """Upstream's simulator stopped with an error, hung, or did not answer as the harness
    should."""


@dataclass
class UpstreamRun:
    """What one call of :func:`run_upstream` gives back."""
    #: The DRAM image after the last run (uint8, as long as the image given).
    image: np.ndarray
    #: CPU seconds of each run, measured inside the harness around ``VTADeviceRun`` alone.
    seconds: list
    #: Physical byte addresses upstream gave the image and the instructions.
    image_base: int
    insn_base: int


def run_upstream(executable, cfg, image, stream, *, repeats=1, timeout=TIMEOUT):
    """Run the instruction stream ``stream`` (avta's encoding, addresses in avta's DRAM) on the
    DRAM image ``image`` (bytes-like), ``repeats`` times, each in a process of its own from the
    same image (upstream's scheduler carries a program's unpopped tokens into the next run of
    the same process); every run must leave the same image."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise UserError(f"repeats must be a whole number of at least 1, not {repeats!r}")
    image = np.ascontiguousarray(image, dtype=np.uint8).reshape(-1)
    if not image.size or not stream or len(stream) % 16:
        raise UserError(f"an image ({image.size} bytes) and a non-empty stream of 16-byte "
                        f"instructions ({len(stream)} bytes) are needed")
    runs = []
    with tempfile.TemporaryDirectory(prefix="avta-upstream-") as folder:
        image_in = Path(folder, "image.bin")
        image.tofile(image_in)
        for _ in range(repeats):
            runs.append(_run_once(executable, cfg, image_in, Path(folder, "after.bin"), stream,
                                  timeout))
    after = runs[-1][0]
    if after.size != image.size or any(not np.array_equal(a, after) for a, *_ in runs):
        raise UpstreamError("upstream's runs of one program from one image left different "
                            "images")
    return UpstreamRun(after, [seconds for _, seconds, _ in runs], *runs[-1][2])


def _run_once(executable, cfg, image_in, image_out, stream, timeout):
    """One harness process: ``(image after, CPU seconds, (image base, insn base))``."""
    proc = subprocess.Popen([str(executable), str(image_in), str(image_out),
                             str(len(stream) // 16)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline().decode().split()
        if len(first) != 3 or first[0] != "alloc":
            proc.kill()
            _, err = proc.communicate()
            raise UpstreamError(f"upstream's harness did not start: {err.decode().strip()}")
        bases = int(first[1]), int(first[2])
        proc.stdin.write(rebase_stream(cfg, stream, bases[0]))
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise UpstreamError(f"upstream's simulator ran more than {timeout:.0f} s; its "
                            f"scheduler loops forever on a program whose FINISH is not the "
                            f"last instruction to run") from None
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise UpstreamError(f"upstream's simulator stopped (exit {proc.returncode}): "
                            f"{err.decode().strip()}")
    seconds = [float(line.split()[1]) for line in out.decode().splitlines()
               if line.startswith("run ")]
    if len(seconds) != 1:
        raise UpstreamError(f"upstream's harness did not report its run: {out.decode()!r}")
    return np.fromfile(image_out, dtype=np.uint8), seconds[0], bases
