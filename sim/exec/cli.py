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

``--base KEY=ADDR`` (repeatable) sets a base register (docs/isa.md §3, DRAM addresses); the others
stay 0. A misaligned base is not refused here: the run ends with error 11 as on the device.
tsim's AXI memory takes its timing (:class:`~avta.sim.memory_knobs.MemoryKnobs`) from
``--knobs FILE.json`` and the flags ``--seed``, ``--latency N|MIN-MAX``, ``--outstanding``,
``--[no-]reorder``, ``--backpressure`` and ``--write-latency``, each overriding the file's
field; without any it is the plain timing, ``MemoryKnobs()``. fsim has no memory timing: knobs
other than the defaults with ``--target fsim`` are a usage error.

Exit status: 0 when the run ends ``ok``, 1 when it ends ``error``, ``deadlock`` or ``timeout``,
2 when the command itself is wrong (bad arguments, unreadable image).
"""

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

from avta.errors import UserError, check_output_file, read_input
from avta.isa.config import load_config
from avta.isa.encoding import INSN_BYTES
from avta.isa.memories import BASE_KEYS, DRAM_PAGE_BYTES
from avta.sim.memory_knobs import MemoryKnobs

__all__ = ["cmd_exec", "check_program", "load_image", "memory_knobs", "base_registers"]

_MAX_DRAM = 1 << 32       # 32-bit AXI addresses
_MAX_SEED = (1 << 64) - 1  # tsim's memory model takes a 64-bit seed


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


def check_program(insn_addr, insn_count):
    """Refuse ``--insn-addr`` and ``--insn-count`` values no run can take (one line each)."""
    if insn_addr < 0 or insn_addr % INSN_BYTES:
        raise UserError(f"--insn-addr 0x{insn_addr:x} must be a non-negative multiple of "
                        f"{INSN_BYTES}: instructions are {INSN_BYTES}-byte aligned")
    if insn_addr >= _MAX_DRAM:
        raise UserError(f"--insn-addr 0x{insn_addr:x} is beyond the 32-bit address space")
    if not 0 <= insn_count < _MAX_DRAM:
        raise UserError(f"--insn-count {insn_count} must be in 0..2^32-1")


def _check_args(args):
    check_program(args.insn_addr, args.insn_count)
    if args.max_cycles is not None and args.max_cycles < 1:
        raise UserError(f"--max-cycles {args.max_cycles} must be at least 1 (leave it out for "
                        f"the default, {DEFAULT_MAX_CYCLES:,})")
    if args.output:
        check_output_file(args.output, "-o")
    if args.trace:
        check_output_file(args.trace, "--trace")


#: tsim's cycle limit when --max-cycles is not given.
DEFAULT_MAX_CYCLES = 100_000_000


def _integer(text, option, low=None, high=None):
    try:
        value = int(text, 0)
    except ValueError:
        raise UserError(f"{option} {text!r} is not an integer (decimal, or 0x... for "
                        f"hexadecimal)") from None
    if low is not None and not low <= value <= high:
        raise UserError(f"{option} {text} must be in {low}..{high:#x}")
    return value


def _latency(text):
    """``N`` → ``(N, N)``, ``MIN-MAX`` → ``(MIN, MAX)``."""
    parts = text.split("-")
    try:
        if len(parts) > 2:
            raise ValueError
        values = [int(part.strip(), 0) for part in parts]
    except ValueError:
        raise UserError(f"--latency {text!r}: give N (a fixed latency) or MIN-MAX (uniform "
                        f"between them), whole cycles, e.g. --latency 30-40") from None
    return (values[0], values[-1])


def _probability(text):
    try:
        return float(text)
    except ValueError:
        raise UserError(f"--backpressure {text!r} is not a number; give a probability "
                        f"such as 0.3") from None


#: The memory-knob flags: (option, MemoryKnobs field, parser of its text).
_KNOB_FLAGS = [
    ("--seed", "seed", lambda text: _integer(text, "--seed", 0, _MAX_SEED)),
    ("--latency", "latency", _latency),
    ("--outstanding", "outstanding", lambda text: _integer(text, "--outstanding")),
    ("--reorder", "reorder", bool),
    ("--backpressure", "backpressure", _probability),
    ("--write-latency", "write_latency", lambda text: _integer(text, "--write-latency")),
]


def _knobs_file(path):
    """The knobs of ``--knobs FILE``: an object of :meth:`MemoryKnobs.to_dict` fields (those
    left out keep their defaults), or a fuzz failure.json, whose ``memory_knobs`` it takes."""
    text = read_input(path, "--knobs file")
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"--knobs file {path!r} is not JSON: {error}") from None
    if isinstance(values, dict) and isinstance(values.get("memory_knobs"), dict):
        values = values["memory_knobs"]
    if not isinstance(values, dict):
        raise UserError(f"--knobs file {path!r} must hold a JSON object of memory knobs, "
                        f"e.g. {json.dumps(MemoryKnobs().to_dict())}")
    defaults = MemoryKnobs()
    for name, value in values.items():
        want = type(getattr(defaults, name, None))
        ok = {int: _is_int(value), bool: isinstance(value, bool), tuple: (
                  isinstance(value, list) and len(value) == 2 and all(map(_is_int, value))),
              float: _is_int(value) or isinstance(value, float)}.get(want, True)
        if not ok:
            raise UserError(f"--knobs file {path!r}: {name} {json.dumps(value)} has the wrong "
                            f"type; the default is {json.dumps(defaults.to_dict()[name])}")
    try:
        knobs = MemoryKnobs.from_dict(values)
    except ValueError as error:
        raise UserError(f"--knobs file {path!r}: {error}") from None
    if not 0 <= knobs.seed <= _MAX_SEED:
        raise UserError(f"--knobs file {path!r}: seed {knobs.seed} must be in "
                        f"0..{_MAX_SEED:#x}")
    return knobs


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def memory_knobs(args):
    """The :class:`MemoryKnobs` of tsim's memory: ``--knobs``'s (or the defaults), with each
    knob flag given overriding its field. A bad value is a :class:`UserError` naming its
    option; so are knobs other than the defaults on fsim, which has no memory timing."""
    knobs = MemoryKnobs() if args.knobs is None else _knobs_file(args.knobs)
    given = ["--knobs"] if args.knobs is not None else []
    for option, field, parse in _KNOB_FLAGS:
        text = getattr(args, field)
        if text is None:
            continue
        given.append(option if text is not False else "--no-reorder")
        try:
            knobs = dataclasses.replace(knobs, **{field: parse(text)})
        except ValueError as error:
            raise UserError(f"{option} {text}: {error}") from None
    if args.target != "tsim" and knobs != MemoryKnobs():
        raise UserError(f"{', '.join(given)} set tsim's memory timing; fsim has none: give "
                        f"--target tsim, or leave them out")
    return knobs


def base_registers(texts):
    """The ``bases`` of a run from ``--base KEY=ADDR`` texts: KEY one of
    :data:`~avta.isa.memories.BASE_KEYS` (any case, ``_BASE`` may follow), ADDR a 32-bit
    address. Alignment is the run's business (error 11)."""
    bases = {}
    for text in texts or ():
        key, sep, addr = text.partition("=")
        name = key.strip().upper().removesuffix("_BASE")
        if not sep or not addr.strip():
            raise UserError(f"--base {text!r}: give KEY=ADDR, e.g. --base INP=0x2000")
        if name not in BASE_KEYS:
            raise UserError(f"--base {text!r}: unknown base register {key.strip()!r}; the base "
                            f"registers are {', '.join(BASE_KEYS)}")
        if name in bases:
            raise UserError(f"--base {text!r}: {name}_BASE is already set (to "
                            f"0x{bases[name]:x}); give each base register once")
        bases[name] = _integer(addr.strip(), f"--base {name}", 0, _MAX_DRAM - 1)
    return bases


def _simulator(cfg, args, knobs):
    """The simulator (:func:`avta.sim.targets.make_simulator`) and its run options."""
    from avta.sim.targets import make_simulator
    sim = make_simulator(cfg, args.target, strict=args.strict, trace=args.trace,
                         knobs=knobs if args.target == "tsim" else None)
    if args.target == "tsim":
        return sim, \
            {"max_cycles": DEFAULT_MAX_CYCLES if args.max_cycles is None else args.max_cycles}
    return sim, {}


def cmd_exec(args):
    """Handler of ``avta exec``; returns the exit status described in the module docstring."""
    cfg = load_config(args.config)
    _check_args(args)
    knobs = memory_knobs(args)
    bases = base_registers(args.base)
    dram = load_image(args.image, args.dram_size,
                      say=lambda line: print(f"avta exec: {line}", file=sys.stderr))
    sim, options = _simulator(cfg, args, knobs)
    buffer = np.frombuffer(dram, dtype=np.uint8)
    if args.trace:
        from avta.sim.trace.record import record_trace
        result = record_trace(args.trace, sim, buffer, args.insn_addr, args.insn_count,
                              mode=args.trace_mode or "arch", bases=bases, **options)
    else:
        result = sim.run(buffer, args.insn_addr, args.insn_count, bases=bases, **options)

    if args.output:
        Path(args.output).write_bytes(dram)
    if result.status != "ok":
        print(f"avta exec: {result.detail}", file=sys.stderr)
    print(result.summary())
    return 0 if result.ok else 1
