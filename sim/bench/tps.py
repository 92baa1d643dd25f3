"""``avta bench tps``: the Intel Labs paper's Figure 10 — DRAM traffic of the tiling search.

For each offloaded ResNet-18 layer (C2..C11) the planner's tiling
(:func:`~avta.runtime.ops.conv_plan.plan_conv2d`) and TVM's fallback schedule
(:func:`~avta.runtime.ops.conv_plan.fallback_tiling`: 1×1-pixel tiles of one channel block
each way, weights loaded per task) are each built into the real program of the layer, with a
bias and upstream's requantization; the bytes are that program's exact DRAM counters
(:meth:`~avta.runtime.program.Program.expected_counters`: every LOAD of INP, WGT, ACC and
micro-ops, every STORE), which fsim and tsim count the same. The paper reports the search
moving 20–400x fewer bytes on a 1x32x32 configuration (``wide`` here, the default of this
benchmark).
"""

from avta.isa.registers import BYTE_COUNTERS

__all__ = ["layer_traffic", "tps", "CONFIG"]

#: The paper's 1x32x32 configuration.
CONFIG = "wide"


def _bytes(cfg, shape, tiling):
    from avta.runtime.ops.conv2d import Conv2dBuffers, build_conv2d
    from avta.runtime.ops.requant import Requant
    program = build_conv2d(cfg, shape, Conv2dBuffers(0, 0, 0, 0), requant=Requant(8, (0, 127)),
                           tiling=tiling, bias_bound=1 << 14)
    counters = program.expected_counters()
    return {name: counters[name] for name in BYTE_COUNTERS}


def layer_traffic(cfg, layer):
    """DRAM bytes of one layer (a row of the workload table) under the search and the
    fallback: a dict with the shape, both tilings, both byte counts by counter, and the ratio
    (``None`` for a layer that does not map onto ``cfg``'s blocks)."""
    from avta.runtime.ops.conv_plan import Conv2dShape, fallback_tiling, plan_conv2d
    if layer["cin"] % cfg.block_in or layer["cout"] % cfg.block_out:
        return None
    shape = Conv2dShape(cfg.batch, layer["cin"], layer["h"], layer["w"], layer["cout"],
                        layer["k"], layer["k"], layer["pad"], layer["stride"])
    searched = plan_conv2d(cfg, shape, bias=True)
    fallback = fallback_tiling(cfg, shape, bias=True)
    got = {"searched": _bytes(cfg, shape, searched), "fallback": _bytes(cfg, shape, fallback)}
    total = {k: sum(v.values()) for k, v in got.items()}
    return {"shape": shape, "tilings": {"searched": searched, "fallback": fallback},
            "bytes": got, "total": total, "ratio": total["fallback"] / total["searched"]}


def tps(cfg):
    """Print the table; return {layer name: :func:`layer_traffic` figures}."""
    from avta.runtime.workloads import resnet18_layers
    print(f"Tiling search against TVM's fallback schedule (1x1-pixel tiles, one channel block "
          f"each way, weights per task) on {cfg.name!r} ({cfg.shape_name}): DRAM bytes of each "
          f"ResNet-18 layer's program")
    print(f"{'layer':<6}{'search tile':>22}{'search MB':>11}{'fallback MB':>13}{'ratio':>9}")
    figures = {}
    for name, layer in resnet18_layers().items():
        fig = layer_traffic(cfg, layer)
        if fig is None:
            continue
        figures[name] = fig
        t = fig["tilings"]["searched"]
        tile = f"{t.th}x{t.tw} px {t.tco}x{t.tci} blk"
        print(f"{name:<6}{tile:>22}{fig['total']['searched'] / 1e6:>11.3f}"
              f"{fig['total']['fallback'] / 1e6:>13.3f}{fig['ratio']:>8.1f}x")
    if figures:
        ratios = [f["ratio"] for f in figures.values()]
        print(f"ratio: {min(ratios):.1f}x to {max(ratios):.1f}x (the paper: 20x to 400x)")
    return figures
