"""The instruction stream of one run decoded at once (docs/isa.md §2, §3.5).

A ResNet-18 layer's stream is a few hundred to a few thousand 128-bit words, and most of them
repeat, or differ only in where their data lies. :class:`Stream` reads the words as numpy arrays
and pulls the fields out of all of them at once, at the positions of the layouts
(:mod:`avta.isa.layout`, the ones the codec and the RTL read). What the machine knows of an
instruction before running it — its legality (:func:`avta.isa.legality.check`) and its
:class:`~.statics.Static` — is worked out once per distinct *key*: the word with a LOAD's or
STORE's addresses (:data:`ADDRESS_FIELDS`) cleared, because where data lies decides no rule of
decode and no figure of the cycle model (tests/sim/fsim/test_fsim_stream.py holds both
independent of them); the checks of the addresses are the run's (errors 9 and 10). The full
instruction objects are decoded only when something asks for them (the Python scheduler, an
error message), once per distinct word.
"""

import functools

import numpy as np

from avta.isa import formats
from avta.isa.encoding import INSN_BYTES
from avta.isa.enums import Opcode
from avta.isa.layout import layouts
from avta.isa.legality import check

from .statics import DECODE_CACHE_LIMIT, static_of

__all__ = ["Stream", "ADDRESS_FIELDS", "fields_of", "unique_rows", "cache_put", "fact_of"]

#: The fields of a LOAD or STORE that say where its data lies, in DRAM and in the scratchpad:
#: left out of the key by which decode's facts are cached.
ADDRESS_FIELDS = ("dram_base", "sram_base")

#: An instruction is stored as words of the packing unit (docs/isa.md §2); a field never crosses
#: one (:func:`avta.isa.formats.place`), so each is a shift and a mask of one word.
_WORD = np.dtype(f"<u{formats.INSN_UNIT // 8}")
_WORDS = INSN_BYTES // _WORD.itemsize


class _Fields:
    """Where each field of each format lies in the words: ``{format: {name: (word, shift,
    mask)}}`` with formats ``head``, ``memory``, ``gemm`` and ``alu`` (:class:`IsaLayouts`)."""

    def __init__(self, cfg):
        lay = layouts(cfg)
        self.formats = {}
        for fmt in ("head", "memory", "gemm", "alu"):
            placed = {}
            for name, offset, width in lay.fields(getattr(lay, fmt)):
                word, shift = divmod(offset, formats.INSN_UNIT)
                placed[name] = (word, _WORD.type(shift), _WORD.type((1 << width) - 1))
            self.formats[fmt] = placed
        # Every bit but the memory format's addresses.
        keep = np.full(_WORDS, np.iinfo(_WORD).max, _WORD)
        for name in ADDRESS_FIELDS:
            word, shift, mask = self.formats["memory"][name]
            keep[word] &= ~(mask << shift)
        self.address_clear = keep


@functools.lru_cache(maxsize=None)
def fields_of(cfg):
    """The :class:`_Fields` of ``cfg`` (cached: a config is frozen and hashable)."""
    return _Fields(cfg)


def unique_rows(rows):
    """``(first, inverse)`` of the distinct rows of 2-D array ``rows``: the index of each
    distinct row's first occurrence (in the rows' sort order), and each row's index among
    them (numpy's ``unique(axis=0)`` sorts them as bytes, four times faster)."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.ascontiguousarray(rows)
    as_one = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1])))
    _, first, inverse = np.unique(as_one.ravel(), return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


class Stream:
    """The instructions of ``blob`` (whole instructions' bytes) decoded on ``sim`` (an
    :class:`~.machine.Fsim`, whose caches keep decode's facts across runs).

    ``statics`` lists each instruction's :class:`~.statics.Static` (None for an illegal one);
    ``distinct`` the statics of the distinct keys and ``inverse`` each instruction's index
    among them (for arrays over the stream, :mod:`.compiled`)."""

    def __init__(self, sim, blob):
        self._sim = sim
        self._fields = fields_of(sim.cfg)
        self.words = np.frombuffer(blob, _WORD).reshape(-1, _WORDS)
        self.opcode = self.column("head", "opcode")
        keys = self.words.copy()
        moves = self.opcode <= Opcode.STORE
        keys[moves] &= self._fields.address_clear
        first, self.inverse = unique_rows(keys)
        keys = keys[first]
        facts = [sim._fact(key.tobytes()) for key in keys]
        self._key_insns = [insn for insn, _, _ in facts]
        self.violations = [violation for _, violation, _ in facts]
        self.distinct = [static for _, _, static in facts]
        self._statics = None
        self._insns = None

    @property
    def statics(self):
        """Each instruction's :class:`~.statics.Static` (None for an illegal one), in stream
        order; made when first asked for (the compiled runs read ``distinct`` and ``inverse``)."""
        if self._statics is None:
            self._statics = [self.distinct[k] for k in self.inverse.tolist()]
        return self._statics

    def __len__(self):
        return len(self.words)

    def column(self, fmt, name, where=None):
        """Field ``name`` of format ``fmt`` of every instruction (or those of index array
        ``where``) as int64, whatever format each is."""
        word, shift, mask = self._fields.formats[fmt][name]
        words = self.words[:, word] if where is None else self.words[where, word]
        return ((words >> shift) & mask).astype(np.int64)

    def first_violation(self):
        """``(index, Violation)`` of the first illegal instruction, or None."""
        illegal = [k for k, v in enumerate(self.violations) if v is not None]
        if not illegal:
            return None
        index = int(np.flatnonzero(np.isin(self.inverse, illegal))[0])
        return index, self.violations[self.inverse[index]]

    def word_bytes(self, index):
        """The bytes of instruction ``index``."""
        return self.words[index].tobytes()

    def insn(self, index):
        """Instruction ``index`` decoded (an :mod:`avta.isa.insn` object)."""
        if self._insns is not None:
            return self._insns[index]
        if self.opcode[index] > Opcode.STORE:
            # Its key is its word: no addresses were left out.
            return self._key_insns[self.inverse[index]]
        return self._sim._instruction(self.word_bytes(index))

    @property
    def insns(self):
        """Every instruction decoded, in stream order (each distinct word once)."""
        if self._insns is None:
            first, inverse = unique_rows(self.words)
            decoded = [self._sim._instruction(word.tobytes()) for word in self.words[first]]
            self._insns = [decoded[k] for k in inverse.tolist()]
        return self._insns


def cache_put(cache, key, value):
    """``cache[key] = value``, emptying ``cache`` first when it holds
    :data:`~.statics.DECODE_CACHE_LIMIT` entries (a random program must not grow it without
    bound)."""
    if len(cache) >= DECODE_CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


def fact_of(cfg, codec, key):
    """``(instruction, Violation or None, Static or None)`` of key ``key`` (bytes): the key
    decoded (a LOAD or STORE without its addresses), its legality and its Static."""
    insn = codec.decode(key)
    violation = check(insn, cfg)
    return insn, violation, None if violation is not None else static_of(cfg, insn)
