"""The device API: host code talks to a :class:`Device`, which drives one
:class:`~avta.runtime.backend.Backend`.

Everything a host does above the backend (allocation, linking a program, checking results) lives
here, once for every backend, as Glasgow's host code runs unchanged on simulated and real
devices. The backends live beside their simulators (``avta.sim.fsim.backend``,
``avta.sim.tsim.backend``, ``avta.sim.cocotb.backend``, ``avta.sim.amaranth.backend``); the runtime
imports none of them.
"""

import contextlib

import numpy as np

from avta.isa.asm import format_insn
from avta.isa.encoding import INSN_BYTES
from avta.isa.enums import MemType
from avta.isa.memories import elem_bytes, memory

from .dram import Allocator, AllocError
from .packing import unpack_nchw

__all__ = ["Device", "Scratch", "DeviceError", "ConfigMismatch", "RunError"]

class DeviceError(RuntimeError):
    """Something the device cannot do as asked."""


class ConfigMismatch(DeviceError):
    """The device was built for another configuration than the runtime's."""


class RunError(DeviceError):
    """A run that ended in error, deadlock or timeout; ``result`` is its RunResult."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class Scratch:
    """Buffers that live as long as a ``with device.scratch()`` block (:meth:`Device.scratch`)."""

    def __init__(self, device):
        self._device = device
        self._buffers = []

    def alloc(self, nbytes, *, mem=None):
        """:meth:`Device.alloc`, freed with the scope."""
        buffer = self._device.alloc(nbytes, mem=mem)
        self._buffers.append(buffer)
        return buffer

    def upload(self, array, *, mem=None):
        """:meth:`Device.upload`, freed with the scope."""
        buffer = self._device.upload(array, mem=mem)
        self._buffers.append(buffer)
        return buffer

    def free(self):
        while self._buffers:
            self._device.free(self._buffers.pop())


class Device:
    """A VTA device of configuration ``cfg`` behind ``backend``.

    Raises :class:`ConfigMismatch` when the backend reports another CONFIG_ID: a program built
    for one configuration means something else on another (every field width differs).
    """

    def __init__(self, cfg, backend):
        if backend.config_id != cfg.config_id:
            raise ConfigMismatch(
                f"the {backend.name} device reports CONFIG_ID 0x{backend.config_id:08x}, but the "
                f"runtime is built for configuration {cfg.name!r} (CONFIG_ID "
                f"0x{cfg.config_id:08x}); use the configuration the device was generated from")
        self._cfg = cfg
        self._backend = backend
        self._alloc = Allocator(backend.dram_size)
        self.last_result = None
        self.last_program = None

    @property
    def cfg(self):
        return self._cfg

    @property
    def backend(self):
        return self._backend

    @property
    def allocator(self):
        return self._alloc

    # -- buffers --------------------------------------------------------------------------------

    def alloc(self, nbytes, *, mem=None):
        """A DRAM :class:`~avta.runtime.dram.Buffer` of ``nbytes``, aligned to the element of
        memory type ``mem`` (by default to every element size of the configuration)."""
        if mem is None:
            align = max(elem_bytes(self._cfg, m) for m in MemType)
        else:
            align = elem_bytes(self._cfg, mem)
        return self._alloc.alloc(nbytes, align=align)

    def free(self, buffer):
        self._alloc.free(buffer)

    @contextlib.contextmanager
    def scratch(self):
        """Buffers for one operator call: allocate and upload through the yielded
        :class:`Scratch`; every one is freed when the block ends, whether it raised or not.

        >>> with device.scratch() as s:                       # doctest: +SKIP
        ...     x_buf = s.upload(packed, mem=MemType.INP)
        ...     out = s.alloc(nbytes, mem=MemType.OUT)
        """
        scope = Scratch(self)
        try:
            yield scope
        finally:
            scope.free()

    def write(self, buffer, data, offset=0):
        """Copy ``data`` (bytes-like or any numpy array, as its raw bytes) into ``buffer``."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8) if isinstance(
            data, np.ndarray) else np.frombuffer(bytes(data), dtype=np.uint8)
        if offset < 0 or offset + raw.size > buffer.nbytes:
            raise AllocError(f"writing {raw.size} bytes at offset {offset} overruns the "
                             f"{buffer.nbytes}-byte buffer at 0x{buffer.addr:x}")
        self._backend.write(buffer.addr + offset, raw)

    def read(self, buffer, dtype=np.uint8, shape=None):
        """The buffer's bytes as a numpy array of ``dtype`` (and ``shape``)."""
        raw = self._backend.read(buffer.addr, buffer.nbytes)
        out = raw.view(dtype)
        return out if shape is None else out[:int(np.prod(shape))].reshape(shape)

    def upload(self, array, *, mem=None):
        """A new buffer holding ``array``'s bytes."""
        array = np.ascontiguousarray(array)
        buffer = self.alloc(max(array.nbytes, 1), mem=mem)
        self.write(buffer, array)
        return buffer

    def read_nchw(self, buffer, n, c, h, w):
        """The int8 feature map ``[n, c, h, w]`` that ``buffer`` holds in the packed OUT layout
        (:func:`~avta.runtime.packing.pack_nchw` with BATCH and BLOCK_OUT)."""
        row = memory(self._cfg, MemType.OUT).element     # [b][o] int8
        batch, block = row.shape
        blocks = self.read(buffer, row.dtype, (n // batch, c // block, h, w, batch, block))
        return unpack_nchw(blocks)

    # -- running --------------------------------------------------------------------------------

    def run(self, program, *, bases=None, check=True):
        """Run a :class:`~avta.runtime.program.Program`; its RunResult.

        The micro-ops and instructions go into fresh buffers that are freed afterwards. With
        ``check`` a run that does not end in ``ok`` raises :class:`RunError`.
        """
        if program.cfg.config_id != self._cfg.config_id:
            raise ConfigMismatch(f"the program was built for configuration "
                                 f"{program.cfg.name!r}, the device is {self._cfg.name!r}")
        temps = []
        try:
            uop_elem = 0
            if program.uops:
                uop_buf = self.alloc(len(program.uops) * self._cfg.uop_elem_bytes,
                                     mem=MemType.UOP)
                temps.append(uop_buf)
                self.write(uop_buf, program.uop_bytes())
                uop_elem = uop_buf.elem(self._cfg, MemType.UOP)
            stream = program.encode(uop_elem)
            insn_buf = self._alloc.alloc(len(stream), align=INSN_BYTES)
            temps.append(insn_buf)
            self.write(insn_buf, stream)
            result = self._backend.run(insn_buf.addr, len(program), bases=bases)
        finally:
            for buffer in temps:
                self._alloc.free(buffer)
        self.last_result = result
        self.last_program = program
        if check and not result.ok:
            where = ""
            if result.error_insn is not None and result.error_insn < len(program):
                where = f"; instruction {result.error_insn}: " \
                        f"{format_insn(program.insns[result.error_insn])}"
            raise RunError(f"{self._backend.name} run ended with status {result.status!r} "
                           f"(error code {result.error_code}){where}: {result.detail}", result)
        return result
