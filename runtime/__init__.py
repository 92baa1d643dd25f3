"""Runtime: DRAM allocator, instruction and micro-op stream builder, device API, operators."""
