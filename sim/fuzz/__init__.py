"""Random well-formed programs and the fsim-vs-tsim differential fuzzer (``avta fuzz``)."""
