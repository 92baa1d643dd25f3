"""Programs built once, across processes: an operator's program kept on disk, placed anew.

Building a conv2d's program — the tiling search (:mod:`.ops.conv_plan`), the micro-op kernels
and the instruction stream — takes most of a network run's host time, and it is a pure function
of what :func:`program_key` hashes:

- the builder (its module and name) and its arguments other than the DRAM addresses: the
  layer's shape, the requantization, the bias bound, the tiling or the options that choose it;
- the configuration's keys (not its name, which no program reads): the planner's estimate reads
  the bus width and the pipeline, the fields' widths follow from the scratchpads' sizes;
- the content of every source the program is built from: the ``avta.runtime`` and ``avta.isa``
  packages and the ground modules they may import (tests/test_layers.py keeps that list true).

The DRAM addresses are left out: a program reads and writes each operand only at its element
address plus offsets, so the entry keeps every LOAD's and STORE's ``dram_base`` relative to the
operand it addresses (which operand a memory type means is the builder's ``operands``), and
:func:`cached_program` adds the addresses of the call. A layer placed elsewhere in DRAM, in
another run or another process, plans nothing again; an edit to the runtime or the ISA makes a
new key, and the old entry is no longer read.

Each entry is a JSON record ``programs/<key>.json`` under the cache folder
(:func:`avta.files.cache_root`), written atomically (:func:`avta.files.write_atomic`) and read
through :func:`avta.files.read_record`, which returns nothing for a damaged or foreign entry: it
is then built again and rewritten. Entries read in this process are also kept in memory
(:data:`KEPT`). ``AVTA_PROGRAM_CACHE=0`` turns the disk off (docs/cli.md says where the cache
lives and how to clear it).

A program read back is a :class:`CachedProgram`: the encoded stream and micro-ops as built
(decoded into instruction objects only when asked for) and no token ledger.
"""

import base64
import functools
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from avta.files import cache_root, package_source_files, read_record, sources_digest, \
    write_atomic
from avta.isa.encoding import codec
from avta.isa.enums import MemType, Opcode
from avta.isa.insn import MemoryInsn
from avta.isa.layout import layouts

from .program import Program

__all__ = ["CachedProgram", "cached_program", "program_key", "runtime_digest", "cache_folder",
           "cached_plan", "enabled", "clear_memory", "KEPT"]

#: The packages whose sources build a program: the runtime and what it may import.
RUNTIME_PACKAGES = ("avta.runtime", "avta.isa", "avta.errors", "avta.files")
#: Entries kept in memory per process (a network has a few dozen distinct layers).
KEPT = 256
#: The environment variable that turns the disk cache off when it is ``0``.
SWITCH = "AVTA_PROGRAM_CACHE"

_FIELDS = {"key": str, "insns": str, "uops": str, "uop_count": int, "uop_loads": list,
           "relocations": dict, "mix": dict}
_PLAN_FIELDS = {"key": str, "plan": (dict, list, str, int, type(None))}
_kept = OrderedDict()


@functools.lru_cache(maxsize=1)
def runtime_digest():
    """:func:`avta.files.sources_digest` of :data:`RUNTIME_PACKAGES` (once per process)."""
    return sources_digest(package_source_files(RUNTIME_PACKAGES))


def cache_folder():
    """Where the entries live: ``programs/`` in :func:`avta.files.cache_root`."""
    return cache_root() / "programs"


def enabled():
    """Whether entries are read from and written to disk (``AVTA_PROGRAM_CACHE`` is not 0)."""
    return os.environ.get(SWITCH, "1") != "0"


def program_key(builder, cfg, args):
    """The key (hex) of the program of ``builder`` (its qualified name) on ``cfg`` for ``args``
    (a dict of its arguments without the DRAM addresses; values by their ``repr``, which for
    the runtime's frozen dataclasses and plain values names every field)."""
    # json.dumps(fields, sort_keys=True) of fields builder, config, args and sources, with the
    # configuration's part serialized once per configuration (a network asks for dozens of keys).
    text = (f'{{"args": {json.dumps({k: repr(v) for k, v in args.items()}, sort_keys=True)}, '
            f'"builder": {json.dumps(builder)}, "config": {_config_json(cfg)}, '
            f'"sources": {json.dumps(runtime_digest())}}}')
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=64)
def _config_json(cfg):
    """``cfg.to_dict()`` as :func:`program_key` serializes it (a configuration is frozen)."""
    return json.dumps(cfg.to_dict(), sort_keys=True)


def _dram_base_field(cfg):
    """``(offset, width)`` of ``dram_base`` in the LOAD/STORE format's low 64-bit word."""
    lay = layouts(cfg)
    (offset, width), = [(o, w) for name, o, w in lay.fields(lay.memory) if name == "dram_base"]
    if offset + width > 64:
        raise AssertionError("dram_base no longer lies in an instruction's low word")
    return offset, width


def _words(blob):
    return np.frombuffer(blob, dtype="<u8").reshape(-1, 2).copy()


def _shift(words, indices, deltas, cfg):
    """Add ``deltas`` to the ``dram_base`` of instructions ``indices`` of ``words`` in place;
    False when a result leaves the field (the entry is then not used)."""
    if not len(indices):
        return True
    offset, width = _dram_base_field(cfg)
    low = words[indices, 0]
    base = ((low >> np.uint64(offset)) & np.uint64((1 << width) - 1)).astype(np.int64)
    moved = base + deltas
    if moved.min() < 0 or moved.max() >= 1 << width:
        return False
    mask = np.uint64(((1 << width) - 1) << offset)
    words[indices, 0] = (low & ~mask) | (moved.astype(np.uint64) << np.uint64(offset))
    return True


class _Uops(Sequence):
    """The micro-ops of a :class:`CachedProgram`, decoded one by one when read (a run asks
    only how many there are)."""

    def __init__(self, codec_, blob, count):
        self._codec, self._blob, self._count = codec_, blob, count

    def __len__(self):
        return self._count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._count)))
        if not -self._count <= index < self._count:
            raise IndexError(f"micro-op {index} of {self._count}")
        step = self._codec.uop_bytes
        start = (index % self._count) * step
        return self._codec.decode_uop(self._blob[start:start + step])


class CachedProgram(Program):
    """A :class:`Program` as the cache holds it: the stream encoded (micro-op LOADs not
    linked), the micro-ops' words, and the step mix. Read back, ``insns`` is decoded on first
    use, each of ``uops`` when read, and ``ledger`` is ``None`` (the token ledger is the
    builder's, not the stream's); just built (``read_back`` False), it keeps the builder's."""

    #: Whether the program was read from the cache (False: built in this call).
    read_back = True

    def __init__(self, cfg, words, uop_blob, uop_count, uop_loads, mix):
        self.cfg = cfg
        self._words = words
        self._uop_blob = uop_blob
        self._uop_count = uop_count
        self.uop_loads = tuple(uop_loads)
        self._mix = mix
        self.ledger = None

    def __len__(self):
        return len(self._words)

    @functools.cached_property
    def insns(self):
        return tuple(codec(self.cfg).decode_program(self._words.tobytes()))

    @functools.cached_property
    def uops(self):
        return _Uops(codec(self.cfg), self._uop_blob, self._uop_count)

    def encode(self, uop_elem):
        words = self._words.copy()
        loads = np.asarray(self.uop_loads, dtype=np.int64)
        if not _shift(words, loads, np.full(len(loads), uop_elem, np.int64), self.cfg):
            raise ValueError(f"micro-ops at DRAM element {uop_elem} are out of the "
                             f"dram_base field's reach")
        return words.tobytes()

    def link(self, uop_elem):
        return codec(self.cfg).decode_program(self.encode(uop_elem))

    def uop_bytes(self):
        return self._uop_blob

    def step_mix(self):
        return json.loads(json.dumps(self._mix))


def _candidates(operands, mem):
    found = operands.get(mem, ())
    return (found,) if isinstance(found, str) else tuple(found)


def _relocations(program, operands, addresses):
    """``{operand: [instruction indices]}`` of the LOADs and STOREs that move data of each
    operand, or None when one of them addresses none. ``operands`` maps a memory type to the
    name of its operand, or to several names (an add's two inputs): an instruction then
    addresses the one whose element address is the largest at or below its ``dram_base`` (the
    operands' buffers do not overlap, and a program reads each only within its bounds)."""
    found = {}
    for index, insn in enumerate(program.insns):
        if not isinstance(insn, MemoryInsn) or not insn.x_size or \
                insn.memory_type == MemType.UOP:
            continue
        mem = MemType.OUT if insn.opcode == Opcode.STORE else insn.memory_type
        below = [(addresses[name], name) for name in _candidates(operands, mem)
                 if addresses.get(name) is not None and addresses[name] <= insn.dram_base]
        if not below:
            return None
        found.setdefault(max(below)[1], []).append(index)
    return found


def _aliases(operands, addresses):
    """The operands of one memory type that share an address, ``[[names], …]``: part of the
    key, since instructions of two operands at one address cannot be told apart."""
    groups = []
    for names in {_candidates(operands, mem) for mem in operands}:
        by_address = {}
        for name in names:
            if addresses.get(name) is not None:
                by_address.setdefault(addresses[name], []).append(name)
        groups += [sorted(same) for same in by_address.values() if len(same) > 1]
    return sorted(groups)


def _record(key, program, operands, addresses):
    """The JSON record of a freshly built ``program`` whose operands were at ``addresses``
    (their DRAM bases made relative), or None when it cannot be placed elsewhere."""
    relocations = _relocations(program, operands, addresses)
    if relocations is None:
        return None
    words = _words(codec(program.cfg).encode_program(program.insns))
    indices = [i for name in relocations for i in relocations[name]]
    deltas = [-addresses[name] for name in relocations for _ in relocations[name]]
    if not _shift(words, np.asarray(indices, np.int64), np.asarray(deltas, np.int64),
                  program.cfg):
        return None
    return {"key": key, "insns": base64.b64encode(words.tobytes()).decode(),
            "uops": base64.b64encode(program.uop_bytes()).decode(),
            "uop_count": len(program.uops), "uop_loads": list(program.uop_loads),
            "relocations": relocations, "mix": program.step_mix()}


def _program(cfg, record, addresses):
    """The :class:`CachedProgram` of ``record`` with its operands at ``addresses``; None when the
    record does not hold together (it is then built again)."""
    try:
        words = _words(base64.b64decode(record["insns"], validate=True))
        uops = base64.b64decode(record["uops"], validate=True)
    except ValueError:
        return None
    relocations = record["relocations"]
    if set(relocations) - set(addresses) or \
            len(uops) != record["uop_count"] * codec(cfg).uop_bytes:
        return None
    try:
        indices = np.asarray([i for name in sorted(relocations) for i in relocations[name]],
                             np.int64)
        deltas = np.asarray([addresses[name] for name in sorted(relocations)
                             for _ in relocations[name]], np.int64)
        uop_loads = np.asarray(record["uop_loads"], np.int64)
    except (TypeError, ValueError):
        return None
    for found in (indices, uop_loads):
        if len(found) and (found.min() < 0 or found.max() >= len(words)):
            return None
    if not _shift(words, indices, deltas, cfg):
        return None
    return CachedProgram(cfg, words, uops, record["uop_count"], record["uop_loads"],
                         record["mix"])


def cached_plan(planner, cfg, args, plan, encode, decode):
    """``plan()``'s result, or the same result read from the cache: for a planner whose result
    is a pure function of ``cfg`` and ``args`` (the key, :func:`program_key` with the name
    ``planner``) but that a builder does not call itself (the executor asks an add's plan
    first). ``encode`` makes a JSON value of a result, ``decode`` the result back (raising
    ``TypeError`` or ``ValueError`` for one it does not recognize)."""
    key = program_key(planner, cfg, args)
    path = cache_folder() / f"{key}.json"
    record = _kept.get(key)
    if record is None and enabled():
        record = read_record(path, key, _PLAN_FIELDS)
    if record is not None:
        try:
            result = decode(record["plan"])
        except (TypeError, ValueError, KeyError):
            result = None
        if result is not None:
            _remember(key, record)
            return result
    result = plan()
    record = {"key": key, "plan": encode(result)}
    _remember(key, record)
    if enabled():
        try:
            write_atomic(path, json.dumps(record, separators=(",", ":")))
        except OSError:
            pass
    return result


def _remember(key, record):
    _kept[key] = record
    _kept.move_to_end(key)
    while len(_kept) > KEPT:
        _kept.popitem(last=False)


def cached_program(builder, build, cfg, args, operands, addresses):
    """``build()``'s :class:`Program`, or the same program read from the cache and placed at
    ``addresses``. ``builder`` names the builder and ``args`` are its other arguments (the key,
    :func:`program_key`); ``operands`` maps a memory type to an operand's name and
    ``addresses`` an operand's name to its element address (``None``: the call has none);
    several operands of one memory type are told apart by their addresses
    (:func:`_relocations`)."""
    present = sorted(name for name, address in addresses.items() if address is not None)
    key = program_key(builder, cfg, args | {"operands": present,
                                            "aliases": _aliases(operands, addresses)})
    path = cache_folder() / f"{key}.json"
    record = _kept.get(key)
    if record is None and enabled():
        record = read_record(path, key, _FIELDS)
    if record is not None:
        program = _program(cfg, record, addresses)
        if program is not None:
            _remember(key, record)
            return program
    program = build()
    record = _record(key, program, operands, addresses)
    if record is None:
        return program
    _remember(key, record)
    if enabled():
        try:
            write_atomic(path, json.dumps(record, separators=(",", ":")))
        except OSError:
            pass                # a cache that cannot be written only costs the next run
    # The stream was just encoded for the record: the run reuses it instead of encoding the
    # instructions again, and keeps what the builder made (instructions, micro-ops, ledger).
    placed = _program(cfg, record, addresses)
    placed.read_back = False
    placed.__dict__.update(insns=program.insns, uops=program.uops)
    placed.ledger = program.ledger
    return placed


def clear_memory():
    """Forget what this process remembers of the programs it built: the entries kept in memory
    and the conv2d plans (benchmarks that time a fresh command, tests of a cold start)."""
    from .ops.conv_plan import _plan
    _kept.clear()
    _plan.cache_clear()

