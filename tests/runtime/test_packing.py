"""Blocked layouts: one DRAM element per scratchpad row, in the row order of docs/isa.md §3."""

import numpy as np

from avta.runtime.packing import pack_diagonal, pack_nchw, pack_oihw, pad_channels, unpack_nchw


def test_nchw_element_is_a_row():
    x = np.arange(2 * 6 * 3 * 4).reshape(2, 6, 3, 4)
    p = pack_nchw(x, 2, 3)
    assert p.shape == (1, 2, 3, 4, 2, 3)
    # Element (nb, cb, h, w) holds x[nb·2 + b, cb·3 + k, h, w] at [b][k].
    assert p[0, 1, 2, 3, 1, 2] == x[1, 5, 2, 3]
    np.testing.assert_array_equal(unpack_nchw(p), x)


def test_oihw_rows_are_output_major():
    w = np.arange(4 * 6 * 3 * 3).reshape(4, 6, 3, 3)
    p = pack_oihw(w, 2, 3)
    assert p.shape == (2, 2, 3, 3, 2, 3)
    assert p[1, 0, 2, 1, 1, 2] == w[3, 2, 2, 1]      # [o][k] = w[ob·2 + o, ib·3 + k]


def test_pad_channels_appends_zeros():
    x = np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2) + 1
    p = pad_channels(x, 4)
    assert p.shape == (2, 4, 2, 2)
    np.testing.assert_array_equal(p[:, :3], x)
    assert not p[:, 3].any()
    assert pad_channels(x, 3) is x                    # already a multiple: unchanged
    assert pad_channels(x, 4, axis=0).shape == (4, 3, 2, 2)


def test_diagonal_is_the_dense_kernels_diagonal_blocks():
    """A depthwise kernel packed for the GEMM core is the diagonal of the packed dense kernel
    that holds w[c, 0] at [c, c] (every block off the diagonal is zero and never stored)."""
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (8, 1, 3, 3), dtype=np.int8)
    dense = np.zeros((8, 8, 3, 3), np.int8)
    dense[np.arange(8), np.arange(8)] = w[:, 0]
    blocks = pack_oihw(dense, 4, 4)
    p = pack_diagonal(w, 4)
    assert p.shape == (2, 3, 3, 4, 4)
    for j in range(2):
        np.testing.assert_array_equal(p[j], blocks[j, j])
        assert not blocks[j, 1 - j].any()


def test_diagonal_refuses_other_shapes():
    import pytest
    with pytest.raises(ValueError, match=r"\[C, 1, KH, KW\]"):
        pack_diagonal(np.zeros((8, 2, 3, 3), np.int8), 4)
    with pytest.raises(ValueError, match="multiple of 4"):
        pack_diagonal(np.zeros((6, 1, 3, 3), np.int8), 4)
