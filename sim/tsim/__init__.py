"""tsim: the generated Verilog compiled by Verilator with a C++ harness, driven from Python."""
