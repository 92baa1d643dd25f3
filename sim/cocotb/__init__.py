"""cocotb on Verilator: the build-cached runner (:mod:`.run`), the slow, independent runtime
backend (:mod:`.backend`) and its simulator-side job (:mod:`.core`)."""
