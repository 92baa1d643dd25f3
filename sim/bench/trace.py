"""``avta bench trace-overhead``: what tracing costs.

The GEMM-heavy matmul of ``tsim-gemm`` runs on four set-ups: fsim plain and traced (``arch``),
the normal tsim design, and the design with trace ports writing an ``arch`` trace. Printed: the
wall time of the runs alone, tsim's cycles per second, and the size of each trace.
"""

import tempfile
from pathlib import Path

__all__ = ["trace_overhead"]


def _traced(backend, path, mode):
    """Make ``backend.run`` record an ``arch`` trace of every run into ``path``."""
    from .record import record_backend_trace

    def run(insn_addr, insn_count, *, bases=None):
        return record_backend_trace(path, backend, insn_addr, insn_count, mode=mode,
                                    bases=bases)
    backend.run = run
    return backend


def trace_overhead(cfg, *, shape=(64, 256, 256)):
    from avta.runtime.device import Device
    from avta.sim.targets import make_backend

    from .tsim import _gemm_program

    m, k, n = shape
    m = max(m, cfg.batch)
    dram = 8 << 20
    rows = []
    with tempfile.TemporaryDirectory(prefix="avta-bench-") as scratch:
        for name, make, mode in (
                ("fsim", lambda: make_backend(cfg, "fsim", dram), None),
                ("fsim arch trace", lambda: make_backend(cfg, "fsim", dram), "arch"),
                ("tsim", lambda: make_backend(cfg, "tsim", dram, max_cycles=20_000_000), None),
                ("tsim arch trace", lambda: make_backend(cfg, "tsim", dram, trace=True,
                                                         max_cycles=20_000_000), "arch")):
            backend = make()
            path = Path(scratch) / f"{name.replace(' ', '-')}.trace"
            if mode:
                _traced(backend, path, mode)
            dev = Device(cfg, backend)
            _, seconds = _gemm_program(dev, m, k, n)
            result = dev.last_result
            size = path.stat().st_size if mode else 0
            lines = sum(1 for _ in path.open()) if mode else 0
            rows.append((name, seconds, result.cycles, size, lines))
    print(f"trace-overhead on {cfg.name} ({cfg.shape_name}): matmul {m}x{k}x{n}")
    for name, seconds, cycles, size, lines in rows:
        rate = f", {cycles / seconds:,.0f} cycles/s" if name.startswith("tsim") else ""
        trace = f", trace {lines:,} lines, {size / 1e6:.1f} MB" if size else ""
        print(f"  {name:<17} {seconds:7.3f} s{rate}{trace}")
    fsim_ratio = rows[1][1] / rows[0][1]
    tsim_ratio = rows[3][1] / rows[2][1]
    print(f"  tracing costs {fsim_ratio:.2f}x on fsim and {tsim_ratio:.2f}x on tsim")
    return rows
