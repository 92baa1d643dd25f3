"""Operators on the runtime: conv2d, matrix multiply and dense, depthwise conv2d, max, average
and global average pooling, the residual add.

Each builds one program with :class:`~avta.runtime.stream.StreamBuilder`, runs it on a
:class:`~avta.runtime.device.Device` and is checked bit for bit against the numpy references of
:mod:`avta.runtime.ops.reference`.
"""
