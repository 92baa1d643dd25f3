"""Upstream VTA's C++ behavioral simulator as a reference to measure fsim against: built from
the user's checkout of apache/tvm-vta, unmodified (:mod:`.build`, with avta's stand-ins for the
TVM runtime headers it includes in ``shim/`` and avta's harness ``harness.cpp``), fed avta's
programs with their DRAM addresses rebased (:mod:`.rebase`) and run (:mod:`.run`).
``avta bench upstream-fsim`` (:mod:`avta.sim.bench.upstream_fsim`) uses it."""

from .build import build_upstream
from .rebase import rebase_stream, upstream_alu_ops, upstream_differences
from .run import UpstreamError, run_upstream

__all__ = ["build_upstream", "rebase_stream", "run_upstream", "upstream_alu_ops",
           "upstream_differences", "UpstreamError"]
