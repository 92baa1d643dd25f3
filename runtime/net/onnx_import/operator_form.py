"""The operator form: the quantized operators of ``quantize_static(...,
quant_format=QuantFormat.QOperator)``, each carrying its inputs' and output's scales and zero
points (docs/onnx.md). QGemm, QLinearAdd and the QLinear pools are in the ``com.microsoft``
domain; MaxPool, Flatten and the other shape-only ops of int8 are handled with the QDQ form's
(:mod:`.qdq`).

:data:`HANDLERS` maps each op type to its handler ``(importer, node)``; each reads its scales
and zero points and has :mod:`.lowering` emit the network node.
"""

import numpy as np

from .arithmetic import UnsupportedNode
from .reading import QT


class OperatorForm:
    """The importer's handlers of the operator form (a mixin of :class:`~.walk.Importer`)."""

    def _qt(self, name, scale, zero):
        """The imported int8 tensor ``name`` with the scale and zero point an operator reads it
        with (an int8 graph input takes them from its first reader)."""
        if name not in self.q:
            raise UnsupportedNode(f"its input {name!r} is not an imported int8 tensor")
        qt = self.q[name]
        scale, zero = float(self._scalar(scale, "scale")), self._zero(zero, name)
        if qt.scale is None:
            qt.scale, qt.zero = scale, zero
        return QT(qt.tensor, qt.shape, scale, zero, qt.gain)

    def _qlinear_conv(self, node):
        i = list(node.input) + [""] * 9
        x = self._qt(i[0], i[1], i[2])
        ints, sw = self._const(i[3], "weights"), np.asarray(self._const(i[4], "scale"))
        zw = np.asarray(self._const(i[5], "zero point"))
        sy, zy = float(self._scalar(i[6], "scale")), self._out_zero(node, i[7])
        bias = None if not i[8] else np.asarray(self._const(i[8], "bias"), np.int64)
        self.q[node.output[0]] = self._conv_or_dense(node, x, ints, sw, zw, bias, sy, zy, None)

    def _qlinear_matmul(self, node):
        i = list(node.input)
        x = self._qt(i[0], i[1], i[2])
        ints, sw = self._const(i[3], "weights"), np.asarray(self._const(i[4], "scale"))
        zw = np.asarray(self._const(i[5], "zero point"))
        sy, zy = float(self._scalar(i[6], "scale")), self._out_zero(node, i[7])
        self.q[node.output[0]] = self._conv_or_dense(node, x, ints, sw, zw, None, sy, zy, None)

    def _qgemm(self, node):
        """com.microsoft QGemm (what quantize_static's operator form makes of a Gemm): A, its
        scale and zero point, B, its scale and zero point, the int32 bias C, then y's scale and
        zero point (without them the output is float, which maps onto no node)."""
        i = list(node.input) + [""] * 9
        if not i[7]:
            raise UnsupportedNode("a QGemm without y_scale has a float output")
        x = self._qt(i[0], i[1], i[2])
        ints, sw = self._const(i[3], "weights"), np.asarray(self._const(i[4], "scale"))
        zw = np.asarray(self._const(i[5], "zero point"))
        bias = None if not i[6] else np.asarray(self._const(i[6], "bias"), np.int64)
        sy, zy = float(self._scalar(i[7], "scale")), self._out_zero(node, i[8])
        self.q[node.output[0]] = self._conv_or_dense(node, x, ints, sw, zw, bias, sy, zy, None)

    def _qlinear_add(self, node):
        i = list(node.input) + [""] * 8
        a, b = self._qt(i[0], i[1], i[2]), self._qt(i[3], i[4], i[5])
        sy, zy = float(self._scalar(i[6], "scale")), self._out_zero(node, i[7])
        self.q[node.output[0]] = self._add(node, a, b, sy, zy, None)

    def _qlinear_pool(self, node):
        """QLinearAveragePool and QLinearGlobalAveragePool."""
        i = list(node.input) + [""] * 5
        x = self._qt(i[0], i[1], i[2])
        sy, zy = float(self._scalar(i[3], "scale")), self._out_zero(node, i[4])
        self.q[node.output[0]] = self._pool(node, x, sy, zy, None)


#: op type → handler of the operator form.
HANDLERS = {
    "QLinearConv": OperatorForm._qlinear_conv,
    "QLinearMatMul": OperatorForm._qlinear_matmul,
    "QGemm": OperatorForm._qgemm,
    "QLinearAdd": OperatorForm._qlinear_add,
    "QLinearAveragePool": OperatorForm._qlinear_pool,
    "QLinearGlobalAveragePool": OperatorForm._qlinear_pool,
}
