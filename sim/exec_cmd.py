"""``avta exec``: run a raw DRAM image and print one JSON summary line (ARCHITECTURE.md).

The image is loaded at DRAM address 0; DRAM is as large as the image or ``--dram-size`` (which
zero-fills the rest and must not be smaller than the image). Instructions start at the 16-byte
aligned byte address ``--insn-addr``. fsim runs non-strict unless ``--strict`` (ISA.md §3: a raw
image runs like the RTL). ``--target tsim`` runs the Verilated design (built and cached on
first use) until finish, error or ``--max-cycles`` (status ``timeout``). The final DRAM goes to ``-o``; the last line printed is
:meth:`RunResult.summary`; a run that does not end ``ok`` also says why on stderr.

Exit status: 0 when the run ends ``ok``, 1 when it ends ``error``, ``deadlock`` or ``timeout``,
2 when the command itself is wrong (bad arguments, unreadable image).
"""

import json
import sys
from pathlib import Path

from avta.isa.config import load_config
from avta.isa.encoding import INSN_BYTES

__all__ = ["cmd_exec", "load_image"]

_MAX_DRAM = 1 << 32       # 32-bit AXI addresses


def _user_error(message):
    from avta.cli import UserError
    return UserError(message)


def load_image(path, dram_size=None):
    """The DRAM of a run: the image's bytes at address 0, zero-extended to ``dram_size``."""
    image = Path(path).read_bytes()
    size = len(image) if dram_size is None else dram_size
    if size < len(image):
        raise _user_error(f"--dram-size {size} is smaller than the image {path} "
                          f"({len(image)} bytes): DRAM must hold the whole image")
    if not 0 < size <= _MAX_DRAM:
        raise _user_error(f"DRAM size {size} must be between 1 byte and 4 GiB (32-bit "
                          f"addresses); give a non-empty image or a --dram-size in that range")
    dram = bytearray(size)
    dram[:len(image)] = image
    return dram


def _check_args(args):
    if args.insn_addr < 0 or args.insn_addr % INSN_BYTES:
        raise _user_error(f"--insn-addr 0x{args.insn_addr:x} must be a non-negative multiple of "
                          f"{INSN_BYTES}: instructions are {INSN_BYTES}-byte aligned")
    if not 0 <= args.insn_count < _MAX_DRAM:
        raise _user_error(f"--insn-count {args.insn_count} must be in 0..2^32-1")


def _run_fsim(cfg, args, dram, trace):
    from avta.sim.fsim import Fsim
    sim = Fsim(cfg, strict=args.strict, trace=trace,
               trace_mode=getattr(args, "trace_mode", None) or "arch")
    return sim.run(dram, args.insn_addr, args.insn_count)


#: tsim's cycle limit when --max-cycles is not given.
DEFAULT_MAX_CYCLES = 100_000_000


def _run_tsim(cfg, args, dram):
    import numpy as np
    from avta.sim.tsim.driver import Tsim
    buffer = np.frombuffer(dram, dtype=np.uint8)
    return Tsim(cfg).run(buffer, args.insn_addr, args.insn_count,
                         max_cycles=args.max_cycles or DEFAULT_MAX_CYCLES)


def cmd_exec(args):
    """Handler of ``avta exec``; returns the exit status described in the module docstring."""
    cfg = load_config(args.config)
    _check_args(args)
    if args.target == "tsim" and args.trace:
        raise _user_error("--trace on tsim arrives with the trace manager (issue 6); "
                          "use --target fsim for a trace")
    dram = load_image(args.image, args.dram_size)

    trace_file = open(args.trace, "w") if args.trace else None
    try:
        trace = None
        if trace_file is not None:
            def trace(event):
                trace_file.write(json.dumps(event) + "\n")
        if args.target == "tsim":
            result = _run_tsim(cfg, args, dram)
        else:
            result = _run_fsim(cfg, args, dram, trace)
    finally:
        if trace_file is not None:
            trace_file.close()

    if args.output:
        Path(args.output).write_bytes(dram)
    if result.status != "ok":
        print(f"avta exec: {result.detail}", file=sys.stderr)
    print(result.summary())
    return 0 if result.ok else 1
