"""The five scratchpads of docs/isa.md §3, as raw bytes with typed views.

Every scratchpad is one ``(depth, row_bytes)`` uint8 array: a row is a byte copy of a DRAM
element (docs/isa.md §1), so LOAD and STORE move bytes, traces print bytes, and the arithmetic uses
typed views of the same memory (INP ``[b][k]`` int8, WGT ``[o][k]`` int8, ACC ``[b][o]`` int32
little-endian, OUT ``[b][o]`` int8, UOP one little-endian word per row).
"""

import numpy as np

from avta.isa.memories import SCRATCHPADS, scratchpads

__all__ = ["Scratchpads", "MEMORIES"]

#: Scratchpad names, as :meth:`Scratchpads.view` and the trace events spell them.
MEMORIES = SCRATCHPADS
#: Values :meth:`Scratchpads.memo` keeps at most (a program has a few dozen kernels).
MEMO_LIMIT = 1024


class Scratchpads:
    """Zeroed scratchpads of one configuration; their contents persist until the object dies."""

    def __init__(self, cfg):
        self._cfg = cfg
        self._pads = scratchpads(cfg)
        self._raw = {name: np.zeros((pad.depth, pad.row_bytes), dtype=np.uint8)
                     for name, pad in self._pads.items()}
        # Typed views of the same bytes, shaped by each row layout (avta.isa.memories).
        self.uop, self.inp, self.wgt, self.acc, self.out = (
            pad.row.view(self._raw[name]) for name, pad in self._pads.items())
        self._as_float = {}
        self._memos = {}
        self._memo_keys = {name: set() for name in self._pads}

    def as_float(self, name):
        """INP (b, k) or WGT (o, k) as float32, for exact BLAS products (GEMM).

        Made once and kept true by :meth:`write_rows`, which converts only the rows a LOAD
        writes: a convolution's GEMMs read these between hundreds of LOADs of a few rows each,
        and converting the whole scratchpad after each (a WGT scratchpad is 2^18 lanes at
        ``default``) was most of a layer's run.
        """
        cached = self._as_float.get(name)
        if cached is None:
            if name not in ("inp", "wgt"):
                raise KeyError(f"only inp and wgt have a float32 copy, not {name!r}")
            cached = self._float_rows(name, slice(None))
            self._as_float[name] = cached
        return cached

    def _float_rows(self, name, rows):
        """Rows ``rows`` of INP or WGT as float32, in their own lane order (a transposed copy
        would cost each WGT LOAD twice as much as this straight one)."""
        return getattr(self, name)[rows].astype(np.float32)

    def uop_fields(self, codec):
        """Every micro-op's fields decoded (``codec.decode_uop_array`` of the whole UOP
        scratchpad): ``(dst, src, wgt)`` int64 arrays. Cached until the next write to it (only
        LOADs write micro-ops, and many GEMM and ALU instructions run between them)."""
        return self.memo(("uop fields",), ("uop",), lambda: codec.decode_uop_array(self.uop))

    def memo(self, key, depends, compute):
        """``compute()``, made once and kept under ``key`` until a write to one of the
        scratchpads named in ``depends``: what an instruction derives from the micro-ops (GEMM's
        matrix form, an ALU kernel's rows) or the weights, which many instructions between two
        LOADs share. At most :data:`MEMO_LIMIT` are kept (all dropped when it is reached)."""
        if key in self._memos:
            return self._memos[key]
        value = compute()
        if len(self._memos) >= MEMO_LIMIT:
            self._memos.clear()
            for keys in self._memo_keys.values():
                keys.clear()
        self._memos[key] = value
        for name in depends:
            self._memo_keys[name].add(key)
        return value

    def _forget(self, name):
        """Drop the memos that depend on scratchpad ``name`` (it was written)."""
        keys = self._memo_keys[name]
        if keys:
            for key in keys:
                self._memos.pop(key, None)
            keys.clear()

    def written_in_place(self):
        """Every scratchpad may have been written through :meth:`raw` (the compiled data
        interpreter, :mod:`.compiled_exact`, writes the arrays themselves): drop every memo and
        the float copies, which are made again when next asked for."""
        self._memos.clear()
        for keys in self._memo_keys.values():
            keys.clear()
        self._as_float.clear()

    def raw(self, name):
        """The ``(depth, row_bytes)`` uint8 array of scratchpad ``name``. Write it only to fill
        fresh scratchpads: :meth:`write_rows` keeps the caches (:meth:`as_float`,
        :meth:`uop_fields`) true, a write through this array does not."""
        return self._raw[name]

    def depth(self, name):
        return self._raw[name].shape[0]

    def view(self, name):
        """A read-only typed view of scratchpad ``name`` for tests and tools.

        ``uop``: (depth,) unsigned words; ``inp``: (depth, batch, block_in) int8; ``wgt``:
        (depth, block_out, block_in) int8; ``acc``: (depth, batch, block_out) int32; ``out``:
        (depth, batch, block_out) int8.
        """
        if name not in MEMORIES:
            raise KeyError(f"no scratchpad {name!r}; the scratchpads are {', '.join(MEMORIES)}")
        view = getattr(self, name).view()
        view.flags.writeable = False
        return view

    def write_rows(self, name, rows, data):
        """Rows ``rows`` of scratchpad ``name`` = ``data`` ((n, row_bytes) uint8); an ACC write
        also writes OUT (docs/isa.md §3, OUT mirrors ACC). ``rows`` must not repeat."""
        self._raw[name][rows] = data
        self._forget(name)
        if name in self._as_float:
            self._as_float[name][rows] = self._float_rows(name, rows)
        if name == "acc":
            self.out[rows] = self.acc[rows].astype(np.int8, casting="unsafe")

    def write_acc(self, rows, values):
        """ACC[rows] = values (int32, shape (n, batch, block_out)), and OUT mirrors it (docs/isa.md §3).

        ``rows`` must not repeat (the callers split hazards out first), so the fancy assignment
        is deterministic.
        """
        self.acc[rows] = values
        self._forget("acc")
        # OUT keeps the low 8 bits of each lane: a little-endian int32's first byte.
        self.out[rows] = values.astype(np.int8, casting="unsafe")
