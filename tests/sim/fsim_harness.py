"""Shared test harness for fsim: build a DRAM image by hand and run it.

The image is a bytearray; instructions go at ``insn_addr``, everything else where the test puts
it. Instruction helpers take element addresses as docs/isa.md §3 counts them; the ``*_at`` helpers
turn a byte address into an element number.
"""

import numpy as np

from avta.isa.encoding import codec, finish
from avta.isa.enums import MemType, Opcode
from avta.isa.insn import AluInsn, GemmInsn, MemoryInsn
from avta.sim.fsim import Fsim

__all__ = ["Image", "load", "store", "gemm", "alu", "finish", "sync", "random_tensor",
           "sram_rows", "run_alone"]


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

    def run(self, sim=None, *, count=None, bases=None, **options):
        """Encode the program at ``insn_addr`` and run it on ``sim`` (or a new Fsim)."""
        self.put(self.insn_addr, self.codec.encode_program(self.insns))
        sim = sim or Fsim(self.cfg, **options)
        result = sim.run(self.data, self.insn_addr,
                         len(self.insns) if count is None else count, bases=bases)
        return result, sim


def random_tensor(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def sram_rows(sim, name):
    """Scratchpad ``name`` as ``(depth, row_bytes)`` uint8: each row's bytes in DRAM order."""
    view = sim.sram(name)
    return view.reshape(view.shape[0], -1).view(np.uint8)


def run_alone(image, insn, **options):
    """Run one LOAD/STORE/compute instruction in a well-formed program: tokens to and from the
    compute stage so FINISH is ordered after it (docs/isa.md §3, well-formed programs (c))."""
    stage_flags = {Opcode.STORE: ("push_prev", "pop_next")}
    if insn.opcode == Opcode.LOAD and insn.memory_type in (MemType.INP, MemType.WGT):
        image.add(insn.replace(push_next=1), sync("pop_prev"))
    elif insn.opcode in stage_flags:
        push, pop = stage_flags[insn.opcode]
        image.add(sync("push_next"), insn.replace(pop_prev=1, **{push: 1}), sync(pop))
    else:
        image.add(insn)
    image.add(finish())
    return image.run(**options)
