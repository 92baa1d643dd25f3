"""Encode and decode instructions and micro-ops with the layouts of :mod:`avta.isa.layout`.

An instruction is 128 bits, stored as two little-endian 64-bit words, bits [63:0] first; a
micro-op is ``cfg.uop_bits`` bits, little-endian (docs/isa.md §2).
"""

import functools

import numpy as np

from avta.errors import UserError

from . import formats
from .enums import Opcode
from .insn import AluInsn, GemmInsn, IllegalInsn, MemoryInsn, Uop, FORMAT_CLASSES
from .layout import layouts

__all__ = ["Codec", "EncodeError", "codec", "INSN_BYTES"]

INSN_BYTES = formats.INSN_BITS // 8


class EncodeError(UserError, ValueError):
    """A field value that does not fit its field on this configuration."""


class Codec:
    """Encoder and decoder for one configuration. Get one with :func:`codec`."""

    def __init__(self, cfg):
        self._cfg = cfg
        lay = layouts(cfg)
        self._fields = {
            MemoryInsn: lay.fields(lay.memory),
            GemmInsn: lay.fields(lay.gemm),
            AluInsn: lay.fields(lay.alu),
            Uop: lay.fields(lay.uop),
        }
        self._opcode_mask = (1 << formats.OPCODE_BITS) - 1
        self.uop_bytes = cfg.uop_bits // 8
        # Classes whose fields are exactly their format's and that check nothing on creation:
        # decoded without their (frozen, so slow) __init__; fsim decodes every distinct
        # instruction of a stream.
        self._plain = {cls for cls, placed in self._fields.items()
                       if {name for name, _, _ in placed} == set(cls.__dataclass_fields__)
                       and not hasattr(cls, "__post_init__")}

    @property
    def cfg(self):
        return self._cfg

    def field_widths(self, cls):
        """``{name: width}`` of the format that ``cls`` encodes."""
        return {name: width for name, _, width in self._fields[cls]}

    # -- instructions ---------------------------------------------------------------------------

    def encode(self, insn):
        """The 128-bit integer of ``insn``; raises :class:`EncodeError` if a value does not fit."""
        if isinstance(insn, IllegalInsn):
            return insn.raw
        cls = type(insn)
        if cls not in self._fields or cls is Uop:
            raise TypeError(f"cannot encode {insn!r} as an instruction")
        if FORMAT_CLASSES.get(insn.opcode) is not cls:
            raise EncodeError(f"opcode {insn.opcode} is not a {cls.__name__} opcode")
        return self._pack(cls, insn, self._cfg.name)

    def encode_bytes(self, insn):
        return self.encode(insn).to_bytes(INSN_BYTES, "little")

    def words(self, insn):
        """``(word0, word1)``: the two 64-bit words as stored in DRAM."""
        value = self.encode(insn)
        return value & ((1 << 64) - 1), value >> 64

    def decode(self, value):
        """Decode a 128-bit integer or 16 bytes. Opcodes 5..7 give an :class:`IllegalInsn`."""
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = int.from_bytes(bytes(value), "little")
        opcode = value & self._opcode_mask
        cls = FORMAT_CLASSES.get(opcode)
        if cls is None:
            return IllegalInsn(opcode=opcode, raw=value)
        return self._unpack(cls, value)

    def encode_program(self, insns):
        return b"".join(self.encode_bytes(i) for i in insns)

    def decode_program(self, blob):
        if len(blob) % INSN_BYTES:
            raise ValueError(f"an instruction stream is a multiple of {INSN_BYTES} bytes; "
                             f"got {len(blob)}")
        return [self.decode(blob[i:i + INSN_BYTES]) for i in range(0, len(blob), INSN_BYTES)]

    # -- micro-ops ------------------------------------------------------------------------------

    def encode_uop(self, uop):
        return self._pack(Uop, uop, self._cfg.name)

    def decode_uop(self, value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = int.from_bytes(bytes(value), "little")
        return self._unpack(Uop, value)

    def encode_uops(self, uops):
        return b"".join(self.encode_uop(u).to_bytes(self.uop_bytes, "little") for u in uops)

    def decode_uop_array(self, words):
        """Vectorized decode of an array of micro-op words: ``(dst, src, wgt)`` int64 arrays."""
        words = np.asarray(words, dtype=np.uint64)
        out = []
        for _, offset, width in self._fields[Uop]:
            out.append(((words >> np.uint64(offset)) & np.uint64((1 << width) - 1))
                       .astype(np.int64))
        return tuple(out)

    # -- bit packing ----------------------------------------------------------------------------

    def _pack(self, cls, obj, where):
        value = 0
        for name, offset, width in self._fields[cls]:
            field_value = getattr(obj, name)
            if name == "imm":
                if not -(1 << (width - 1)) <= field_value < (1 << (width - 1)):
                    raise EncodeError(
                        f"{cls.__name__}.imm = {field_value} does not fit a signed {width}-bit "
                        f"field ({-(1 << (width - 1))}..{(1 << (width - 1)) - 1})")
                field_value &= (1 << width) - 1
            elif not 0 <= field_value < (1 << width):
                raise EncodeError(
                    f"{cls.__name__}.{name} = {field_value} does not fit its {width}-bit field "
                    f"(0..{(1 << width) - 1}) on configuration {where!r}")
            value |= int(field_value) << offset
        return value

    def _unpack(self, cls, value):
        values = {}
        for name, offset, width in self._fields[cls]:
            field_value = (value >> offset) & ((1 << width) - 1)
            if name == "imm" and field_value >> (width - 1):
                field_value -= 1 << width
            values[name] = field_value
        if cls in self._plain:
            made = object.__new__(cls)
            made.__dict__.update(values)
            return made
        return cls(**values)


@functools.lru_cache(maxsize=None)
def codec(cfg):
    """The :class:`Codec` of ``cfg`` (cached)."""
    return Codec(cfg)


def finish():
    """The FINISH instruction: opcode 3, every other field 0."""
    return GemmInsn(opcode=Opcode.FINISH)
