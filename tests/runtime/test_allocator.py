"""The DRAM allocator: alignment, first fit, coalescing frees, and errors a person can act on."""

import pytest

from avta.isa.enums import MemType
from avta.isa.memories import elem_bytes
from avta.runtime.dram import AllocError, Allocator, Buffer


def test_alignment_and_first_fit():
    a = Allocator(4096, align=64)
    b1 = a.alloc(10)
    b2 = a.alloc(100, align=256)
    assert b1 == Buffer(0, 10)
    assert b2.addr == 256 and b2.nbytes == 100
    b3 = a.alloc(64)                 # fits in the gap left by the 256 alignment
    assert b3.addr == 64


def test_free_coalesces_neighbours():
    a = Allocator(1024, align=64)
    bufs = [a.alloc(256) for _ in range(4)]
    with pytest.raises(AllocError):
        a.alloc(1)
    a.free(bufs[1])
    a.free(bufs[3])
    a.free(bufs[2])                  # merges with both neighbours into one 768-byte block
    assert a.largest_free == 768
    assert a.alloc(768).addr == 256
    assert [b.addr for b in a.live()] == [0, 256]


def test_full_error_says_what_is_free():
    a = Allocator(1024, align=64)
    a.alloc(600)
    with pytest.raises(AllocError, match=r"cannot allocate 500 bytes.*largest free block is "
                                         r"424 bytes"):
        a.alloc(500)


@pytest.mark.parametrize("bad", [0, -5])
def test_empty_request_rejected(bad):
    with pytest.raises(AllocError, match="at least one byte"):
        Allocator(1024).alloc(bad)


def test_double_free_rejected():
    a = Allocator(1024)
    b = a.alloc(10)
    a.free(b)
    with pytest.raises(AllocError, match="double free"):
        a.free(b)


def test_buffer_elements(default_cfg):
    cfg = default_cfg
    buf = Buffer(cfg.wgt_elem_bytes * 3, cfg.wgt_elem_bytes * 2)
    assert buf.elem(cfg, MemType.WGT) == 3
    assert buf.elem(cfg, MemType.INP, 5) == 3 * cfg.wgt_elem_bytes // cfg.inp_elem_bytes + 5
    assert buf.elems(cfg, MemType.ACC) == 2 * cfg.wgt_elem_bytes // cfg.acc_elem_bytes
    with pytest.raises(AllocError, match="outside"):
        buf.elem(cfg, MemType.WGT, 2)
    with pytest.raises(AllocError, match="not aligned"):
        Buffer(16, 256).elem(cfg, MemType.WGT)


def test_element_sizes_follow_config(shipped_cfg):
    cfg = shipped_cfg
    assert elem_bytes(cfg, MemType.INP) == cfg.batch * cfg.block_in
    assert elem_bytes(cfg, MemType.WGT) == cfg.block_out * cfg.block_in
    assert elem_bytes(cfg, MemType.ACC) == 4 * cfg.batch * cfg.block_out
    assert elem_bytes(cfg, MemType.OUT) == elem_bytes(cfg, MemType.ACC_8BIT) == cfg.batch * \
        cfg.block_out
    assert elem_bytes(cfg, MemType.UOP) == cfg.uop_bits // 8
