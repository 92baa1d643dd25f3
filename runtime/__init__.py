"""Runtime: DRAM allocator, instruction and micro-op stream builder, device API, operators.

Layers, bottom up (docs/architecture.md, Runtime):

* :mod:`.dram` — byte buffers in device DRAM, aligned to element sizes;
* :mod:`.tokens` — dependency tokens as a happens-before order, and counter bounds;
* :mod:`.uop_kernel` — micro-op kernels (up to two loops) and the resident-kernel cache;
* :mod:`.stream` — :class:`StreamBuilder`, which only builds well-formed programs, and
  :mod:`.program` — the finished :class:`Program`;
* :mod:`.pipeline` — the virtual-thread (double-buffering) token protocol;
* :mod:`.device` — :class:`Device` over a backend (fsim now; tsim and cocotb later);
* :mod:`.wellformed` — an independent check of docs/isa.md §3 rules (a)-(e);
* :mod:`.ops` — conv2d, matmul/dense, max pooling, depthwise conv2d, element-wise ALU.
"""

from .backend import Backend, RunResult
from .device import ConfigMismatch, Device, RunError
from .dram import Allocator, Buffer
from .program import Program
from .stream import StreamBuilder, StreamError
from .uop_kernel import Loop, UopKernel
from .wellformed import check_wellformed

__all__ = ["Backend", "RunResult", "ConfigMismatch", "Device", "RunError", "Allocator",
           "Buffer", "Program", "StreamBuilder", "StreamError", "Loop", "UopKernel",
           "check_wellformed"]
