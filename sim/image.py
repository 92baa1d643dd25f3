"""Hand-built DRAM images: raw programs for ``avta exec``, for debugging, and for the tests.

The runtime's :class:`~avta.runtime.stream.StreamBuilder` builds well-formed programs from
operators; this is the level below it, for writing instructions one by one. An :class:`Image`
is a bytearray: data goes where you put it, the program at ``insn_addr`` (docs/isa.md §3).
The shorthands :func:`load`, :func:`store`, :func:`gemm`, :func:`alu`, :func:`sync` and
:func:`finish` build instructions with DRAM addresses in elements of their memory type, as
docs/isa.md §3 counts them; :func:`run_alone` wraps one instruction in the tokens that make it
a well-formed program.

>>> image = Image(cfg).add(load(MemType.UOP, dram=0x100, x=1), finish())  # doctest: +SKIP
>>> result, sim = image.run()                                               # doctest: +SKIP
>>> Path("img.bin").write_bytes(image.to_bytes())                           # doctest: +SKIP
"""

import numpy as np

from avta.isa.encoding import codec, finish
from avta.isa.enums import MemType, Opcode, Stage
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.sim.fsim import Fsim

__all__ = ["Image", "load", "store", "gemm", "alu", "finish", "sync", "run_alone"]


def load(memory_type, *, sram=0, dram=0, y=1, x=1, stride=None, pads=(0, 0, 0, 0), pad_value=0,
         **flags):
    """LOAD; ``pads`` is (y_pad_0, y_pad_1, x_pad_0, x_pad_1); stride defaults to x."""
    y0, y1, x0, x1 = pads
    return MemoryInsn(opcode=Opcode.LOAD, memory_type=memory_type, sram_base=sram,
                      dram_base=dram, y_size=y, x_size=x, x_stride=x if stride is None else stride,
                      y_pad_0=y0, y_pad_1=y1, x_pad_0=x0, x_pad_1=x1, pad_value=pad_value,
                      **flags)


def store(*, sram=0, dram=0, y=1, x=1, stride=None, **flags):
    return MemoryInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=sram,
                      dram_base=dram, y_size=y, x_size=x,
                      x_stride=x if stride is None else stride, **flags)


def gemm(uops=(0, 1), iters=(1, 1), dst=(0, 0), src=(0, 0), wgt=(0, 0), reset=0, **flags):
    """GEMM over micro-ops [uops[0], uops[1]) with (iter_out, iter_in) and (out, in) factors."""
    return GemmInsn(reset=reset, uop_bgn=uops[0], uop_end=uops[1], iter_out=iters[0],
                    iter_in=iters[1], dst_factor_out=dst[0], dst_factor_in=dst[1],
                    src_factor_out=src[0], src_factor_in=src[1], wgt_factor_out=wgt[0],
                    wgt_factor_in=wgt[1], **flags)


def alu(op, uops=(0, 1), iters=(1, 1), dst=(0, 0), src=(0, 0), imm=None, **flags):
    """ALU ``op`` (an AluOp); ``imm`` given means use_imm."""
    return AluInsn(alu_opcode=op, uop_bgn=uops[0], uop_end=uops[1], iter_out=iters[0],
                   iter_in=iters[1], dst_factor_out=dst[0], dst_factor_in=dst[1],
                   src_factor_out=src[0], src_factor_in=src[1], use_imm=int(imm is not None),
                   imm=0 if imm is None else imm, **flags)


def sync(flag):
    """A compute-stage instruction that only pops or pushes a token (a LOAD UOP of x_size 0)."""
    return MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, **{flag: 1})


class Image:
    """A DRAM image under construction: bytes at addresses, then the program at insn_addr."""

    def __init__(self, cfg, size=1 << 16, insn_addr=0):
        self.cfg = cfg
        self.codec = codec(cfg)
        self.data = bytearray(size)
        self.insn_addr = insn_addr
        self.insns = []

    def put(self, addr, value):
        """Write bytes (or a numpy array's bytes) at byte address ``addr``."""
        raw = value.tobytes() if isinstance(value, np.ndarray) else bytes(value)
        self.data[addr:addr + len(raw)] = raw

    def get(self, addr, count, dtype=np.uint8):
        """``count`` bytes from ``addr`` viewed as ``dtype``."""
        return np.frombuffer(bytes(self.data[addr:addr + count]), dtype=dtype)

    def put_uops(self, addr, uops):
        self.put(addr, self.codec.encode_uops(uops))

    def add(self, *insns):
        self.insns.extend(insns)
        return self

    def to_bytes(self):
        """The whole image with the program encoded at ``insn_addr`` (what ``avta exec
        --image`` loads at address 0)."""
        self.put(self.insn_addr, self.codec.encode_program(self.insns))
        return bytes(self.data)

    def run(self, sim=None, *, count=None, bases=None, **options):
        """Encode the program at ``insn_addr`` and run it on ``sim`` (anything with fsim's
        ``run(dram, insn_addr, insn_count, bases=)``: a :class:`~avta.sim.fsim.Fsim` made with
        ``options`` by default, or a :class:`~avta.sim.tsim.driver.Tsim`); ``(result, sim)``."""
        self.to_bytes()
        sim = sim or Fsim(self.cfg, **options)
        result = sim.run(self.data, self.insn_addr,
                         len(self.insns) if count is None else count, bases=bases)
        return result, sim


def run_alone(image, insn, **options):
    """Run one LOAD/STORE/compute instruction in a well-formed program: tokens to and from the
    compute stage so FINISH is ordered after it (docs/isa.md §3, well-formed programs (c))."""
    stage_flags = {Opcode.STORE: ("push_prev", "pop_next")}
    if insn.stage == Stage.LOAD:
        image.add(insn.replace(push_next=1), sync("pop_prev"))
    elif insn.opcode in stage_flags:
        push, pop = stage_flags[insn.opcode]
        image.add(sync("push_next"), insn.replace(pop_prev=1, **{push: 1}), sync(pop))
    else:
        image.add(insn)
    image.add(finish())
    return image.run(**options)
