"""``avta bench tsim-resnet18``: where ResNet-18's cycles go on the RTL.

Every offloaded ResNet-18 layer (C2..C11) is built by the runtime exactly as
:func:`~avta.sim.bench.fsim.bench_conv2d_layer` builds it (seeded data, a bias, upstream's
requantization ``clip((acc >> 8) + bias, 0, 127)``) and run on tsim; per layer the cycles, the
MAC-bound cycles (MACs over the ``BATCH × BLOCK_IN × BLOCK_OUT`` MACs per cycle), their ratio,
the GEMM and ALU steps and the tiling, then the totals weighted by how often each layer occurs
in the network (the workload table's ``uses``). Every layer must match numpy bit for bit.
"""

__all__ = ["resnet18_cycles", "mac_bound"]


def mac_bound(cfg, shape):
    """Cycles of ``shape``'s MACs at one GEMM step (``BATCH × BLOCK_IN × BLOCK_OUT`` MACs) per
    cycle."""
    return shape.macs // (cfg.batch * cfg.block_in * cfg.block_out)


def resnet18_cycles(cfg, device_factory):
    """Print the table; return ``(rows, total cycles, total MAC-bound, all exact)`` where each
    row is ``(name, uses, cycles, mac_bound, counters, tiling)``. ``device_factory()`` makes a
    fresh device per layer."""
    from avta.runtime.workloads import resnet18_layers
    from .fsim import bench_conv2d_layer
    print(f"ResNet-18 C2..C11 on {cfg.name!r} ({cfg.shape_name}), clip((acc >> 8) + bias, 0, "
          f"127)")
    print(f"{'layer':<6}{'uses':>5}{'cycles':>12}{'MAC-bound':>12}{'util':>8}{'GEMM steps':>12}"
          f"{'ALU steps':>11}  exact  tiling")
    rows, total, ideal, exact = [], 0, 0, True
    for name, layer in resnet18_layers().items():
        if layer["cin"] % cfg.block_in or layer["cout"] % cfg.block_out:
            continue                        # C1 (3 input channels) stays on the host
        fig = bench_conv2d_layer(cfg, layer, repeats=1, device=device_factory())
        result, uses, bound = fig["result"], layer.get("uses", 1), mac_bound(cfg, fig["shape"])
        total += result.cycles * uses
        ideal += bound * uses
        exact &= fig["exact"]
        rows.append((name, uses, result.cycles, bound, result.counters, fig["tiling"]))
        print(f"{name:<6}{uses:>5}{result.cycles:>12,}{bound:>12,}{bound / result.cycles:>8.1%}"
              f"{result.counters['GEMM_STEPS']:>12,}{result.counters['ALU_STEPS']:>11,}  "
              f"{'yes' if fig['exact'] else 'NO ':<5}  {fig['tiling']}")
    print(f"weighted by uses: {total:,} cycles, MAC-bound {ideal:,}, utilization "
          f"{ideal / total:.1%}")
    return rows, total, ideal, exact
