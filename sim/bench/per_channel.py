"""``avta bench per-channel-resnet18``: what per-channel requantization rows cost on ResNet-18.

Every offloaded ResNet-18 layer (C2..C11) is built twice, as
:func:`~avta.sim.bench.fsim.bench_conv2d_layer` builds it (seeded data and bias): with upstream's
tail ``clip((acc >> 8) + bias, 0, 127)``, and with a per-channel fixed-point requantization
(random Q23 multipliers and shifts, one per output channel, in ACC rows read by SCL, ADD and SHR
with two operands: docs/isa.md §3.4, docs/onnx.md). Both run on fsim, or on tsim, on the
configuration with ``ALU_SCALE: 2`` (a copy named ``NAME-scale24`` unless it has it); per layer
both cycle counts and their ratio, then the totals weighted by how often each layer occurs (the
workload table's ``uses``). Every run must match numpy bit for bit.
"""

__all__ = ["per_channel_resnet18", "scale_config"]


def scale_config(cfg):
    """``cfg`` with ALU SCL of 24 bits (``ALU_SCALE: 2``), renamed ``NAME-scale24``, unless it
    has it already."""
    if cfg.alu_scale == 2:
        return cfg
    return cfg.replace(alu_scale=2, name=f"{cfg.name}-scale24")


def per_channel_resnet18(cfg, target="fsim"):
    """Print the table; return ``(rows, total without, total with, all exact)``, a row being
    ``(name, uses, cycles without, cycles with)``."""
    from avta.runtime.workloads import resnet18_layers
    from avta.sim.targets import make_device

    from .fsim import bench_conv2d_layer
    cfg = scale_config(cfg)
    options = {"max_cycles": 50_000_000} if target == "tsim" else {}
    print(f"ResNet-18 C2..C11 on {cfg.name!r} ({cfg.shape_name}) on {target}: clip((acc >> 8) "
          f"+ bias, 0, 127) against per-channel Q23 multipliers, offsets and shifts in ACC rows")
    print(f"{'layer':<6}{'uses':>5}{'power of two':>14}{'per channel':>13}{'ratio':>9}  exact")
    rows, totals, exact = [], [0, 0], True
    for name, layer in resnet18_layers().items():
        if layer["cin"] % cfg.block_in or layer["cout"] % cfg.block_out:
            continue                        # C1 (3 input channels) stays on the host
        cycles = []
        for per_channel in (False, True):
            fig = bench_conv2d_layer(cfg, layer, repeats=1, per_channel=per_channel,
                                     device=make_device(cfg, target, 16 << 20, **options))
            cycles.append(fig["result"].cycles)
            exact &= fig["exact"]
        uses = layer.get("uses", 1)
        totals = [total + c * uses for total, c in zip(totals, cycles)]
        rows.append((name, uses, *cycles))
        print(f"{name:<6}{uses:>5}{cycles[0]:>14,}{cycles[1]:>13,}{cycles[1] / cycles[0]:>9.3f}"
              f"  {'yes' if exact else 'NO'}")
    print(f"weighted by uses: {totals[0]:,} -> {totals[1]:,} cycles, ratio "
          f"{totals[1] / totals[0]:.4f} ({totals[1] / totals[0] - 1:+.2%})")
    return rows, totals[0], totals[1], exact
