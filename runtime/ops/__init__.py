"""Operators on the runtime: conv2d, matrix multiply and dense, max pooling, depthwise conv2d.

Each builds one program with :class:`~avta.runtime.stream.StreamBuilder`, runs it on a
:class:`~avta.runtime.device.Device` and is checked bit for bit against the numpy references of
:mod:`avta.runtime.ops.reference`.
"""
