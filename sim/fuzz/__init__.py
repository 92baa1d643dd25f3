"""Random well-formed programs (:mod:`.program`), their ISA coverage (:mod:`.coverage`) and the
fsim-vs-tsim differential fuzzer (:mod:`.runner`, ``avta fuzz``)."""
