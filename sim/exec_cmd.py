"""``avta exec``: run a raw DRAM image and print one JSON summary line (docs/architecture.md).

The image is loaded at DRAM address 0; DRAM is as large as the image or ``--dram-size`` (which
zero-fills the rest and must not be smaller than the image), rounded up to a whole 4 KiB page
(docs/isa.md §3), which stderr mentions. Instructions start at the 16-byte
aligned byte address ``--insn-addr``. fsim runs non-strict unless ``--strict`` (docs/isa.md §3: a raw
image runs like the RTL). ``--target tsim`` runs the Verilated design (built and cached on
first use) until finish, error or ``--max-cycles`` (status ``timeout``). The final DRAM goes
to ``-o``; the last line printed is :meth:`RunResult.summary`; a run that does not end ``ok``
also says why on stderr. ``--trace T`` writes the run's trace (:mod:`avta.sim.trace.schema`) in
``--trace-mode`` on either target; on tsim it uses a build of the design with trace ports.

Exit status: 0 when the run ends ``ok``, 1 when it ends ``error``, ``deadlock`` or ``timeout``,
2 when the command itself is wrong (bad arguments, unreadable image).
"""

import sys
from pathlib import Path

import numpy as np

from avta.errors import UserError, check_output_file, read_input
from avta.isa.config import load_config
from avta.isa.encoding import INSN_BYTES
from avta.isa.memories import DRAM_PAGE_BYTES

__all__ = ["cmd_exec", "load_image"]

_MAX_DRAM = 1 << 32       # 32-bit AXI addresses


def load_image(path, dram_size=None, *, say=None):
    """The DRAM of a run: the image's bytes at address 0, zero-extended to ``dram_size`` (by
    default the image's size) rounded up to a whole 4 KiB page (docs/isa.md §3). ``say(line)``
    hears about the rounding."""
    image = read_input(path, "image", binary=True)
    size = len(image) if dram_size is None else dram_size
    if size < len(image):
        raise UserError(f"--dram-size {size} is smaller than the image {path} "
                        f"({len(image)} bytes): DRAM must hold the whole image")
    pages = -(-size // DRAM_PAGE_BYTES) * DRAM_PAGE_BYTES
    if not 0 < pages <= _MAX_DRAM:
        raise UserError(f"DRAM size {size} must be between 1 byte and 4 GiB (32-bit "
                        f"addresses); give a non-empty image or a --dram-size in that range")
    if pages != size and say is not None:
        say(f"DRAM is {size} bytes, rounded up to {pages} (a whole number of 4 KiB pages, "
            f"docs/isa.md §3)")
    dram = bytearray(pages)
    dram[:len(image)] = image
    return dram


def _check_args(args):
    if args.insn_addr < 0 or args.insn_addr % INSN_BYTES:
        raise UserError(f"--insn-addr 0x{args.insn_addr:x} must be a non-negative multiple of "
                          f"{INSN_BYTES}: instructions are {INSN_BYTES}-byte aligned")
    if args.insn_addr >= _MAX_DRAM:
        raise UserError(f"--insn-addr 0x{args.insn_addr:x} is beyond the 32-bit address space")
    if not 0 <= args.insn_count < _MAX_DRAM:
        raise UserError(f"--insn-count {args.insn_count} must be in 0..2^32-1")
    if args.max_cycles is not None and args.max_cycles < 1:
        raise UserError(f"--max-cycles {args.max_cycles} must be at least 1 (leave it out for "
                        f"the default, {DEFAULT_MAX_CYCLES:,})")
    if args.output:
        check_output_file(args.output, "-o")
    if args.trace:
        check_output_file(args.trace, "--trace")


#: tsim's cycle limit when --max-cycles is not given.
DEFAULT_MAX_CYCLES = 100_000_000


def _simulator(cfg, args):
    if args.target == "tsim":
        from avta.sim.tsim.driver import Tsim
        return Tsim(cfg, trace=bool(args.trace)), \
            {"max_cycles": DEFAULT_MAX_CYCLES if args.max_cycles is None else args.max_cycles}
    from avta.sim.fsim import Fsim
    return Fsim(cfg, strict=args.strict), {}


def cmd_exec(args):
    """Handler of ``avta exec``; returns the exit status described in the module docstring."""
    cfg = load_config(args.config)
    _check_args(args)
    dram = load_image(args.image, args.dram_size,
                      say=lambda line: print(f"avta exec: {line}", file=sys.stderr))
    sim, options = _simulator(cfg, args)
    buffer = np.frombuffer(dram, dtype=np.uint8)
    if args.trace:
        from avta.sim.trace.record import record_trace
        result = record_trace(args.trace, sim, buffer, args.insn_addr, args.insn_count,
                              mode=args.trace_mode or "arch", **options)
    else:
        result = sim.run(buffer, args.insn_addr, args.insn_count, **options)

    if args.output:
        Path(args.output).write_bytes(dram)
    if result.status != "ok":
        print(f"avta exec: {result.detail}", file=sys.stderr)
    print(result.summary())
    return 0 if result.ok else 1
