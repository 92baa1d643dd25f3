"""A layer on upstream VTA's C++ simulator, built from the checkout in ``$AVTA_VTA_SRC``
(apache/tvm-vta), against fsim: the same DRAM image afterwards, byte for byte. Skipped where no
checkout is given: the repository holds none of upstream's files."""

import os

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.enums import AluOp, MemType, Opcode
from avta.isa.encoding import codec, finish
from avta.isa.insn import AluInsn, MemoryInsn, Uop
from avta.sim.bench.upstream_fsim import compare_layer
from avta.sim.upstream import UpstreamError, build_upstream, run_upstream, upstream_alu_ops
from avta.sim.upstream.build import read_sources

VTA_SRC = os.environ.get("AVTA_VTA_SRC")
pytestmark = pytest.mark.skipif(
    not VTA_SRC, reason="set AVTA_VTA_SRC to a checkout of apache/tvm-vta to run fsim against "
                        "upstream's C++ simulator")

SMALL = {"name": "small", "h": 7, "w": 7, "cin": 32, "cout": 32, "k": 3, "pad": 1, "stride": 2}


@pytest.mark.parametrize("name", ["default", "tiny"])
def test_a_small_layer_leaves_the_same_dram(name):
    cfg = load_config(name)
    executable = build_upstream(VTA_SRC, cfg)
    alu_ops = upstream_alu_ops(read_sources(VTA_SRC).values())
    fig = compare_layer(cfg, executable, SMALL, alu_ops, repeats=2)
    assert fig["differences"] == []
    assert fig["identical"] and fig["reference"]
    assert len(fig["upstream"]) == 2 and min(fig["upstream"]) >= 0


def test_an_operation_upstream_lacks_stops_it_with_its_message():
    """An ALU MOV (avta's extension) is upstream's fatal "Unknown ALU code", reported."""
    cfg = load_config("default")
    executable = build_upstream(VTA_SRC, cfg)
    image = np.zeros(8 * 4096, np.uint8)
    image[:4] = np.frombuffer(codec(cfg).encode_uops([Uop(0, 0, 0)]), np.uint8)
    stream = codec(cfg).encode_program([
        MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, y_size=1, x_size=1, x_stride=1),
        AluInsn(opcode=Opcode.ALU, alu_opcode=AluOp.MOV, uop_bgn=0, uop_end=1, iter_out=1,
                iter_in=1, use_imm=1), finish()])
    with pytest.raises(UpstreamError, match="Unknown ALU code"):
        run_upstream(executable, cfg, image, stream)
